"""The register: every rule's fingerprint, recorded before the confirmatory run
(`register/<notebook>.yaml`, written by `python -m memlib register`), the confirmatory runs it
replaced (`register/earlier/`), and the check of each result's fingerprint against it.

A register entry is (id, version, fingerprint, registered, reason), plus `same_rule_as: N`
when the entry records the same rule as version N under another fingerprint: one that covers
more (the code and preset values that decide it, where version N's covered its words only),
or, with `moved: true`, the same words, code, constants and preset values read where the
code now lives (a fingerprint names the modules its code sits in). The rule did not change,
so its verdict is version N's, and the report says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.claims.rules import Claim
from memlib.config import SEED_MAX
from memlib.process import atomic_write_bytes
from memlib.tables import save_table

CLAIMS_TABLE = "claims"
ENTRY_KEYS = ("id", "version", "fingerprint")


class DamagedFileError(RuntimeError):
    """A register file or a claims table cannot be read as written: one line naming it."""


def register_path(study: str) -> Path:
    return paths.repo_root() / "register" / f"{STUDIES.get(study, study)}.yaml"


def _shown(path: Path) -> str:
    try:
        return path.relative_to(paths.repo_root()).as_posix()
    except ValueError:
        return str(path)


def read_register(study: str) -> dict:
    """The study's register: confirmatory and pilot seeds, and one entry per registered rule
    version (id, version, fingerprint, registered date, reason). Empty if there is none;
    DamagedFileError if it is not the YAML mapping the register command writes."""
    import yaml

    path = register_path(study)
    if not path.exists():
        return {"seeds": [], "pilot_seeds": [], "claims": []}
    damaged = f"{_shown(path)} is damaged"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as err:
        raise DamagedFileError(f"{damaged}: not UTF-8 text (byte {err.start}); restore it "
                               "from version control") from None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise DamagedFileError(f"{damaged}: not valid YAML ({problem}); restore it from "
                               "version control") from None
    entries = data.get("claims", []) if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and all(k in e for k in ENTRY_KEYS)
            and type(e["version"]) is int for e in entries):
        raise DamagedFileError(f"{damaged}: expected a mapping whose claims are entries with "
                               f"{', '.join(ENTRY_KEYS)} (a whole-number version); restore it "
                               "from version control")
    return data


def registered_versions(study: str) -> dict[str, dict[str, int]]:
    """claim id -> {fingerprint: version} over every registered version."""
    versions: dict[str, dict[str, int]] = {}
    for entry in read_register(study).get("claims", []):
        versions.setdefault(entry["id"], {})[entry["fingerprint"]] = entry["version"]
    return versions


def latest_registration(study: str) -> dict[str, dict]:
    """claim id -> its latest register entry."""
    return _latest(read_register(study))


def _latest(data: Mapping) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for entry in data.get("claims", []):
        if entry["id"] not in latest or entry["version"] > latest[entry["id"]]["version"]:
            latest[entry["id"]] = entry
    return latest


def check_reason(reason: str) -> str:
    if not reason or not reason.strip():
        raise ValueError("a registration needs a reason: --reason 'why the rule is registered'")
    return reason.strip()


def parse_seeds(text: str) -> list[int]:
    """Comma-separated seeds as the configs accept them: integers from 0 to 2**32 - 1, at
    least one, none repeated."""
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"seeds must be comma-separated integers, not {text!r}") from None
    bad = [s for s in seeds if not 0 <= s <= SEED_MAX]
    if bad:
        raise ValueError(f"seed {bad[0]} must be between 0 and {SEED_MAX}")
    if len(set(seeds)) != len(seeds):
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        raise ValueError(f"seeds must be distinct: {', '.join(map(str, repeated))} repeated")
    return seeds


def register(study: str, claims: Sequence[Claim], reason: str, today: str,
             moved: bool = False) -> list[str]:
    """Append a register entry for every claim whose fingerprint differs from its latest
    registration (version 1 for a new claim); return the ids registered. A changed rule
    must keep its earlier versions in `Claim.previous` so the report shows both verdicts;
    a rule registered by its words only whose words did not change is marked `same_rule_as`
    that version, and so is every rule when `moved` says that only where its code (or the
    preset values it reads) lives changed (the registrant's statement, recorded with its
    reason)."""
    import yaml

    reason = check_reason(reason)
    data = read_register(study)
    data.setdefault("claims", [])
    latest = _latest(data)
    added = []
    for claim in claims:
        entry = latest.get(claim.id)
        if entry and entry["fingerprint"] == claim.fingerprint:
            continue
        new = {"id": claim.id, "version": entry["version"] + 1 if entry else 1,
               "fingerprint": claim.fingerprint, "registered": today, "reason": reason}
        if entry and moved:
            new.update(same_rule_as=entry["version"], moved=True)
        elif entry and entry["fingerprint"] == claim.text_fingerprint:
            new["same_rule_as"] = entry.get("same_rule_as", entry["version"])
        data["claims"].append(new)
        added.append(claim.id)
    if added:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        atomic_write_bytes(register_path(study), text.encode())
    return added


def new_confirmatory_run(study: str, seeds: Sequence[int], reason: str, today: str) -> Path:
    """Replace the study's confirmatory seeds by fresh `seeds` for a new confirmatory run
    (the recipe changed, or the run was found unsound), keeping the replaced run visible:
    its verdicts and values (figures/<notebook>/claims.csv at the default scale) are frozen
    under register/earlier/ and listed with `reason` in the register's `earlier_runs`, which
    the report shows beside the new verdicts. Returns the frozen file."""
    import yaml

    reason = check_reason(reason)
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
    table = read_results(current)
    kept = [c for c in ("id", "version", "verdict", "headline", "ours", "note") if c in table]
    frozen.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(frozen, table[kept].to_csv(index=False).encode())
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


def read_results(path: Path) -> pd.DataFrame:
    """A claims table as the notebooks write it; DamagedFileError for a file that is not
    UTF-8 CSV with an id and a verdict on every row (a truncated or overwritten file)."""
    damaged = f"{_shown(path)} is damaged"
    try:
        table = pd.read_csv(path, keep_default_na=False, encoding="utf-8", dtype=str)
    except UnicodeDecodeError as err:
        raise DamagedFileError(f"{damaged}: not UTF-8 text (byte {err.start}); rerun its "
                               "notebook") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DamagedFileError(f"{damaged}: not a CSV table ({str(err).splitlines()[0]}); "
                               "rerun its notebook") from None
    # an empty field reads "", a missing one (a row cut short) NaN
    if (not {"id", "verdict"} <= set(table) or table.isna().any().any()
            or (table[["id", "verdict"]] == "").any().any()):
        raise DamagedFileError(f"{damaged}: a row is cut short or lacks its id or verdict "
                               "(a truncated file?); rerun its notebook")
    return table


def earlier_runs(register: dict) -> list[tuple[str, str, dict[str, str]]]:
    """Each confirmatory run a study's register (`read_register`) lists as replaced: (its
    seeds, why it was replaced, claim id -> verdict)."""
    out = []
    for run in register.get("earlier_runs", []):
        path = paths.repo_root() / run["verdicts"]
        table = read_results(path) if path.exists() else None
        verdicts = {} if table is None else {
            i: f"{verdict} ({version})" for i, verdict, version
            in zip(table["id"], table["verdict"], table["version"], strict=True)}
        out.append((_span(run["seeds"]), run["reason"], verdicts))
    return out


def _version_of(versions: dict[str, int], *fingerprints: str) -> str:
    for fp in fingerprints:
        if fp in versions:
            return f"v{versions[fp]}"
    return "unregistered"


def with_versions(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """Name each row's registered rule version ("v2") from the register; a rule whose
    fingerprint was never registered reads "unregistered", so an unrecorded change shows.
    Earlier versions are found by either fingerprint (one registered by its words only)."""
    data = read_register(study)
    known = _versions(data)
    table = table.copy()
    table["version"] = [_version_of(known.get(i, {}), fp)
                        for i, fp in zip(table["id"], table["fingerprint"])]

    def previous(row) -> str:
        pairs = [p.split("=", 1) for p in str(row["previous"]).split("; ") if "=" in p]
        shown = [f"{_version_of(known.get(row['id'], {}), *fps.split('/'))}: {v}"
                 for fps, v in pairs]
        version = row["version"][1:] if row["version"].startswith("v") else ""
        for earlier, moved in same_rule_chain(data, row["id"], int(version)) if version else ():
            how = "its code or values moved" if moved else "registered by its words only"
            shown.append(f"v{earlier}: the same rule, {how}; same verdict")
        return "; ".join(shown)

    table["previous"] = table.apply(previous, axis=1) if len(table) else []
    return table


def same_rule_chain(data: Mapping, claim_id: str, version: int) -> list[tuple[int, bool]]:
    """(earlier version, whether only its code's place changed) for each earlier version that
    the register records as this very rule, following `same_rule_as` back from `version`."""
    entries = {e["version"]: e for e in data.get("claims", []) if e["id"] == claim_id}
    chain, entry = [], entries.get(version)
    while entry is not None and "same_rule_as" in entry:
        chain.append((entry["same_rule_as"], bool(entry.get("moved"))))
        entry = entries.get(entry["same_rule_as"])
    return chain


def _versions(data: Mapping) -> dict[str, dict[str, int]]:
    versions: dict[str, dict[str, int]] = {}
    for entry in data.get("claims", []):
        versions.setdefault(entry["id"], {})[entry["fingerprint"]] = entry["version"]
    return versions


def check(table: pd.DataFrame, study: str, code: Mapping[str, str] | None = None) -> list[str]:
    """Each row's standing in the register, comparing its fingerprint in the results, in the
    register and (when given: claim id -> fingerprint) in the code: "" when they agree,
    else "unregistered" or "changed since registration: ..." saying which differs."""
    data = read_register(study)
    known, latest = _versions(data), _latest(data)
    out = []
    for claim_id, result_fp in zip(table["id"], table["fingerprint"]):
        versions = known.get(claim_id, {})
        now = (code or {}).get(claim_id)
        if not versions:
            out.append("unregistered")
        elif result_fp not in versions:
            out.append(f"changed since registration: the results' rule {result_fp} is not in "
                       f"the register (latest v{latest[claim_id]['version']})")
        elif now is not None and now != result_fp:
            where = f"v{versions[now]}" if now in versions else "unregistered"
            out.append(f"changed since registration: the code's rule ({where}) differs from "
                       "the one that decided these results; rerun the notebook")
        elif versions[result_fp] != latest[claim_id]["version"]:
            out.append(f"changed since registration: results from v{versions[result_fp]}, the "
                       f"register's latest is v{latest[claim_id]['version']}")
        else:
            out.append("")
    return out


def write(table: pd.DataFrame, study: str, scale: str = DEFAULT_SCALE) -> None:
    save_table(with_versions(table, study), CLAIMS_TABLE, study, scale)
