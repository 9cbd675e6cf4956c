"""The claims report, figures/CLAIMS.md: every study's claims.csv at a scale, each row checked
against the register, with the pilot's verdicts, earlier rule versions and replaced runs."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.claims.register import (
    CLAIMS_TABLE,
    DamagedFileError,
    _versions,
    anchor_line,
    check,
    earlier_runs,
    pending_seeds,
    published_seeds,
    read_register,
    read_results,
    recorded_anchors,
    register_path,
    same_rule_chain,
    seed_span,
    verify_register,
)
from memlib.claims.rules import (
    FAILS,
    HOLDS,
    MIN_REPLICATES,
    NO_EFFECT,
    NOT_RUN,
    PRECONDITION,
    SMALLER,
    VERDICTS,
    WITHIN_NOISE,
    WOULD_READ,
    delta_mark,
    qualifier,
    verdict_kind,
)
from memlib.claims.stats import ALPHA, EQUIVALENCE_LEVEL, LEVEL, MAX_REPLICATES, P_LEVEL
from memlib.process import atomic_write_bytes
from memlib.tables import measured, readable_row

# columns a claims table written before a column existed lacks, with what they read as (a
# p-value "n/a": decided by an interval before p-values were recorded)
NOT_COMPUTED = "(not computed by this run)"
OPTIONAL = {"scope": "paper", "headline": "", "caveat": "", "where": "", "previous": "",
            "version": "", "fingerprint": "", "note": "", "p": "n/a", "holm": "", "dataset": "",
            "p_holm": NOT_COMPUTED, "replicates": NOT_COMPUTED, "delta": NOT_COMPUTED}
CodeFingerprints = Callable[[str], Mapping[str, str]]


def counts(table: pd.DataFrame) -> str:
    """How many rows read each verdict; a relabelled row under the verdict of the run that
    judged it (`counted`, when the table has it). The holds name how many of them are
    smaller than δ; the does-not-holds are counted apart: contrary results (the interval
    beyond the threshold on the wrong side) and equivalence verdicts (no effect as large as
    δ)."""
    column = "counted" if "counted" in table else "verdict"
    verdicts = table[column].astype(str)
    kinds, qualified = verdicts.map(verdict_kind), verdicts.map(qualifier)
    found = kinds.value_counts()
    smaller = int(((kinds == HOLDS) & qualified.str.startswith(SMALLER)).sum())
    equivalent = int(((kinds == FAILS) & qualified.str.startswith(NO_EFFECT)).sum())
    shown = {HOLDS: f"{found.get(HOLDS, 0)} {HOLDS} ({smaller} of them {SMALLER})",
             FAILS: f"{found.get(FAILS, 0) - equivalent} {FAILS} (contrary: the interval on "
                    f"the wrong side), {equivalent} {NO_EFFECT}"}
    return ", ".join(shown.get(v, f"{found.get(v, 0)} {v}") for v in VERDICTS)


def _by_interval(table: pd.DataFrame, column: str = "verdict") -> pd.Series:
    """Which rows an interval decided, by `column`'s verdict: holds or does not hold, with
    the p-value of that interval (a rule settled by a test outside its margins has none)."""
    kinds = table[column].astype(str).str.split(":").str[0]
    has_p = table["p"].astype(str).str.strip() != "" if "p" in table else True
    return kinds.isin([HOLDS, FAILS]) & has_p


def decided_by_interval(table: pd.DataFrame) -> int:
    """How many rows an interval decided (holds or does not hold, with its p-value)."""
    return int(_by_interval(table).sum())


def tested_rows(table: pd.DataFrame) -> int:
    """How many rows were tested: a p-value, whatever the verdict (a table written before
    p-values were recorded: the decided rows, the only ones it tested)."""
    if not len(table):
        return 0
    p = table["p"].astype(str).str.strip()
    return int(((p != "") & (p != "n/a")).sum() + ((p == "n/a") & _by_interval(table)).sum())


def kept_by_holm(table: pd.DataFrame, column: str = "holm") -> int:
    """How many of the rows an interval decided stay decided after Holm's adjustment (the
    study's, or the report's with `column` "holm_report")."""
    return int((_by_interval(table) & _by_interval(table, column)).sum()) if len(table) else 0


def _printed_p(table: pd.DataFrame) -> list[float]:
    """Each row's p as the table prints it (nan where it has none)."""
    out = []
    for text in table["p"].astype(str):
        try:
            out.append(float(text))
        except ValueError:
            out.append(float("nan"))
    return out


def report_holm(tables: Sequence[pd.DataFrame], registers: Sequence[Mapping]
                ) -> tuple[list[pd.DataFrame], int]:
    """Holm's adjustment over the whole report: every study's family together (the family
    its register fixed, a member without a p and one its table lacks as p = 1; else every
    row it tested), on the p as each table prints them, so that a reader recomputes it from
    the tables. Each table gains `p_holm_report` and `holm_report` (a row outside every
    family: its `holm`); returns them with the family's size."""
    from memlib.claims.rules import holm_adjusted, holm_verdicts

    p, members, absent = [], [], 0
    for table, reg in zip(tables, registers, strict=True):
        own = _printed_p(table)
        family = reg.get("family")
        p += own
        members += ([i in family for i in table["id"]] if family is not None
                    else [q == q for q in own])  # q == q: not nan
        absent += len(set(family) - set(table["id"])) if family is not None else 0
    verdicts = [v for table in tables for v in table["verdict"]]
    adjusted = holm_adjusted(p, members, absent)
    after = holm_verdicts(verdicts, p, members, absent)
    out, start = [], 0
    for table in tables:
        stop = start + len(table)
        table = table.copy()
        table["p_holm_report"] = ["" if q != q or own != own else f"{q:.3g}" for q, own
                                  in zip(adjusted[start:stop], p[start:stop], strict=True)]
        table["holm_report"] = [a if inside else h for a, inside, h in zip(
            after[start:stop], members[start:stop], table["holm"], strict=True)]
        out.append(table)
        start = stop
    return out, sum(members) + absent


def pilot_verdicts(study: str) -> dict[str, str]:
    """The pilot's verdicts (seeds 0-2, the rules as they were before registration)."""
    path = paths.repo_root() / "register" / "pilot" / f"{STUDIES.get(study, study)}.csv"
    if not path.exists():
        return {}
    pilot = read_results(path)
    return dict(zip(pilot["id"], pilot["verdict"]))


# what would open HTML in Markdown: a tag, a closing tag, a comment or a declaration
_MARKUP = re.compile(r"<(?=[A-Za-z/!?])")


def escaped(text: str) -> str:
    """`text` with every `<` that could open HTML written as `&lt;`, so that a note, a
    statement or a value reads as text in CLAIMS.md and the book, never as markup (a `<`
    before a space or a digit, as in "p < 0.05", is text already and stays)."""
    return _MARKUP.sub("&lt;", str(text))


def _cell(text: str, limit: int = 10_000) -> str:
    text = escaped(" ".join(str(text).split()).replace("|", "\\|"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- the report's cells: what a reader sees in one row --------------------------------------

VERDICT_CSS = {HOLDS: "holds", FAILS: "fails", WITHIN_NOISE: "noise",
               PRECONDITION: "precondition", NOT_RUN: "notrun"}


def verdict_cell(verdict: str) -> str:
    """The verdict's kind, coloured by the book's style sheet (a code host shows the word),
    with what δ says of it ("smaller than δ", "no effect as large as δ"); the rest of its
    qualifier (δ's size, a failed precondition and what the rule alone would read, the n a
    row needs) goes to the note."""
    kind, mark = verdict_kind(verdict), delta_mark(verdict)
    return (f'<span class="verdict verdict-{VERDICT_CSS.get(kind, "notrun")}">'
            f"{escaped(kind)}</span>" + (f" ({mark})" if mark else ""))


def short_verdict(verdict: str) -> str:
    """A verdict's kind with what δ says of it ("holds (smaller than δ)"), its qualifier
    left to the note the row already shows."""
    mark = delta_mark(verdict)
    return verdict_kind(verdict) + (f" ({mark})" if mark else "") if verdict else ""


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
    dataset = getattr(row, "dataset", "") or claim_dataset(row.id, row.ours)
    return _cell(row.statement, limit=10_000) + (f" (data: {dataset})" if dataset else "")


def note_cell(row, notebook: str, scale: str) -> str:
    """Why the row was not decided (a failed precondition, too few or too noisy replicates)
    and the caveat, each capped, then a link to the figure that shows it, never cut (a cut
    link would show as text)."""
    reason = row.verdict.partition(":")[2].strip()
    # never cut: the reason a row was not decided is what a reader looks for
    note = " ".join(_cell(text, limit=10_000) for text in (reason, getattr(row, "note", ""),
                                                          row.caveat) if text)
    shown = [f"{row.where}{ext}" for ext in (".png", ".md")
             if row.where and (paths.figures_dir(notebook, scale) / f"{row.where}{ext}"
                               ).exists()]
    if shown:  # relative to CLAIMS.md, which sits beside the notebooks' folders
        note = f"{note} [{row.where}]({notebook}/{shown[0]})".strip()
    return note


class MissingRowsError(DamagedFileError):
    """A claims table lacks rows for some of the study's registered claims."""


def _require_rows(table: pd.DataFrame, study: str, code: Mapping[str, str] | None) -> None:
    """MissingRowsError naming the study and the ids when its claims table lacks a row for
    a registered claim the code still declares. Without the code's claims nothing is
    checked: the register also names claims the study has since retired."""
    if code is None:
        return
    expected = set(latest_registration_of(study)) & set(code)
    missing = sorted(expected - set(table["id"]))
    if missing:
        raise MissingRowsError(
            f"{STUDIES.get(study, study)}/{CLAIMS_TABLE}.csv has no row for {len(missing)} of "
            f"the study's {len(expected)} registered claims ({', '.join(missing)}); rerun "
            "its notebook")


def latest_registration_of(study: str) -> dict[str, dict]:
    from memlib.claims.register import _latest

    return _latest(read_register(study))


def _with_register(table: pd.DataFrame, study: str, code: Mapping[str, str] | None
                   ) -> pd.DataFrame:
    """The table with its versions read again from the register (never trusted from the
    results) and each row's register check."""
    known = _versions(read_register(study))
    table = table.copy()
    table["version"] = [f"v{known[i][fp]}" if fp in known.get(i, {}) else "unregistered"
                        for i, fp in zip(table["id"], table["fingerprint"])]
    table["register"] = check(table, study, code)
    return table


_PREVIOUS = re.compile(r"v(\d+): (.*?)(?=; v\d+: |$)")


def run_date(register: Mapping) -> str:
    """The date the current confirmatory seeds were registered ("" when unknown)."""
    runs = register.get("earlier_runs") or []
    return str(register.get("seeds_registered") or (runs[-1]["replaced"] if runs else ""))


def judged_by_run(table: pd.DataFrame, register: Mapping) -> list[str]:
    """Each row's verdict as the confirmatory run judged it: a row whose rule version was
    registered after the run's seeds (relabelled afterwards, on the same values) counts
    under the verdict of the version the run was registered with, read from the row's
    earlier versions, the new label beside; "" for the rows not relabelled."""
    from memlib.claims.register import same_rule_chain

    when = run_date(register)
    entries = register.get("claims") or []
    out = []
    for row in table.itertuples():
        version = str(getattr(row, "version", ""))
        before = [e["version"] for e in entries
                  if e["id"] == row.id and when and str(e.get("registered", "")) <= when]
        if not version.startswith("v") or not before:
            out.append("")
            continue
        now = int(version[1:])
        judged = max(before)
        if judged == now or judged in {v for v, _ in same_rule_chain(register, row.id, now)}:
            out.append("")
            continue
        shown = dict(_PREVIOUS.findall(str(row.previous)))
        names = [judged, *(v for v, _ in same_rule_chain(register, row.id, judged))]
        verdict = next((shown[str(v)] for v in names if str(v) in shown
                        and not shown[str(v)].startswith("the same rule")), "")
        out.append(verdict)
    return out


def _runs_disagree(current: str, others: list[str]) -> str:
    """"runs disagree" when one run's verdict holds and another's does not hold (each
    decided beyond noise), else ""."""
    kinds = {v.split(":")[0].split(" (v")[0].strip() for v in (current, *others) if v}
    return "runs disagree beyond noise" if {HOLDS, FAILS} <= kinds else ""


def _p_cell(row) -> str:
    p, adjusted = escaped(getattr(row, "p", "")), escaped(getattr(row, "p_holm", ""))
    if p in ("", "n/a"):
        return "—"
    report = escaped(getattr(row, "p_holm_report", ""))
    report = f"; report {report}" if report else ""
    return f"{p} (Holm {adjusted}{report})" if adjusted and adjusted != NOT_COMPUTED else \
        f"{p} (Holm {NOT_COMPUTED}{report})"


def _section(study: str, table: pd.DataFrame, scale: str) -> str:
    pilot = pilot_verdicts(study) if scale == DEFAULT_SCALE else {}
    # the register speaks of the default scale's confirmatory run only
    reg = read_register(study) if scale == DEFAULT_SCALE else {}
    notebook = STUDIES.get(study, study)
    lines = ["| verdict | within study (Holm) | claim | paper | ours | p (Holm-adjusted: within "
             "study; over the report) | note | earlier rounds, each by its own rule |",
             "|---|---|---|---|---|---|---|---|"]
    rounds = round_verdicts(reg)
    for row in table.itertuples():
        ours = _cell(row.headline)
        if row.replicates and row.replicates != NOT_COMPUTED:
            ours += f" · {_cell(row.replicates)}"
        note = note_cell(row, notebook, scale)
        if row.judged_by_run:
            note = (f"counted as the run judged it: {_cell(row.judged_by_run)} (relabelled "
                    f"since: {_cell(row.verdict)}). {note}")
        if row.delta and row.delta != NOT_COMPUTED:
            note += f" δ = {_cell(row.delta)}."
        lines.append(readable_row("| " + " | ".join((
            verdict_cell(row.counted), _cell(short_verdict(row.holm) or "—"), claim_cell(row),
            _cell(row.paper or "qualitative"), ours, _p_cell(row), note.strip(),
            _cell(round_history(row.id, str(row.version), reg, rounds)))) + " |"))
    earlier = earlier_runs(reg)
    pilot_seeds = seed_span(reg.get("pilot_seeds", []))
    details = ["| id | rule version | register check | pilot"
               + (f" (seeds {pilot_seeds})" if pilot_seeds else "") + " | "
               + "".join(f"earlier run (seeds {seeds}) | " for seeds, _, _ in earlier)
               + "earlier versions |", "|---|---|---|---|" + "---|" * len(earlier) + "---|"]
    for row in table.itertuples():
        others = [verdicts.get(row.id, "") for _, _, verdicts in earlier]
        flag = _runs_disagree(row.verdict, others)
        details.append(readable_row("| " + " | ".join(_cell(c) for c in (
            row.id + (f" ({flag})" if flag else ""), f"{row.version} ({row.fingerprint})",
            row.register or "agrees", pilot.get(row.id, "—"), *(o or "—" for o in others),
            row.previous or "—")) + " |"))
    flagged = table[table["register"] != ""]
    warning = "" if flagged.empty else (
        f"**Register check: {len(flagged)} of {len(table)} rules are unregistered or changed "
        f"since registration** ({_cell(', '.join(flagged['id']))}); see the details.\n\n")
    rules = "\n".join(measured(escaped(f"- **{row.id}**: measure: {row.measure}. Rule: "
                                       f"{row.rule}. Ours: {row.ours or 'not run'}."))
                      for row in table.itertuples())
    return (f"**{counts(table)}.**\n\n{warning}" + "\n".join(lines) + "\n\n"
            + run_history(reg.get("seeds", []), earlier)
            + "<details><summary>Rule versions, register check, pilot and earlier "
            "verdicts, rules and every measured value</summary>\n\n" + "\n".join(details)
            + "\n\n" + rules + "\n\n</details>\n")


def pending_notice(study: str, register: Mapping) -> str:
    """The line that opens the section of a study whose registered confirmatory run has not
    run yet: which seeds were registered when, and what the table below is instead."""
    ran = published_seeds(study) or []
    return (f"**Confirmatory run registered, not yet made.** Seeds "
            f"{seed_span(register.get('seeds', []))} were registered on {run_date(register)} "
            "with every rule's version, its n and its family; `make figures` runs them. Until "
            f"then the table below is the last run (seeds {seed_span(ran)}), judged by the "
            "rules as registered before it, so its register check names the newer versions; "
            "it counts in no total of this report.\n\n")

# ---- each row's earlier confirmatory rounds, as each round judged it -------------------------

def round_verdicts(register: Mapping) -> list[dict[str, tuple[str, str]] | None]:
    """Each earlier confirmatory round of a study (`earlier_runs`, oldest first): claim id ->
    (the rule version that round ran, its verdict), read from the verdicts that round wrote
    (register/earlier/), never evaluated again; None for a round whose file is missing."""
    rounds = []
    for run in register.get("earlier_runs") or []:
        path = paths.repo_root() / run["verdicts"]
        if not path.exists():
            rounds.append(None)
            continue
        table = read_results(path)
        versions = table["version"] if "version" in table else [""] * len(table)
        rounds.append({i: (str(v), str(verdict)) for i, v, verdict
                       in zip(table["id"], versions, table["verdict"], strict=True)})
    return rounds


def _rule_key(register: Mapping, claim_id: str, version: str):
    """What identifies a rule across rounds: its earliest version that the register records
    as this very rule (`same_rule_as`: the same words, code and values), else the version."""
    if not version.startswith("v") or not version[1:].isdigit():
        return version
    chain = same_rule_chain(register, claim_id, int(version[1:]))
    return chain[-1][0] if chain else int(version[1:])


def _rounds_named(numbers: Sequence[int]) -> str:
    if len(numbers) == 1:
        return f"round {numbers[0]}"
    return f"rounds {', '.join(map(str, numbers[:-1]))} and {numbers[-1]}"


def round_history(claim_id: str, version: str, register: Mapping,
                  rounds: Sequence[Mapping[str, tuple[str, str]] | None]) -> str:
    """A row's verdict in each earlier confirmatory round, as that round judged it with the
    rule version it ran ("held in 2 of 3 earlier rounds (v1: holds ×2 · v2: within noise)"),
    led by where its rule changed after a round had been seen: "rule changed after seeing
    round k" when the next round (or the current run, `version`) ran another rule (a version
    the register does not record as the same rule), "rule added after seeing round k" when
    round k did not have it yet; "—" without earlier rounds."""
    if not rounds:
        return "—"
    seen = [(k, r[claim_id]) for k, r in enumerate(rounds, 1) if r is not None and claim_id in r]
    marks = []
    known = [k for k, r in enumerate(rounds, 1) if r is not None]
    before = [k for k in known if k < (seen[0][0] if seen else len(rounds) + 1)]
    if before:
        marks.append(f"rule added after seeing round {before[-1]}")
    keys = [(k, _rule_key(register, claim_id, v)) for k, (v, _) in seen]
    keys.append((None, _rule_key(register, claim_id, version)))
    changed = [k for (k, a), (_, b) in zip(keys, keys[1:]) if a != b]
    if changed:
        marks.append(f"rule changed after seeing {_rounds_named(changed)}")
    kinds = [str(verdict).split(":")[0].strip() for _, (_, verdict) in seen]
    held = sum(kind.split(" (")[0] == HOLDS for kind in kinds)
    groups: list[tuple[str, list[str]]] = []  # consecutive rounds that ran one version
    for (_, (ran, _)), kind in zip(seen, kinds, strict=True):
        if not groups or groups[-1][0] != ran:
            groups.append((ran, []))
        groups[-1][1].append(SHORT_VERDICTS.get(kind, kind))
    shown = " · ".join(f"{ran}: {_run_lengths(verdicts)}" for ran, verdicts in groups)
    judged = (f"held in {held} of {len(seen)} earlier round{'s' if len(seen) != 1 else ''} "
              f"({shown})" if seen else "no earlier round judged it")
    return "; ".join([*marks, judged])


def _run_lengths(words: Sequence[str]) -> str:
    """"holds ×2, within noise" for holds, holds, within noise."""
    runs: list[list] = []
    for word in words:
        if runs and runs[-1][0] == word:
            runs[-1][1] += 1
        else:
            runs.append([word, 1])
    return ", ".join(word + (f" ×{n}" if n > 1 else "") for word, n in runs)


SHORT_VERDICTS = {NOT_RUN: "not run"}  # a long verdict word, shortened in the history


def run_history(seeds: Sequence[int], earlier: Sequence[tuple[str, str, Mapping]]) -> str:
    """Which seeds the confirmatory run used, in one line, and why each earlier run it
    replaces was replaced, folded behind that line: a section opens with its table, and the
    run's history (often hundreds of words) is one click away; "" without registered seeds."""
    if not seeds:
        return ""
    line = f"Confirmatory seeds {seed_span(seeds)}."
    if not earlier:
        return f"{line}\n\n"
    spans = ", ".join(span for span, _, _ in earlier)
    replaced = "\n\n".join(f"It replaces an earlier confirmatory run on seeds {span}, whose "
                            f"verdicts stay in the details: {escaped(reason).rstrip('.')}."
                            for span, reason, _ in earlier)
    return (f"<details><summary>{line} Why it replaces the earlier "
            f"run{'s' if len(earlier) > 1 else ''} on seeds {spans}</summary>\n\n{replaced}"
            "\n\n</details>\n\n")


def _read(csv) -> pd.DataFrame:
    table = read_results(csv)
    for column, default in OPTIONAL.items():
        if column not in table:
            table[column] = default
    return table


def collect(scale: str = DEFAULT_SCALE, code: CodeFingerprints | None = None) -> str:
    """Write CLAIMS.md from every study's claims.csv at `scale`; return its text. `code`
    (study -> {claim id: fingerprint}) adds the code's fingerprints to the register check."""
    shown, tables, regs = [], [], []
    # every register intact and extending its anchor in the report, before anything is read
    # (a study without results yet needs none)
    anchors, registers = recorded_anchors(), {}
    for key, study in STUDIES.items():
        csv = paths.figures_dir(study, scale) / f"{CLAIMS_TABLE}.csv"
        if csv.exists() or register_path(key).exists():
            registers[key] = verify_register(key, anchors)
    waiting = {}  # study -> its registered seeds, whose confirmatory run has not run yet
    for key, study in STUDIES.items():
        csv = paths.figures_dir(study, scale) / f"{CLAIMS_TABLE}.csv"
        if not csv.exists():
            _require_table(csv)
            shown.append((key, study, None))
            continue
        found = code(key) if code else None
        table = _read(csv)
        reg = read_register(key) if scale == DEFAULT_SCALE else {}
        seeds = pending_seeds(key, reg) if reg else []
        if not seeds:  # a run not yet made cannot lack rows; the one shown is the last
            _require_rows(table, key, found)
        table = _with_register(table, key, found)
        table["judged_by_run"] = judged_by_run(table, reg)
        table["counted"] = [j or v for j, v in zip(table["judged_by_run"], table["verdict"],
                                                    strict=True)]
        if seeds:  # the last run, shown as it was judged: in no family of this report
            waiting[study] = seeds
            table["p_holm_report"], table["holm_report"] = "", table["holm"]
            shown.append((key, study, table))
            continue
        tables.append(table)
        regs.append(reg)
        shown.append((key, study, len(tables) - 1))
    tables, report_family = report_holm(tables, regs)

    def section(key: str, study: str, at: int | pd.DataFrame | None) -> str:
        if at is None:
            return f"## {study}\n\nNo results yet: run `make figures SCALE={scale}`.\n"
        if isinstance(at, pd.DataFrame):
            return (f"## {study}\n\n{pending_notice(key, read_register(key))}"
                    f"{_section(key, at, scale)}")
        return f"## {study}\n\n{_section(key, tables[at], scale)}"

    sections = [section(key, study, at) for key, study, at in shown]
    everything = pd.concat(tables) if tables else pd.DataFrame(
        columns=["verdict", "scope", "p", "holm", "holm_report"])
    papers = everything[everything["scope"] == "paper"]
    ours = everything[everything["scope"] != "paper"]
    decided = decided_by_interval(everything)
    tested = tested_rows(everything)
    chance = ALPHA * tested
    summary_lines = [f"- **The papers' claims ({len(papers)}):** {counts(papers)}."]
    if len(ours):
        summary_lines.append(f"- **memlib's own questions ({len(ours)}):** {counts(ours)}.")
    if waiting:
        summary_lines.append(
            "- **Registered, confirmatory run not yet made:** " + "; ".join(
                f"{study} (seeds {seed_span(seeds)})" for study, seeds in waiting.items())
            + ". Their sections show the last run, under the rules registered before it, and "
            "count in no total above.")
    holm_kept = kept_by_holm(everything)
    report_kept = kept_by_holm(everything, "holm_report")
    text = (
        f"# Claims report ({scale} scale)\n\n"
        "Generated by `make figures` from the notebooks' runs; do not edit by hand. Each row "
        "is one claim: the verdict first, then the verdict after Holm's adjustment within its "
        "study, the paper's statement (and the dataset of a per-dataset row), the paper's "
        "value, our headline number (the one that decides the verdict) and a note. Every rule "
        "was registered (`register/`, with a fingerprint of what decides it) before the "
        "confirmatory run on seeds never used while the rules were designed; the pilot's "
        "verdicts (seeds 0-2), any earlier rule version and the register check stay visible "
        "in each section's details.\n\n"
        "A verdict is, in this order: *not run at this scale* when nothing was measured (the "
        "scale lacks what the row needs); *precondition failed* when what the rule "
        "presupposes did not happen (the model did not memorize, a curve has no peak), with "
        f"what the rule alone would have read beside it (*{WOULD_READ}: …*); *within noise: "
        "needs n ≈ N* when the row was measured on fewer replicates than its confirmatory n "
        f"(at least {MIN_REPLICATES}), N the more of that n and what the observed spread "
        f"asks. Then direction first: *holds* when the {LEVEL:.0%} Student-t interval over "
        "replicates (shown as mean ± half-width, n replicates) of the margin between the "
        "value and the rule's threshold clears the threshold on the rule's side, marked "
        f"*holds: {SMALLER}* when its {EQUIVALENCE_LEVEL:.0%} interval also lies inside ±δ; "
        "*does not hold* when it clears the threshold on the wrong side (a contrary result); "
        f"*does not hold: {NO_EFFECT}* when the interval includes the threshold and its "
        f"{EQUIVALENCE_LEVEL:.0%} interval lies inside ±δ (two one-sided tests), δ being the "
        "smallest effect of interest, registered only where the paper's own sentence gives "
        "its number (quoted in the row's δ); otherwise *within noise* (an interval across "
        "the threshold, or no interval). A *within noise* row's note says how many "
        "replicates of its unit would decide it at the observed spread and which verdict they "
        f"would reach (*needs seeds*), that more than {MAX_REPLICATES} would not (*sits on its "
        "threshold*), or that its unit (a dataset's classes) cannot grow. Each tested row "
        "shows the two-sided p of the test that decides it, on its interval's scale (below "
        f"{P_LEVEL:g} exactly when the interval decides), and beside it Holm's adjusted p over "
        "its study's family (the rows its register fixed before the run, where it records "
        "them: a row in it that fails a precondition counts as p = 1, and a row the power "
        "analysis found it cannot decide at its planned n is left out and says so; else "
        "every row the study tested, decided or within noise), then Holm's adjusted p over "
        "the whole report, every study's family together. A row "
        "relabelled after the run that judged it is counted under that run's verdict, the new "
        "label beside.\n\n"
        + "\n".join(summary_lines) + "\n\n"
        f"{tested} rows were tested and {decided} of them decided; if none of the effects "
        f"existed, about {chance:.1f} of the tested rows would still read *holds* by chance "
        f"alone (each interval errs in that direction {ALPHA:.1%} of the time). Holm's "
        "adjustment over each study's family, which holds the chance of any wrong "
        f"decision to {P_LEVEL:.0%} per study, keeps {holm_kept} of them decided; over the "
        f"whole report ({report_family} rows in its family), which holds it to "
        f"{P_LEVEL:.0%} for every claim at once, {report_kept}.\n\n"
        + "\n".join(sections)
        + anchors_block(registers)
    )
    atomic_write_bytes(paths.claims_report(scale), text.encode())
    return text


def anchors_block(registers: Mapping[str, Mapping]) -> str:
    """The registers' anchors (`register.anchor_line`), in a comment a reader does not see:
    the next `memlib claims` refuses a register that does not extend its anchor here."""
    lines = [anchor_line(key, data) for key, data in registers.items()]
    return ("\n<!-- the registers as this report read them; `memlib claims` refuses a register "
            "that does not extend its line here\n" + "\n".join(lines) + "\n-->\n")


def _require_table(csv) -> None:
    """MissingTableError when a study's claims table is missing beside its other outputs."""
    others = [p.name for p in csv.parent.iterdir()
              if p.is_file() and not p.name.startswith(".")] if csv.parent.is_dir() else []
    if others:
        raise MissingTableError(
            f"{csv} is missing beside the study's other outputs ({', '.join(sorted(others)[:3])}"
            f"{', …' if len(others) > 3 else ''}); rerun its notebook or restore it from "
            "version control")


class MissingTableError(DamagedFileError):
    """A study's claims.csv is missing where its other outputs are."""

