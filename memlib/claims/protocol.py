"""The protocol: every registered rule of a study as the register fixed it before the
confirmatory run (the registered report's first stage), one section per study of the book's
protocol page, from the register, the code's claims and the power analysis's table.

Each rule: its id, registered version and date, scope, instrument, the rule in words, δ with
the paper's sentence that gives it (or no δ), the smallest effect its n is powered for, and
the n with its power (`planned_n` in the register, `pilots/<notebook>_power_run.csv`); each
study: its family of rows for Holm's adjustment and its seeds. Raw HTML, escaped here, so a
`$` or a `<` in a rule's words reads as text."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from memlib import STUDIES, paths
from memlib.claims.register import _latest, seed_span
from memlib.claims.rules import Claim

DEFAULT_FAMILY = ("Every row of the study that reaches a p (decided or within noise), as the "
                  "run finds them: not fixed before the run")
# the power analysis's columns a reader is shown, in order, with their names in words; any
# other column whose name starts with "power" is shown too, under its own name
POWER_COLUMNS = {"pilot_n": "pilot n", "power_at_budget": "chance of a decision at the "
                 "study's budget", "n_needed": "n for 80% power",
                 "expected_verdict": "likely verdict", "registered": "planned"}


def power_table(study: str) -> dict[str, dict[str, str]]:
    """rule id -> its row of the study's power analysis (pilots/<notebook>_power_run.csv),
    every cell as text ("" where the analysis left it empty); empty without the file."""
    path = paths.repo_root() / "pilots" / f"{STUDIES.get(study, study)}_power_run.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    return {row["rule"]: dict(row) for row in table.to_dict("records") if "rule" in row}


def _text(value) -> str:
    return html.escape(" ".join(str(value).split()), quote=False)


def _number(value: float) -> str:
    return f"{value:g}"


def scope_words(claim: Claim) -> str:
    return "the paper's claim" if claim.scope == "paper" else "memlib's own question"


def delta_words(claim: Claim) -> str:
    """δ with its unit and the paper's sentence that gives it; without δ, "no δ" and why."""
    if claim.delta is None:
        why = f": {_text(claim.delta_reason)}" if claim.delta_reason else ""
        return f"no δ{why}"
    unit = claim.delta_unit or claim.unit
    shown = f"δ = {_number(claim.delta)}{f' {_text(unit)}' if unit else ''}"
    if claim.delta_source:
        return f"{shown}, from the paper: “{_text(claim.delta_source)}”"
    reason = f" ({_text(claim.delta_reason)})" if claim.delta_reason else ""
    return f"{shown}{reason}; no sentence of the paper gives it"


def smallest_effect_words(claim: Claim) -> str:
    if claim.smallest_effect is None:
        return "not stated"
    unit = claim.delta_unit or claim.unit
    reason = f" ({_text(claim.smallest_effect_reason)})" if claim.smallest_effect_reason else ""
    return f"{_number(claim.smallest_effect)}{f' {_text(unit)}' if unit else ''}{reason}"


def n_words(claim: Claim, planned: Mapping[str, int], power: Mapping[str, str] | None) -> str:
    """The registered n with the power analysis's numbers for the rule, where it has them."""
    n = planned.get(claim.id, claim.confirmatory_n)
    shown = f"n = {n} {_text(claim.replicates)}" if n is not None else "no n registered"
    found = []
    for column, value in (power or {}).items():
        label = POWER_COLUMNS.get(column) or (column.replace("_", " ")
                                              if column.startswith("power") else "")
        if label and str(value).strip() not in ("", "nan"):
            found.append((list(POWER_COLUMNS).index(column) if column in POWER_COLUMNS
                          else len(POWER_COLUMNS), f"{label} {_text(value)}"))
    analysis = "; ".join(text for _, text in sorted(found, key=lambda f: f[0]))
    return f"{shown}{f'; power analysis: {analysis}' if analysis else ''}"


def family_words(register: Mapping) -> str:
    """Holm's family as the register fixes it (its `family` key), else the default."""
    family = register.get("family")
    if not family:
        return DEFAULT_FAMILY
    if isinstance(family, Mapping):
        return "; ".join(f"{_text(k)}: {_listed(v)}" for k, v in family.items())
    return _listed(family)


def _listed(value) -> str:
    if isinstance(value, (list, tuple)):
        return (f"{len(value)} rows: " + ", ".join(f"<code>{_text(v)}</code>" for v in value)
                if value else "no row")
    return _text(value)


def fixed_when(register: Mapping, entries: Sequence[Mapping]) -> str:
    """When the rules were fixed, against the date the confirmatory seeds were registered;
    every rule version registered after that date named."""
    seeds, when = register.get("seeds") or [], str(register.get("seeds_registered") or "")
    dates = sorted(str(e.get("registered", "")) for e in entries)
    last = dates[-1] if dates else ""
    if not seeds:
        return "No confirmatory seeds are registered yet."
    if not when:
        return (f"The register records no date for its confirmatory seeds {seed_span(seeds)}; "
                f"its latest rule version was registered on {last or 'an unrecorded date'}.")
    after = [f"<code>{_text(e['id'])}</code> v{e['version']} ({_text(e['registered'])})"
             for e in entries if str(e.get("registered", "")) > when]
    text = (f"Fixed before the confirmatory run: its seeds were registered on {_text(when)}, "
            f"and every rule version below on or before that day (the latest on "
            f"{_text(last)}).")
    if after:
        text = (f"The confirmatory seeds were registered on {_text(when)}; registered after "
                f"them, so not fixed before that run: {', '.join(after)}.")
    return text


def rule_item(study: str, claim: Claim, entry: Mapping | None, planned: Mapping[str, int],
              power: Mapping[str, str] | None) -> str:
    """One rule as an HTML list item."""
    if entry is None:
        registered = "unregistered"
    else:
        registered = f"v{entry['version']}, registered {_text(entry.get('registered', ''))}"
        if entry.get("fingerprint") != claim.fingerprint:
            registered += " (the code's rule differs from it: a change not yet registered)"
    instrument = _text(claim.instrument) if claim.instrument else "not named by the rule"
    details = [f"<b>Rule:</b> {_text(claim.rule)}",
               f"<b>Instrument:</b> {instrument}",
               f"<b>δ:</b> {delta_words(claim)}",
               f"<b>Smallest effect:</b> {smallest_effect_words(claim)}",
               f"<b>n:</b> {n_words(claim, planned, power)}"]
    number = STUDIES.get(study, study)[:2]
    return (f'<li id="rule-{number}-{_text(claim.id)}"><code>{_text(claim.id)}</code> '
            f"{registered} · {scope_words(claim)}<br>" + "<br>".join(details) + "</li>")


def study_section(study: str, title: str, claims: Sequence[Claim], register: Mapping,
                  power: Mapping[str, Mapping[str, str]]) -> str:
    """A study's part of the protocol page: its seeds, when its rules were fixed, its family,
    every rule the code declares and every registered one it no longer declares."""
    number = STUDIES.get(study, study)[:2]
    latest = _latest(register)
    declared = {c.id for c in claims}
    planned = register.get("planned_n") or {}
    pilot = seed_span(register.get("pilot_seeds") or []) or "none registered"
    seeds = seed_span(register.get("seeds") or []) or "none registered"
    rounds = len(register.get("earlier_runs") or [])
    replication = " (a replication of rules an earlier round judged)" \
        if register.get("seeds_replication") else ""
    shown = [latest[c.id] for c in claims if c.id in latest]
    retired = [e for i, e in latest.items() if i not in declared]
    lines = [f"## {number} {title}", "",
             "```{raw} html",
             f"<p><b>Seeds.</b> Confirmatory: {seeds}{replication}; pilot: {pilot}; "
             f"{rounds} earlier confirmatory round{'s' if rounds != 1 else ''} replaced (their "
             "verdicts in the claims report). " + fixed_when(register, shown) + "</p>",
             f"<p><b>Holm's family.</b> {family_words(register)}.</p>",
             '<ul class="protocol">',
             *(rule_item(study, c, latest.get(c.id), planned, power.get(c.id)) for c in claims),
             "</ul>"]
    if retired:
        lines.append("<p><b>Registered and since retired</b> (the code no longer declares "
                     "them): " + ", ".join(f'<code id="rule-{number}-{_text(e["id"])}">'
                                           f"{_text(e['id'])}</code> v{e['version']} "
                                           f"({_text(e.get('registered', ''))})"
                                           for e in retired) + ".</p>")
    return "\n".join([*lines, "```", ""])


INTRO = (
    "# The protocol\n\n"
    "The registered report's first stage: every rule of every study as it was registered in "
    "`register/<notebook>.yaml` before its confirmatory run, generated from the registers, the "
    "code's claims and the power analyses (`pilots/<notebook>_power_run.csv`). Per rule: its "
    "version and the date it was registered, whether it is a paper's claim or memlib's own "
    "question, the instrument it reads, the rule in words, its smallest effect of interest δ "
    "with the paper's sentence that gives it, the smallest effect its n is powered to decide, "
    "and the n with its power. Per study: its seeds and Holm's family. The verdicts are in "
    "[the claims report](figures/CLAIMS.md), each row with its earlier rounds.\n")


def protocol_page(sections: Sequence[str]) -> str:
    return "\n".join([INTRO, *sections])
