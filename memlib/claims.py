"""The papers' claims as data, registered before the confirmatory run and checked against it.

A study module declares its claims (statement, the paper's value, the statistic, the rule,
preconditions, synthetic `Cases` that make the rule hold, fail and miss each precondition)
as `Claim` objects. Each rule's defining text has a fingerprint, recorded in the register
(`register/<notebook>.yaml`) before the confirmatory run; a rule changed afterwards gets a
new register entry with its reason and keeps its earlier versions in `Claim.previous`, whose
verdicts the report shows beside the new one. A notebook measures, then calls
`evaluate(CLAIMS, measured)`: each rule sees only its measured value. A verdict is decided
in this order, the same for every study:

1. the value is missing (None): **not run at this scale**;
2. a precondition fails (the model did not memorize, a curve has no peak): **precondition
   failed: <which>**, never "holds";
3. the claim compares conditions and its 95% Student-t interval over replicates does not
   exclude the threshold (or there is one replicate): **within noise**;
4. otherwise the rule decides: **holds** or **does not hold**.

Differences over replicates are `Estimate`s (mean, standard error, n), shown as
"mean ± half-width (n=…)". `collect(scale)` gathers every study's claims into CLAIMS.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.process import atomic_write_bytes
from memlib.tables import save_table

HOLDS, FAILS, NOT_RUN = "holds", "does not hold", "not run at this scale"
WITHIN_NOISE, PRECONDITION = "within noise", "precondition failed"
VERDICTS = (HOLDS, FAILS, WITHIN_NOISE, PRECONDITION, NOT_RUN)
CLAIMS_TABLE = "claims"


LEVEL = 0.95  # two-sided confidence level of every interval over seeds


def t_quantile(n: int) -> float:
    """Student-t quantile for a two-sided LEVEL interval of a mean over n replicates."""
    from scipy.stats import t

    return float(t.ppf(0.5 + LEVEL / 2, n - 1))


@dataclass(frozen=True)
class Estimate:
    """A quantity measured over replicates (seeds, runs, pairs): mean, standard error of the
    mean and replicate count. Its interval is the 95% Student-t interval, mean ± t·SE, which
    with 3 seeds is 4.3 SE wide on each side, not 2."""

    mean: float
    se: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Estimate:
        v = np.asarray(list(values), dtype=float)
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
        return cls(float(v.mean()) if len(v) else math.nan, se, len(v))

    @property
    def half_width(self) -> float:
        """Half the width of the 95% t interval (nan for fewer than two replicates)."""
        return t_quantile(self.n) * self.se if self.n >= 2 else math.nan

    @property
    def beyond_noise(self) -> bool:
        """The 95% t interval excludes zero (one replicate has no spread to compare with)."""
        return self.n >= 2 and not math.isnan(self.se) and abs(self.mean) > self.half_width

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.4g} (n=1)"
        return f"{self.mean:.4g} ± {self.half_width:.2g} (n={self.n})"


def paired(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """Estimate of a - b over seeds, paired seed by seed."""
    if len(a) != len(b):
        raise ValueError(f"paired difference of {len(a)} and {len(b)} seeds")
    return Estimate.of(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


def margin(estimate: Estimate, threshold: float, at_least: bool = True) -> Estimate:
    """How far `estimate` clears a threshold (positive: it passes), with the same spread:
    mean - threshold for "at least", threshold - mean for "at most"."""
    mean = estimate.mean - threshold if at_least else threshold - estimate.mean
    return Estimate(mean, estimate.se, estimate.n)


def every_beyond_noise(margins: Iterable[Estimate]) -> bool:
    """Noise rule for "every test passes" (margins as from `margin`): decided when every
    margin exceeds its spread, or when one that fails does (one clear failure settles it)."""
    margins = list(margins)
    return bool(margins) and (all(m.beyond_noise for m in margins)
                              or any(m.beyond_noise and m.mean < 0 for m in margins))


def some_beyond_noise(margins: Iterable[Estimate]) -> bool:
    """Noise rule for "at least one test passes": decided when one passing margin exceeds its
    spread, or when every margin does."""
    margins = list(margins)
    return bool(margins) and (all(m.beyond_noise for m in margins)
                              or any(m.beyond_noise and m.mean > 0 for m in margins))


Margins = Callable[[Any], Iterable[Estimate]]


def all_of(margins: Margins) -> dict[str, Callable[[Any], bool]]:
    """`holds` and `beyond_noise` of a Claim whose rule is "every threshold test passes";
    `margins(value)` gives each test's margin (see `margin`)."""
    return {"holds": lambda v: all(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: every_beyond_noise(margins(v))}


def any_of(margins: Margins) -> dict[str, Callable[[Any], bool]]:
    """`holds` and `beyond_noise` of a Claim whose rule is "at least one test passes"."""
    return {"holds": lambda v: any(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: some_beyond_noise(margins(v))}


def estimates(value: Any) -> list[Estimate]:
    """Every Estimate inside a measured value (nested dicts and lists)."""
    if isinstance(value, Estimate):
        return [value]
    if isinstance(value, Mapping):
        return [e for v in value.values() for e in estimates(v)]
    if isinstance(value, (list, tuple)):
        return [e for v in value for e in estimates(v)]
    return []


def all_beyond_noise(value: Any) -> bool:
    """The default noise rule: every Estimate in the value exceeds its spread."""
    return all(e.beyond_noise for e in estimates(value))


@dataclass(frozen=True)
class Cases:
    """Synthetic measured values that exercise a rule, so that no rule passes by construction:
    one where the claim holds, one where it is false beyond noise, and for each precondition
    (by name) one that fails exactly that precondition and none before it."""

    holds: Any
    fails: Any
    preconditions: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str  # what the paper says, in its own terms
    paper: str  # the paper's number or setting, "qualitative" if it gives none
    measure: str  # the statistic, its unit of replication and how our run measures it
    rule: str  # the rule for "holds", in words, with its threshold and direction
    holds: Callable[[Any], bool]  # the same rule, as code
    # (name, test) pairs checked on the measured value before the rule; the first failing
    # one names the verdict "precondition failed: <name>"
    preconditions: tuple[tuple[str, Callable[[Any], bool]], ...] = field(default=())
    # True when the value's difference exceeds its interval; by default every Estimate in the
    # value must (a value without Estimates is not a comparison over replicates)
    beyond_noise: Callable[[Any], bool] = all_beyond_noise
    cases: Cases | None = None  # required: the every-rule-can-fail test reads them
    unit: str = ""  # unit of the headline number ("points", "AUROC", "Spearman ρ", "×")
    # the one number a reader sees first (an Estimate, a float or a short string); by
    # default the first Estimate in the value
    headline: Callable[[Any], Any] | None = None
    caveat: str = ""  # one line a reader needs beside the verdict
    where: str = ""  # the figure or table of the notebook that shows it (file stem)
    scope: str = "paper"  # "paper": a paper's claim; "ours": memlib's own question
    # earlier registered versions of this rule, evaluated beside it so a change stays visible
    previous: tuple[Claim, ...] = ()

    @property
    def fingerprint(self) -> str:
        """Hash of everything that defines the rule; registered before the confirmatory run."""
        return fingerprint(self)


def fingerprint(claim: Claim) -> str:
    fields = {"id": claim.id, "statement": claim.statement, "paper": claim.paper,
              "measure": claim.measure, "rule": claim.rule, "unit": claim.unit,
              "scope": claim.scope, "preconditions": [name for name, _ in claim.preconditions]}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def describe(value: Any) -> str:
    """Short human-readable rendering of a measured value."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Estimate):
        return str(value)
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}=({describe(v)})" if isinstance(v, Mapping) else
                         f"{k}={describe(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return str(value)


def headline(claim: Claim, value: Any) -> str:
    """The one number shown first, with its unit."""
    if value is None:
        return ""
    shown = claim.headline(value) if claim.headline else next(iter(estimates(value)), None)
    if shown is None:
        return ""
    text = describe(shown)
    return f"{text} {claim.unit}".strip() if claim.unit else text


def verdict(claim: Claim, value: Any) -> str:
    if value is None:
        return NOT_RUN
    for name, test in claim.preconditions:
        if not test(value):
            return f"{PRECONDITION}: {name}"
    if not claim.beyond_noise(value):
        return WITHIN_NOISE
    return HOLDS if bool(claim.holds(value)) else FAILS


def evaluate(claims: Sequence[Claim], measured: Mapping[str, Any]) -> pd.DataFrame:
    """One row per claim: its rule and fingerprint, ours (headline and every value), the
    verdict, and the verdict under each earlier registered version of the rule."""
    unknown = set(measured) - {c.id for c in claims}
    if unknown:
        raise KeyError(f"measured values for undeclared claims: {sorted(unknown)}")
    rows = []
    for claim in claims:
        value = measured.get(claim.id)
        rule = claim.rule
        if claim.preconditions:
            rule += "; requires " + ", ".join(name for name, _ in claim.preconditions)
        rows.append({"id": claim.id, "scope": claim.scope, "statement": claim.statement,
                     "paper": claim.paper, "measure": claim.measure, "rule": rule,
                     "fingerprint": claim.fingerprint, "headline": headline(claim, value),
                     "ours": "" if value is None else describe(value),
                     "verdict": verdict(claim, value), "caveat": claim.caveat,
                     "where": claim.where,
                     "previous": "; ".join(f"{old.fingerprint}={verdict(old, value)}"
                                           for old in claim.previous)})
    return pd.DataFrame(rows)


# ---- the register: every rule's fingerprint, recorded before the confirmatory run -------

def register_path(study: str) -> Path:
    return paths.repo_root() / "register" / f"{STUDIES.get(study, study)}.yaml"


def read_register(study: str) -> dict:
    """The study's register: confirmatory and pilot seeds, and one entry per registered rule
    version (id, version, fingerprint, registered date, reason)."""
    import yaml

    path = register_path(study)
    if not path.exists():
        return {"seeds": [], "pilot_seeds": [], "claims": []}
    return yaml.safe_load(path.read_text()) or {}


def registered_versions(study: str) -> dict[str, dict[str, int]]:
    """claim id -> {fingerprint: version} over every registered version."""
    versions: dict[str, dict[str, int]] = {}
    for entry in read_register(study).get("claims", []):
        versions.setdefault(entry["id"], {})[entry["fingerprint"]] = entry["version"]
    return versions


def latest_registration(study: str) -> dict[str, dict]:
    """claim id -> its latest register entry."""
    latest: dict[str, dict] = {}
    for entry in read_register(study).get("claims", []):
        if entry["id"] not in latest or entry["version"] > latest[entry["id"]]["version"]:
            latest[entry["id"]] = entry
    return latest


def register(study: str, claims: Sequence[Claim], reason: str, today: str) -> list[str]:
    """Append a register entry for every claim whose fingerprint differs from its latest
    registration (version 1 for a new claim); return the ids registered. A changed rule
    must keep its earlier versions in `Claim.previous` so the report shows both verdicts."""
    import yaml

    if not reason.strip():
        raise ValueError("a registration needs a reason")
    data = read_register(study)
    data.setdefault("claims", [])
    latest = latest_registration(study)
    added = []
    for claim in claims:
        entry = latest.get(claim.id)
        if entry and entry["fingerprint"] == claim.fingerprint:
            continue
        data["claims"].append({"id": claim.id, "version": entry["version"] + 1 if entry else 1,
                               "fingerprint": claim.fingerprint, "registered": today,
                               "reason": reason})
        added.append(claim.id)
    if added:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        atomic_write_bytes(register_path(study), text.encode())
    return added


def new_confirmatory_run(study: str, seeds: Sequence[int], reason: str, today: str) -> Path:
    """Replace the study's confirmatory seeds by fresh `seeds` for a new confirmatory run
    (the recipe changed, or the run was found unsound), keeping the replaced run visible:
    its verdicts (figures/<notebook>/claims.csv at the default scale) are frozen under
    register/earlier/ and listed with `reason` in the register's `earlier_runs`, which the
    report shows beside the new verdicts. Returns the frozen file."""
    import yaml

    if not reason.strip():
        raise ValueError("a new confirmatory run needs a reason")
    data = read_register(study)
    notebook = STUDIES.get(study, study)
    used = {int(s) for run in data.get("earlier_runs", []) for s in run["seeds"]}
    used |= {int(s) for s in [*data.get("seeds", []), *data.get("pilot_seeds", [])]}
    if not seeds or used & {int(s) for s in seeds}:
        raise ValueError(f"the new seeds must be fresh: {sorted(used & set(seeds))} were used")
    current = paths.figures_dir(notebook, DEFAULT_SCALE) / f"{CLAIMS_TABLE}.csv"
    if not current.exists():
        raise ValueError(f"no verdicts to keep: {current} is missing")
    old = [int(s) for s in data["seeds"]]
    frozen = register_path(study).parent / "earlier" / f"{notebook}-seeds-{_span(old)}.csv"
    table = pd.read_csv(current, keep_default_na=False)[["id", "version", "verdict"]]
    frozen.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(frozen, table.to_csv(index=False).encode())
    data.setdefault("earlier_runs", []).append({
        "seeds": old, "replaced": today, "reason": reason,
        "verdicts": frozen.relative_to(paths.repo_root()).as_posix()})
    data["seeds"] = [int(s) for s in seeds]
    ordered = {k: data[k] for k in ("seeds", "pilot_seeds", "earlier_runs", "claims")
               if k in data}
    text = yaml.safe_dump({**ordered, **data}, sort_keys=False, allow_unicode=True, width=100)
    atomic_write_bytes(register_path(study), text.encode())
    return frozen


def _span(seeds: Sequence[int]) -> str:
    """100-102 for consecutive seeds, else 100,105."""
    seeds = sorted(int(s) for s in seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 1:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def earlier_runs(register: dict) -> list[tuple[str, str, dict[str, str]]]:
    """Each confirmatory run a study's register (`read_register`) lists as replaced: (its
    seeds, why it was replaced, claim id -> verdict)."""
    out = []
    for run in register.get("earlier_runs", []):
        path = paths.repo_root() / run["verdicts"]
        table = pd.read_csv(path, keep_default_na=False) if path.exists() else None
        verdicts = {} if table is None else {
            i: f"{verdict} ({version})" for i, verdict, version
            in zip(table["id"], table["verdict"], table["version"], strict=True)}
        out.append((_span(run["seeds"]), run["reason"], verdicts))
    return out


def _version_of(versions: dict[str, int], fp: str) -> str:
    return f"v{versions[fp]}" if fp in versions else "unregistered"


def with_versions(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """Name each row's registered rule version ("v2") from the register; a rule whose
    fingerprint was never registered reads "unregistered", so an unrecorded change shows."""
    known = registered_versions(study)
    table = table.copy()
    table["version"] = [_version_of(known.get(i, {}), fp)
                        for i, fp in zip(table["id"], table["fingerprint"])]

    def previous(row) -> str:
        pairs = [p.split("=", 1) for p in str(row["previous"]).split("; ") if "=" in p]
        return "; ".join(f"{_version_of(known.get(row['id'], {}), fp)}: {v}" for fp, v in pairs)

    table["previous"] = table.apply(previous, axis=1) if len(table) else []
    return table


def write(table: pd.DataFrame, study: str, scale: str = DEFAULT_SCALE) -> None:
    save_table(with_versions(table, study), CLAIMS_TABLE, study, scale)


# ---- the report ------------------------------------------------------------------------

def counts(table: pd.DataFrame) -> str:
    kinds = table["verdict"].str.split(":").str[0].value_counts()
    return ", ".join(f"{kinds.get(v, 0)} {v}" for v in VERDICTS)



def decided_by_interval(table: pd.DataFrame) -> int:
    """Rows whose verdict the interval decided (holds, does not hold or within noise)."""
    kinds = table["verdict"].str.split(":").str[0]
    return int(kinds.isin([HOLDS, FAILS, WITHIN_NOISE]).sum())


def pilot_verdicts(study: str) -> dict[str, str]:
    """The pilot's verdicts (seeds 0-2, the rules as they were before registration)."""
    path = paths.repo_root() / "register" / "pilot" / f"{STUDIES.get(study, study)}.csv"
    if not path.exists():
        return {}
    pilot = pd.read_csv(path, keep_default_na=False)
    return dict(zip(pilot["id"], pilot["verdict"]))


def _cell(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- the report's cells: what a reader sees in one row --------------------------------------

VERDICT_CSS = {HOLDS: "holds", FAILS: "fails", WITHIN_NOISE: "noise",
               PRECONDITION: "precondition", NOT_RUN: "notrun"}


def verdict_cell(verdict: str) -> str:
    """The verdict's kind alone, coloured by the book's style sheet (a code host shows the
    word); the reason of a failed precondition goes to the note."""
    kind = verdict.split(":")[0].strip()
    return f'<span class="verdict verdict-{VERDICT_CSS.get(kind, "notrun")}">{kind}</span>'


def claim_dataset(claim_id: str, ours: str) -> str:
    """The dataset a claim was judged on, as its measured values (`data=…`) or its id name
    it; "" when neither does."""
    named = re.search(r"\bdata=([\w-]+)", ours or "")
    if named:
        return named.group(1)
    suffix = re.search(r"_(fashion_mnist|mnist-5k|mnist|cifar100|cifar10)$", claim_id)
    return suffix.group(1) if suffix else ""


def claim_cell(row) -> str:
    """The paper's statement, with the dataset when the claim is judged once per dataset."""
    dataset = claim_dataset(row.id, row.ours)
    return _cell(row.statement) + (f" (data: {dataset})" if dataset else "")


def note_cell(row, notebook: str, scale: str) -> str:
    """The reason of a failed precondition and the caveat (each capped), then a link to the
    figure or table that shows the claim, never cut."""
    reason = row.verdict.partition(":")[2].strip()
    note = " ".join(_cell(text) for text in (reason, row.caveat) if text)
    shown = [f"{row.where}{ext}" for ext in (".png", ".md")
             if row.where and (paths.figures_dir(notebook, scale) / f"{row.where}{ext}"
                               ).exists()]
    if shown:  # relative to CLAIMS.md, which sits beside the notebooks' folders
        note = f"{note} [{row.where}]({notebook}/{shown[0]})".strip()
    return note


def _section(study: str, table: pd.DataFrame, scale: str) -> str:
    pilot = pilot_verdicts(study) if scale == DEFAULT_SCALE else {}
    # the register speaks of the default scale's confirmatory run only
    reg = read_register(study) if scale == DEFAULT_SCALE else {}
    notebook = STUDIES.get(study, study)
    lines = ["| verdict | claim | paper | ours | note |", "|---|---|---|---|---|"]
    for row in table.itertuples():
        lines.append("| " + " | ".join((
            verdict_cell(row.verdict), claim_cell(row),
            _cell(row.paper or "qualitative"), _cell(row.headline),
            note_cell(row, notebook, scale))) + " |")
    earlier = earlier_runs(reg)
    pilot_seeds = _span(reg.get("pilot_seeds", []))
    details = ["| id | rule version | pilot" + (f" (seeds {pilot_seeds})" if pilot_seeds else "")
               + " | "
               + "".join(f"earlier run (seeds {seeds}) | " for seeds, _, _ in earlier)
               + "earlier versions |", "|---|---|---|" + "---|" * len(earlier) + "---|"]
    for row in table.itertuples():
        details.append("| " + " | ".join(_cell(c) for c in (
            row.id, f"{row.version} ({row.fingerprint})", pilot.get(row.id, "—"),
            *(verdicts.get(row.id, "—") for _, _, verdicts in earlier),
            row.previous or "—")) + " |")
    seeds = reg.get("seeds", [])
    runs = "".join(f" It replaces an earlier confirmatory run on seeds {span}, whose verdicts "
                   f"stay in the details: {reason.rstrip('.')}." for span, reason, _ in earlier)
    heading = (f"Confirmatory seeds {_span(seeds)}.{runs}\n\n" if seeds else "")
    rules = "\n".join(f"- **{row.id}**: measure: {row.measure}. Rule: {row.rule}. "
                      f"Ours: {row.ours or 'not run'}." for row in table.itertuples())
    return (f"**{counts(table)}.**\n\n{heading}" + "\n".join(lines)
            + "\n\n<details><summary>Rule versions, pilot and earlier verdicts, rules and every "
            "measured value</summary>\n\n" + "\n".join(details)
            + "\n\n" + rules + "\n\n</details>\n")


def collect(scale: str = DEFAULT_SCALE) -> str:
    """Write CLAIMS.md from every study's claims.csv at `scale`; return its text."""
    sections, tables = [], []
    for key, study in STUDIES.items():
        csv = paths.figures_dir(study, scale) / f"{CLAIMS_TABLE}.csv"
        if not csv.exists():
            sections.append(f"## {study}\n\nNo results yet: run `make figures SCALE={scale}`.\n")
            continue
        table = pd.read_csv(csv, keep_default_na=False)
        for column in ("scope", "headline", "caveat", "where", "previous", "version",
                       "fingerprint"):
            if column not in table:
                table[column] = "paper" if column == "scope" else ""
        tables.append(table)
        sections.append(f"## {study}\n\n{_section(key, table, scale)}")
    everything = pd.concat(tables) if tables else pd.DataFrame(columns=["verdict", "scope"])
    papers = everything[everything["scope"] == "paper"]
    ours = everything[everything["scope"] != "paper"]
    decided = decided_by_interval(everything)
    chance = (1 - LEVEL) / 2 * decided
    summary_lines = [f"- **The papers' claims ({len(papers)}):** {counts(papers)}."]
    if len(ours):
        summary_lines.append(f"- **memlib's own questions ({len(ours)}):** {counts(ours)}.")
    text = (
        f"# Claims report ({scale} scale)\n\n"
        "Generated by `make figures` from the notebooks' runs; do not edit by hand. Each row "
        "is one claim: the verdict first, then the paper's statement, the paper's value, our "
        "headline number and a note with the figure that shows it. Every rule was registered "
        "(`register/`, with a fingerprint) before the confirmatory run on seeds never used "
        "while the rules were designed; the pilot's verdicts (seeds 0-2) and any earlier rule "
        "version stay visible in each section's details.\n\n"
        "A verdict is, in this order: *not run at this scale*; *precondition failed* when what "
        "the rule presupposes did not happen (the model did not memorize, a curve has no "
        f"peak); *within noise* when the {LEVEL:.0%} Student-t interval over replicates "
        "(shown as mean ± half-width, n replicates) does not exclude the rule's threshold; "
        "otherwise *holds* or *does not hold*.\n\n"
        + "\n".join(summary_lines) + "\n\n"
        f"{decided} rows were decided by an interval; if none of their effects existed, about "
        f"{chance:.1f} of them would still read *holds* by chance alone (each interval errs "
        f"in that direction {(1 - LEVEL) / 2:.1%} of the time).\n\n" + "\n".join(sections)
    )
    atomic_write_bytes(paths.claims_report(scale), text.encode())
    return text
