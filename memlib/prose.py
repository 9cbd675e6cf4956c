"""Numbers and words for notebook prose, computed from the results so text cannot drift.

A notebook describes a figure in a displayed Markdown cell whose every measured number (and
every word that depends on one, such as "rises" or "beyond the seed spread") comes from
these helpers, never typed by hand.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from memlib import STUDIES, cache
from memlib.claims import Estimate
from memlib.claims.register import read_register, seed_span
from memlib.config import confirmatory_seeds
from memlib.tables import measured, readable_row

DASH = "–"


def _finite(values: Iterable[float]) -> np.ndarray:
    v = np.asarray(list(values), dtype=float).ravel()
    return v[~np.isnan(v)]


def num(value: float, digits: int = 2, signed: bool = False) -> str:
    """A number with a fixed count of decimals ('n/a' when missing), '−' as minus sign."""
    if value is None or math.isnan(value):
        return "n/a"
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", "−")


def pct(fraction: float, digits: int = 0) -> str:
    """A fraction as a percentage: 0.614 -> '61%'."""
    return "n/a" if fraction is None or math.isnan(fraction) else num(100 * fraction, digits) + "%"


def span(values: Iterable[float], digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    """The range of `values` as 'low–high' (one value when both round alike)."""
    v = _finite(values) * scale
    if not len(v):
        return "n/a"
    low, high = num(v.min(), digits), num(v.max(), digits)
    if low == high:
        return low + unit
    # "−3–5" reads as a subtraction: a range with a negative end is written "−3 to 5".
    joint = " to " if low.startswith("−") or high.startswith("−") else DASH
    return f"{low}{joint}{high}{unit}"


def pct_span(values: Iterable[float], digits: int = 0) -> str:
    """The range of fractions as percentages: [0.41, 0.52] -> '41–52%'."""
    return span(values, digits, scale=100, unit="%")


def pm(estimate: Estimate, digits: int = 2, scale: float = 1.0, signed: bool = True) -> str:
    """'mean ± half-width' of the 95% t interval the claims use, signed as a difference unless
    `signed` is False; the mean alone for a single replicate."""
    mean = num(estimate.mean * scale, digits, signed)
    if estimate.n < 2:
        return mean + " (one seed)"
    return f"{mean} ± {num(estimate.half_width * scale, digits)}"


def beyond(estimate: Estimate) -> bool:
    """The 95% t interval excludes zero: the difference exceeds the seed-to-seed spread."""
    return estimate.beyond_noise


def spread_phrase(estimate: Estimate) -> str:
    """'beyond the seed spread' or 'within the seed spread'."""
    return "beyond the seed spread" if beyond(estimate) else "within the seed spread"


def direction(change: float, up: str = "rises", down: str = "falls", flat: str = "stays flat",
              tolerance: float = 0.0) -> str:
    """A word for the sign of a change: `up` above `tolerance`, `down` below −`tolerance`."""
    if change is None or math.isnan(change) or abs(change) <= tolerance:
        return flat
    return up if change > 0 else down


def listing(items: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def cell_text(value) -> str:
    """A table cell as Markdown: missing values blank, a list as its items (never its
    brackets), pipes escaped, one line."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame) -> str:
    """A DataFrame (its index dropped) as a Markdown table with every cell there to read:
    pandas' HTML view cuts long text such as a verdict's reason to "…"; here a cell longer
    than a table can show folds its rest (memlib.tables.readable_row), and a number never
    measured says so."""
    lines = ["| " + " | ".join(cell_text(c) for c in frame.columns) + " |",
             "|" + "---|" * len(frame.columns)]
    lines += [readable_row("| " + " | ".join(cell_text(v) for v in row) + " |")
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


# ---- which seeds ran, and which the register records ----------------------------------------

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                "seventeen", "eighteen", "nineteen", "twenty")


def count_word(n: int) -> str:
    """A count as prose writes it: 'five' up to twenty, digits beyond."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def seeds_phrase(seeds: Iterable[int]) -> str:
    """'five seeds (300-304)', 'one seed (0)': a count of seeds and their span."""
    seeds = list(seeds)
    return f"{count_word(len(seeds))} seed{'' if len(seeds) == 1 else 's'} ({seed_span(seeds)})"


def seed_history(study: str, config=None) -> dict[str, str]:
    """Ready-made phrases about a study's seeds, so that no seed number is typed in prose.

    From the study's register (`memlib.claims.read_register`, the history):
    `registered` the confirmatory seeds as a span ('300-304'; every seed the confirmatory run
    uses, an arm's included), `registered_count` their count in words ('five'), `pilots` and
    `pilot_count` the pilot's seeds, `earlier` the replaced confirmatory runs' spans in words
    ('100-102 and 200-202'; '' when none), `earlier_count` how many runs those were,
    `earlier_runs` a phrase for them ('an earlier confirmatory run on seeds 100-101',
    'earlier confirmatory runs on seeds 100-102 and 200-202', 'no earlier confirmatory
    run'), `earlier_steps` the same in order ('first 100-102, then 200-202'), and
    `first_earlier` / `first_earlier_count` the first replaced run's seeds.

    From `config` (the Config the notebook runs, what ran), when given: `seeds` and `count`
    its seeds, and for each arm running on seeds of its own (the fields its class names in
    `ARM_SEEDS`) `<field>` and `<field>_count`; `confirmatory` 'yes' when every seed it runs
    is a registered confirmatory seed and it runs them all, else ''; and `ran`, what this
    run ran in words: 'the five confirmatory seeds (300-304)' (its `seeds`; an arm's are
    its own phrase), or 'one seed (0), not the five confirmatory seeds (300-304) registered
    in register/<notebook>.yaml' (', the arms' among them' after the span where the Config
    has arms)."""
    data = read_register(study)
    registered = [int(s) for s in data.get("seeds") or []]
    pilots = [int(s) for s in data.get("pilot_seeds") or []]
    earlier = [[int(s) for s in run["seeds"]] for run in data.get("earlier_runs") or []]
    spans = [seed_span(seeds) for seeds in earlier]
    phrases = {
        "registered": seed_span(registered), "registered_count": count_word(len(registered)),
        "pilots": seed_span(pilots), "pilot_count": count_word(len(pilots)),
        "earlier": listing(spans), "earlier_count": count_word(len(spans)),
        "earlier_runs": ("no earlier confirmatory run" if not spans else
                         f"an earlier confirmatory run on seeds {spans[0]}" if len(spans) == 1
                         else f"earlier confirmatory runs on seeds {listing(spans)}"),
        "earlier_steps": "first " + ", then ".join(spans) if spans else "",
        "first_earlier": spans[0] if spans else "",
        "first_earlier_count": count_word(len(earlier[0])) if earlier else "",
    }
    if config is None:
        return phrases
    phrases.update(seeds=seed_span(config.seeds), count=count_word(len(config.seeds)))
    for arm in getattr(type(config), "ARM_SEEDS", ()):
        phrases[arm] = seed_span(getattr(config, arm))
        phrases[f"{arm}_count"] = count_word(len(getattr(config, arm)))
    ran = sorted(int(s) for s in confirmatory_seeds(config))
    confirmatory = bool(registered) and ran == sorted(registered)
    phrases["confirmatory"] = "yes" if confirmatory else ""
    if confirmatory:
        phrases["ran"] = f"the {seeds_phrase(config.seeds).replace(' seed', ' confirmatory seed')}"
    elif registered:
        arms = ", the arms' among them" if getattr(type(config), "ARM_SEEDS", ()) else ""
        phrases["ran"] = (f"{seeds_phrase(config.seeds)}, not the {phrases['registered_count']} "
                          f"confirmatory seeds ({phrases['registered']}{arms}) registered in "
                          f"register/{STUDIES.get(study, study)}.yaml")
    else:
        phrases["ran"] = seeds_phrase(config.seeds)
    return phrases


CLAIM_COLUMNS = ["id", "headline", "verdict", "rule"]


def claims_markdown(table) -> str:
    """A study's claims table (memlib.claims.evaluate) as a full Markdown table: each claim's
    number, verdict (with its whole reason) and rule."""
    return markdown_table(table[CLAIM_COLUMNS])


# ---- why a claim reads as it does ----------------------------------------------------------

EXPLAINED = ("does not hold", "precondition failed")  # every such row is explained in prose


def _top_level(text: str) -> list[str]:
    """`text` split at the commas outside brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def claim_values(ours: str, prefix: str = "") -> dict[str, str]:
    """A claims row's measured values (its `ours` cell, `a=1, b=(c=2, d=[3, 4])`) as a flat
    mapping of names (`a`, `b.c`, `b.d`) to the values as the row shows them."""
    found = {}
    for part in _top_level(ours or ""):
        key, sep, value = part.partition("=")
        if not sep:
            continue
        name = prefix + key.strip()
        inner = value.strip()
        if inner.startswith("(") and inner.endswith(")") and "=" in inner:
            found.update(claim_values(inner[1:-1], name + "."))
        else:
            found[name] = inner
    return found


def fill(template: str, values: dict[str, str]) -> str | None:
    """`template` with each `{name}` replaced by that measured value; None when a value it
    names was not measured (a smaller scale measures less), so nothing is said of it."""
    names = re.findall(r"\{([^{}]+)\}", template)
    if any(name not in values or values[name].startswith("nan") for name in names):
        return None
    return re.sub(r"\{([^{}]+)\}", lambda m: measured(values[m[1]]), template)


def why_anchor(claim_id: str) -> str:
    """The HTML id of the paragraph that explains a claim's verdict (the book links it)."""
    return "why-" + re.sub(r"[^A-Za-z0-9_-]+", "-", claim_id)


def why_template(why: dict[str, str | dict[str, str]], claim_id: str,
                 verdict: str) -> str | None:
    """The explanation `why` gives claim `claim_id` when it reads `verdict`: a template per
    verdict (`{"holds": ..., "precondition failed: the deepest head rises": ...}`, the
    longest key the verdict opens with), so that a paragraph never explains a verdict, or a
    failed precondition, the claim does not read; a plain string explains every verdict."""
    found = why.get(claim_id)
    if not isinstance(found, dict):
        return found
    keys = [k for k in found if verdict.startswith(k)]
    return found[max(keys, key=len)] if keys else None


def explanations(table, why: dict[str, str | dict[str, str]]) -> str:
    """A paragraph for every claim of `table` (memlib.claims.evaluate) that does not hold or
    whose precondition failed, and every other claim `why` explains for its verdict: the
    paper's statement, our number against the rule, the verdict with its reason, then the
    template for that verdict (why_template) filled with the row's measured values (`{name}`
    as claim_values names them); a sentence saying so when there is none."""
    paragraphs = []
    for row in table.itertuples(index=False):
        kind = row.verdict.split(":")[0].strip()
        template = why_template(why, row.id, row.verdict.strip())
        if kind not in EXPLAINED and template is None:
            continue
        values = {**claim_values(row.ours), "headline": row.headline or ""}
        ours = (f"ours is {measured(row.headline)}" if row.headline
                and not row.headline.startswith("nan") else "there is no number to judge")
        reason = row.verdict.partition(":")[2].strip()
        text = (f'<a id="{why_anchor(row.id)}"></a>**Why `{row.id}` reads *{kind}*.** '
                f"The claim: {row.statement.rstrip('.')}. The rule: {row.rule.split(';')[0]}; "
                f"{ours}" + (f"; what failed: {reason}." if reason else "."))
        extra = fill(template or "", values)
        paragraphs.append(text + (f" {extra}" if extra else ""))
    if not paragraphs:  # said, so that the page never shows an empty output in its place
        return ("### Why these verdicts\n\nNo claim of this run reads *does not hold* or "
                "*precondition failed*: none needs explaining.")
    return "\n\n".join(["### Why these verdicts", *paragraphs])


# ---- what an exercise costs, from the cache entries this kernel used -----------------------

PROCESSES = 2  # runs computed side by side, as `make figures` computes them on two cores


def cold_seconds(manifest: dict) -> float:
    """A notebook's cold cost from its manifest: the summed compute time of its cached results
    where the manifest records it (runs computed two at a time count both), else the wall
    time of the run that published it."""
    return float(manifest.get("compute_seconds", manifest["wall_seconds"]))


def duration(seconds: float) -> str:
    """Seconds as a reader counts them: '70 s', '6 min', '1.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def entry_seconds(*names: str, ledger: dict[str, float | None] | None = None) -> list[float]:
    """The cold compute seconds of each cache entry this kernel used (`memlib.cache.ledger`,
    or `ledger`), of the computations `names` (every entry when none): what the entry cost
    when it was computed, even when it loaded now. Entries that stored no time are left out."""
    ledger = cache.ledger if ledger is None else ledger
    return [float(s) for entry, s in ledger.items()
            if s is not None and (not names or entry.rsplit("-", 1)[0] in names)]


def distinct_seconds(ledger_file: str | None = None) -> list[float]:
    """The cold compute seconds of every cache entry this kernel used, each entry once, with
    those computed inside another counted once (what the manifest's `compute_seconds` sums):
    from the ledger file a `memlib notebook` run keeps (`ledger_file`, else the one its
    environment names). Without one, `entry_seconds()`: there an entry computed inside two
    others counts twice, an upper bound."""
    import os
    from pathlib import Path

    target = ledger_file or os.environ.get(cache.LEDGER_VARIABLE)
    if target and Path(target).is_file():
        seconds = [float(s) for s in cache.ledger_seconds(Path(target)).values()
                   if s is not None]
        if seconds:
            return seconds
    return entry_seconds()


def run_time(seconds: float, at_most: bool = False, processes: int = PROCESSES) -> str:
    """An exercise's run time from the `seconds` of compute it repeats, `processes` at a
    time: 'about 6 min on 2 cores'; without a measured cost it says so instead of a number."""
    if not seconds or math.isnan(seconds):
        return "not measured (no cache entry of this kernel recorded its cost)"
    bound = "at most about" if at_most else "about"
    return f"{bound} {duration(seconds / processes)} on {processes} cores"


def cost_of(seconds: Iterable[float]) -> str:
    """What measured entries cost, for an exercise's reasons: '980 s of compute, 76–128 s
    each' (the range only for more than one entry)."""
    seconds = list(seconds)
    if not seconds:
        return "no measured compute"
    each = f", {span(seconds, 0, unit=' s')} each" if len(seconds) > 1 else ""
    return f"{duration(sum(seconds))} of compute{each}"
