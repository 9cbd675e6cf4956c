"""Read the built book as a reader sees it, in headless Chromium: what each page shows that it
should not (raw TeX, machine paths, object reprs, cut claims tables, literal Markdown links),
whether it fits a phone's width, whether its figures are shown large enough to read, whether
every figure carries its number (a "Figure N.k." caption under it), every exercise its run
time and a folded answer, and whether each notebook page links the first use of its jargon
to the glossary. The notebooks' sources are read too: every figure cell has its numbered
caption under it, every figure cited by number exists, no figure is cited by a number the
book does not give it, and every exercise states its run time and folds its answer.

Each page is also read for tables and display math cut off on a phone without a horizontal
scroll, absolute paths, reprs, raw NaN or None, figures shown too small for their text to keep
9 pt, and captions with no figure above them; each executed notebook's exercises against its
manifest; every saved figure for a width that would shrink its text under 9 pt in the book's
column; every hand-written page of the book for a typed duration.

As a script it checks every page of a built book, the notebooks' sources and the published
notebooks, and saves a full-height screenshot of each page at 1300 px and at 390 px:

    python tests/book_render.py build/book/html --shots build/book/shots
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from memlib.book import FIGURE_CAPTION, GLOSSARY_TERMS, PRINTED_CAPTION, caption, term_pattern
from memlib.plotting import COLUMN_INCHES, MIN_POINTS, saved_png_points

COLUMN_PX = round(COLUMN_INCHES * 100)  # the book's column, as memlib.plotting makes figures

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1300,900")
DESKTOP, PHONE = 1300, 390

# TeX a reader should never see: a $…$ span, \( \) or \[ \] delimiters, or a TeX command
RAW_TEX = re.compile(r"\$[^$\s][^$\n]*?\$|\\[(\[]|\\(?:math\w+|lambda|alpha|beta|gamma|"
                     r"top|frac|sum|hat|tilde|operatorname|text|left|right|qquad|Delta|phi|"
                     r"mu|sigma|approx|otimes|in|le|ge|cdot)\b")
MARKDOWN_LINK = re.compile(r"\[[^\]\n]+\]\(\S*")
REPRS = re.compile(r"PosixPath\(|Estimate\(|\w+\.\w+\.run/|<IPython\.core|np\.\w+\(|"
                   r"array\(\[|dtype: \w+|\bName: \w+, dtype|<[\w.]+ object at 0x")
# an absolute path of any machine, in prose (a command in a code block may name /tmp)
ABSOLUTE_PATH = re.compile(r"(?<![\w./:~-])(?:/(?:home|Users|root|work|tmp|mnt|opt|usr|var|srv)"
                           r"/[\w.-]+|[A-Z]:\\[\w.-]+)")
ELLIPSIS = re.compile(r"(…|\.\.\.)$")
# a value printed raw instead of said: NaN, or None as a value (in a list, a table cell, at
# the end of a clause), not the word that opens "None of them"
RAW_VALUES = re.compile(r"\b(?:NaN|nan)\b|(?<![\w-])None(?=\s*(?:[,;:|)\]]|$))", re.M)

# The text of the page a reader sees as prose: MathJax's output and code (which shows
# literally by design) left out.
PROSE_TEXT = """
const root = document.querySelector('main') || document.body;
const copy = root.cloneNode(true);
copy.querySelectorAll('mjx-container, script, style, pre, code, .cell_input, '
                      + '.headerlink').forEach(e => e.remove());
return copy.innerText;
"""
ALL_TEXT = "return (document.querySelector('main') || document.body).innerText;"
CLAIM_CELLS = """
return [...document.querySelectorAll('table')]
  .filter(t => [...t.querySelectorAll('th')].some(th => th.innerText.trim() === 'verdict'))
  .flatMap(t => [...t.querySelectorAll('td, th')].map(c => c.innerText.trim()));
"""
PAGE_WIDTH = "return document.documentElement.scrollWidth;"
# each figure's shown width against the width it was made for: its width attribute (a
# high-resolution image declares its size) or else its natural width. A figure wider than
# the book's column was made with text larger by as much (memlib.plotting), so it may shrink
# to the column; shown narrower still, its text falls under the 9 pt it was made to keep.
SMALL_IMAGES = """
const column = arguments[0];
return [...document.querySelectorAll('main img')]
  .filter(i => i.complete && i.naturalWidth > 0)
  .map(i => [i.getAttribute('src').slice(0, 80), i.clientWidth,
             parseFloat(i.getAttribute('width')) || parseFloat(i.style.width)
             || i.naturalWidth])
  .filter(([src, shown, meant]) => shown < 0.95 * Math.min(meant, column));
"""
# elements wider than what shows them, with no horizontal scroll to reach the rest: tables
# (a verdict off-screen on a phone) and display math
CLIPPED = """
const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
const clipped = [];
for (const el of document.querySelectorAll('main table, main mjx-container[display="true"]')) {
  if (el.closest('table') !== el && el.tagName === 'TABLE') continue;
  let right = document.documentElement.clientWidth, reached = false;
  for (let e = el; e && e !== document.body; e = e.parentElement) {
    if (scrolls(e)) { reached = true; break; }
    if (e !== el && getComputedStyle(e).overflowX !== 'visible') {
      right = Math.min(right, e.getBoundingClientRect().right);
    }
  }
  const r = el.getBoundingClientRect();
  const inner = el.tagName === 'TABLE' ? r.right
    : r.left + Math.max(el.scrollWidth, ...[...el.children].map(c => c.scrollWidth));
  if (!reached && inner > right + 1) {
    clipped.push([el.tagName === 'TABLE' ? 'table' : 'display math',
                  el.innerText.trim().slice(0, 60)]);
  }
}
return clipped;
"""
# a "Figure N.k." caption with no figure right above it (a figure its cell did not draw)
BARE_CAPTIONS = """
const root = document.querySelector('article') || document.body;
return [...root.querySelectorAll('p')]
  .filter(p => /^Figure \\d+\\.\\d+\\./.test(p.textContent.trim())
               && p.querySelector('strong:first-child'))
  .filter(p => {
    // a caption a code cell printed sits inside that cell's output: look before the cell
    let node = p;
    while (!node.previousElementSibling && node.parentElement
           && node.parentElement.closest('div.cell')) node = node.parentElement;
    let before = node.previousElementSibling;
    if (!before && node.parentElement) before = node.parentElement.previousElementSibling;
    return !(before && before.querySelector('img, svg'));
  })
  .map(p => p.textContent.trim().slice(0, 60));
"""
MATHJAX_DONE = """
const done = arguments[arguments.length - 1];
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => done(true), () => done(false));
} else { done(true); }
"""


# every code cell with a figure in its output, whose next element is not its caption
UNCAPTIONED = """
const root = document.querySelector('article') || document.body;
return [...root.querySelectorAll('div.cell')]
  .filter(cell => cell.querySelector('.cell_output img'))
  .filter(cell => !(cell.nextElementSibling
                    && /^Figure \\d+\\.\\d+\\./.test(cell.nextElementSibling.textContent.trim())))
  .map(cell => cell.querySelector('.cell_output img').getAttribute('src').slice(0, 80));
"""
CAPTION_NUMBERS = """
const root = document.querySelector('article') || document.body;
return [...root.querySelectorAll('p > strong:first-child')]
  .map(s => s.textContent.trim().match(/^Figure (\\d+\\.\\d+)\\.$/))
  .filter(m => m).map(m => m[1]);
"""
# each "Try this" exercise's problems: no run time, no folded answer
EXERCISES = """
const root = document.querySelector('article') || document.body;
const problems = [];
for (const heading of root.querySelectorAll('h2')) {
  if (!heading.textContent.trim().startsWith('Try this')) continue;
  // the list may be prose or what a code cell displays; an answer's own lists are not items
  const items = [...(heading.closest('section') || heading.parentElement)
    .querySelectorAll('ol > li')].filter(li => !li.parentElement.closest('li'));
  if (!items.length) problems.push('a "Try this" section without exercises');
  items.forEach((item, i) => {
    if (!/Run time:\\s*(at most\\s+)?about\\s+\\d/.test(item.textContent)) {
      problems.push(`exercise ${i + 1} states no run time`);
    }
    if (!item.querySelector('details > summary')) {
      problems.push(`exercise ${i + 1} has no folded answer`);
    }
  });
}
return problems;
"""
# on a notebook page, each glossary term whose first use (in prose, not in code, math,
# headings or tables of numbers) is not a link to its glossary entry
UNLINKED_TERMS = """
const terms = arguments[0];
const root = document.querySelector('article') || document.body;
if (!root.querySelector('div.cell')) return [];
const skip = 'pre, code, mjx-container, script, style, h1, h2, h3, h4, h5, h6, .cell_input, '
             + '.headerlink, .text_html, table.dataframe, .cell_output table, summary';
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
const texts = [];
while (walker.nextNode()) {
  const parent = walker.currentNode.parentElement;
  if (!parent || parent.closest(skip)) continue;
  const link = parent.closest('a');
  const glossary = !!link && (link.getAttribute('href') || '').includes('glossary.html#term-');
  if (link && !glossary) continue;
  texts.push([walker.currentNode.textContent, glossary]);
}
const unlinked = [];
for (const [term, pattern] of terms) {
  const re = new RegExp(pattern, 'i');
  const first = texts.find(([text]) => re.test(text));
  if (first && !first[1]) {
    unlinked.push(`${term}: …${first[0].replace(/\\s+/g, ' ').trim().slice(0, 80)}…`);
  }
}
return unlinked;
"""


def browser(profile: Path):
    """Headless Chromium through the system's chromedriver, with a fresh profile and nothing
    that would reach the network by itself."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_script_timeout(30)
    return driver


def viewport(driver, width: int) -> None:
    """Lay pages out `width` CSS pixels wide, as a phone does when `width` is a phone's."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})


def open_page(driver, page: Path) -> None:
    driver.get(page.as_uri())
    driver.execute_async_script(MATHJAX_DONE)


def text_problems(prose: str, text: str, machine_paths: list[str]) -> list[str]:
    """What the page's text shows that a reader should not see; `prose` leaves code out,
    `text` is everything."""
    problems = [f"raw TeX: {m.group(0)!r} in …{context(prose, m)}…"
                for m in RAW_TEX.finditer(prose)]
    problems += [f"literal Markdown link: {m.group(0)[:80]!r}"
                 for m in MARKDOWN_LINK.finditer(prose)]
    problems += [f"object repr or run folder: …{context(text, m)}…"
                 for m in REPRS.finditer(text)]
    problems += [f"raw value {m.group(0)!r}: …{context(prose, m)}…"
                 for m in RAW_VALUES.finditer(prose)]
    problems += [f"machine path {path}: …{text[i - 20:i + 60]}…"
                 for path in machine_paths if path and (i := text.find(path)) >= 0]
    problems += [f"absolute path: …{context(prose, m)}…" for m in ABSOLUTE_PATH.finditer(prose)
                 if not any(path and path in m.group(0) for path in machine_paths)]
    return problems


def context(text: str, match: re.Match, width: int = 30) -> str:
    return text[max(0, match.start() - width):match.end() + width].replace("\n", " ")


def claims_problems(cells: list[str]) -> list[str]:
    return [f"claims table cell cut short: {c[-80:]!r}" for c in cells if ELLIPSIS.search(c)]


def numbering_problems(numbers: list[str]) -> list[str]:
    """Figure numbers of one page, in page order, that do not run N.1, N.2, … for one N."""
    if not numbers:
        return []
    first = numbers[0].split(".")[0]
    expected = [f"{first}.{k}" for k in range(1, len(numbers) + 1)]
    return [f"figure numbered {got} where {want} was due"
            for got, want in zip(numbers, expected, strict=True) if got != want][:1]


def glossary_terms() -> list[list[str]]:
    return [[term, term_pattern(forms)] for term, forms in GLOSSARY_TERMS.items()]


# ---- the notebooks' sources -----------------------------------------------------------------

FIGURE_REFS = re.compile(r"\bFigures? (\d+\.\d+(?:(?:, | and | or | to )\d+\.\d+)*)")
# a figure cited by a bare "Fig. 2": the paper's numbering unless it says so, or none at all
BARE_FIG = re.compile(r"(?<!paper's )\bFigs?\.\s*\d+\w*")
SAVES_FIGURE = re.compile(r"\bsavefig\([^,]+,\s*f?[\"']([^\"']+)")
# an exercise's run time: as the executed notebook shows it, or computed in its source
RUN_TIME = re.compile(r"\*\*Run time:\*\*\s*(?:(?:at most\s+)?about\s+\d+|\{run_time\()")
# a duration typed by hand: the numbers of a run time come from the cache entries the run used
TYPED_TIME = re.compile(r"(?<![\w.])\d[\d,.]*\s*(?:s|sec|seconds|min|minutes|h|hours)\b")
FIELD = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")  # an f-string's field, nested once
ANSWER = re.compile(r"<details><summary>Answer</summary>.*?</details>", re.S)
EXERCISE = re.compile(r"^\d+\. \*\*", re.M)
EXERCISES_HEADING = "## Try this"


def text_of(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def source_cells(path: Path) -> list[dict]:
    """The cells of a notebook: its jupytext source (.py) or an executed copy (.ipynb)."""
    if path.suffix == ".py":
        import jupytext

        return [{"cell_type": c.cell_type, "source": c.source} for c in jupytext.read(path).cells]
    import json

    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def figure_problems(cells: list[dict], number: int) -> list[str]:
    """Each figure cell whose next cell is not its caption "**Figure <number>.<k>.**" (a text
    cell, or a code cell that prints it: a figure drawn only sometimes), k counting the figure
    cells from 1."""
    problems, k = [], 0
    for i, cell in enumerate(cells):
        found = SAVES_FIGURE.search(text_of(cell)) if cell["cell_type"] == "code" else None
        if not found:
            continue
        k += 1
        after = cells[i + 1] if i + 1 < len(cells) else {"cell_type": "none"}
        under = caption(after) if after["cell_type"] != "none" else None
        if under is None:
            problems.append(f"figure {found[1]} has no caption 'Figure {number}.{k}.' under it")
        elif (int(under[1]), int(under[2])) != (number, k):
            problems.append(f"figure {found[1]} is numbered {under[1]}.{under[2]}; "
                            f"{number}.{k} was due")
    return problems


def captions(cells: list[dict]) -> set[str]:
    return {f"{m[1]}.{m[2]}" for c in cells if c["cell_type"] in ("markdown", "code")
            for m in (FIGURE_CAPTION if c["cell_type"] == "markdown" else PRINTED_CAPTION
                      ).finditer(text_of(c))}


def reference_problems(cells: list[dict], known: set[str]) -> list[str]:
    """Figures cited in the text by a number no figure carries, or by a bare "Fig. N"."""
    problems = []
    for cell in (c for c in cells if c["cell_type"] == "markdown"):
        text = " ".join(text_of(cell).split())
        for refs in FIGURE_REFS.finditer(text):
            problems += [f"cites Figure {n}, which no figure carries"
                         for n in re.findall(r"\d+\.\d+", refs[1]) if n not in known]
        problems += [f"cites {m[0]!r}: a figure is cited as 'Figure N.k' (or as the paper's)"
                     for m in BARE_FIG.finditer(text)]
    return problems


def exercise_section(cells: list[dict]) -> str | None:
    """The "Try this" section: its heading cell and what the code cells under it display (the
    Markdown of an executed notebook's outputs, else the cell's source, whose f-string says
    it), up to the next text cell; None without one."""
    texts = None
    for cell in cells:
        if cell["cell_type"] == "markdown":
            if texts is not None:
                break
            if EXERCISES_HEADING in text_of(cell):
                texts = [text_of(cell)]
        elif texts is not None:
            shown = ["".join(o.get("data", {}).get("text/markdown", ""))
                     for o in cell.get("outputs", [])]
            texts += shown if any(shown) else [text_of(cell)]
    return None if texts is None else "\n".join(texts)


def typed_times(text: str) -> list[str]:
    """Durations typed into an exercise's text outside the f-string fields that compute them."""
    return TYPED_TIME.findall(FIELD.sub("", text))


def exercise_problems(cells: list[dict]) -> list[str]:
    """Each exercise of a notebook's "Try this" section (in its source) without a run time or
    a folded answer, or with a run time typed instead of computed."""
    section = exercise_section(cells)
    if section is None:
        return ["no 'Try this' section"]
    starts = [m.start() for m in EXERCISE.finditer(section)]
    if not starts:
        return ["a 'Try this' section without exercises"]
    problems = []
    for n, (a, b) in enumerate(zip(starts, [*starts[1:], len(section)]), 1):
        item = section[a:b]
        if not RUN_TIME.search(item):
            problems.append(f"exercise {n} states no run time ('**Run time:** about …')")
        if not ANSWER.search(item):
            problems.append(f"exercise {n} has no folded answer (<details><summary>Answer…)")
        problems += [f"exercise {n} types a run time ({t!r}); compute it from the cache "
                     "entries (memlib.prose.run_time)" for t in typed_times(item)]
    return problems


STATED_COMPUTE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(s|min|h) of (?:cold )?compute")
UNIT_SECONDS = {"s": 1, "min": 60, "h": 3600}


def runtime_problems(cells: list[dict], manifest: dict) -> list[str]:
    """Each amount of compute an executed notebook's exercises state ("25 min of compute")
    that is more than the notebook's whole cold compute in its manifest: a part of the runs
    cannot cost more than all of them (allowing for the rounding of a duration)."""
    whole = float(manifest.get("compute_seconds") or 0)
    problems = []
    for m in STATED_COMPUTE.finditer(exercise_section(cells) or ""):
        stated = float(m[1].replace(",", "")) * UNIT_SECONDS[m[2]]
        if whole and stated > whole + 0.5 * UNIT_SECONDS[m[2]]:
            problems.append(f"an exercise states {m[0]!r}; the manifest measured "
                            f"{whole:.0f} s of compute for the whole notebook")
    return problems


def published_problems(figures: Path) -> list[str]:
    """runtime_problems of every executed notebook in `figures` against its manifest."""
    import json

    problems = []
    for manifest in sorted(figures.glob("[0-9]*/manifest.json")):
        notebook = manifest.with_name(f"{manifest.parent.name}.ipynb")
        if notebook.is_file():
            problems += [f"{notebook.name}: {p}" for p in runtime_problems(
                source_cells(notebook), json.loads(manifest.read_text(encoding="utf-8")))]
    return problems


def figure_file_problems(figures: Path) -> list[str]:
    """Every figure saved under `figures` (its PNGs) whose saved width would show its smallest
    text under MIN_POINTS at the book's column width: the style's font sizes, enlarged for the
    width the figure was made at, shrunk by as much as the saved figure is wider than the
    column (memlib.plotting.saved_png_points)."""
    problems = []
    for png in sorted(figures.rglob("*.png")):
        if any(part.startswith(".") for part in png.relative_to(figures).parts):
            continue  # a run's staging folder
        inches, points = saved_png_points(png)
        if points < MIN_POINTS - 0.05:
            problems.append(f"{png.relative_to(figures)}: saved {inches:.1f} in wide, its "
                            f"smallest text {points:.1f} pt at the book's "
                            f"{COLUMN_INCHES:g} in column (under {MIN_POINTS:g} pt)")
    return problems


def notebook_problems(notebooks: dict[str, list[dict]]) -> list[str]:
    """Every defect of the notebooks (name -> cells; the name opens with its number) in
    figures, figure citations and exercises."""
    known = set().union(*(captions(cells) for cells in notebooks.values()))
    problems = []
    for name, cells in notebooks.items():
        found = (figure_problems(cells, int(name[:2])) + reference_problems(cells, known)
                 + exercise_problems(cells))
        problems += [f"{name}: {p}" for p in found]
    return problems


# a table printed as text: a line whose words stand in columns (two or more gaps of 2+ spaces)
ALIGNED = re.compile(r"\S {2,}\S+ {2,}\S")


def output_problems(notebook: dict) -> list[str]:
    """What an executed notebook shows raw instead of as a reader's table or sentence: a
    DataFrame in pandas' HTML (its index, its nested header) or printed as text columns, and
    NaN or None printed as values."""
    problems = []
    for number, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            data = output.get("data", {})
            text = "".join(output.get("text", "")) or "".join(data.get("text/markdown", ""))
            if "dataframe" in "".join(data.get("text/html", "")):
                problems.append(f"cell {number}: a DataFrame shown as pandas' HTML")
            if output["output_type"] == "stream" and sum(
                    bool(ALIGNED.search(line)) for line in text.splitlines()) >= 2:
                problems.append(f"cell {number}: a table printed as text columns")
            if output["output_type"] == "stream" and (raw := RAW_VALUES.search(text)):
                problems.append(f"cell {number}: raw value {raw[0]!r} printed")
    return problems


# the manual's page of paper-scale projections, which benchmarks/gpu_hours.py prints from the
# full presets (no run measured them, so there is no manifest to compute them from)
PROJECTIONS = ("full-scale.md",)
TARGET = re.compile(r"(?:[≤≥<>]|at most|under|over)\s*$")  # a time aimed at, not one measured


def page_durations(text: str) -> list[str]:
    """Durations typed into a hand-written page of the book (book/*.md): outside code blocks,
    not a target ("≤ 10 s"). A page gives a measured time from a generated fragment."""
    text = re.sub(r"(?s)```.*?```", "", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.group(0).strip() for m in TYPED_TIME.finditer(text)
            if not TARGET.search(text[max(0, m.start() - 10):m.start()])]


def book_page_problems(folder: Path) -> list[str]:
    """page_durations of every hand-written page in `folder` (book/)."""
    return [f"{page.name}: typed duration {d!r}; generate it from the manifests (memlib.book)"
            for page in sorted(folder.glob("*.md")) if page.name not in PROJECTIONS
            for d in page_durations(page.read_text(encoding="utf-8"))]


def source_problems(folder: Path) -> list[str]:
    """notebook_problems of the notebooks' sources in `folder` (notebooks/*.py)."""
    return notebook_problems({p.stem: source_cells(p) for p in sorted(folder.glob("[0-9]*.py"))})


def page_problems(driver, page: Path, machine_paths: list[str]) -> list[str]:
    """Every defect of `page` a reader would see, at the desktop width and at a phone's."""
    viewport(driver, DESKTOP)
    open_page(driver, page)
    problems = text_problems(driver.execute_script(PROSE_TEXT), driver.execute_script(ALL_TEXT),
                             machine_paths)
    problems += claims_problems(driver.execute_script(CLAIM_CELLS))
    problems += [f"figure shown at {shown} px of the {meant:.0f} px it was made for, its text "
                 f"under 9 pt: {src}"
                 for src, shown, meant in driver.execute_script(SMALL_IMAGES, COLUMN_PX)]
    problems += [f"caption without a figure above it: {text}"
                 for text in driver.execute_script(BARE_CAPTIONS)]
    problems += [f"figure without a 'Figure N.k.' caption under it: {src}"
                 for src in driver.execute_script(UNCAPTIONED)]
    problems += numbering_problems(driver.execute_script(CAPTION_NUMBERS))
    problems += driver.execute_script(EXERCISES)
    problems += [f"first use not linked to the glossary: {t}"
                 for t in driver.execute_script(UNLINKED_TERMS, glossary_terms())]
    viewport(driver, PHONE)
    open_page(driver, page)
    width = driver.execute_script(PAGE_WIDTH)
    if width > PHONE:
        problems.append(f"lays out {width} px wide on a {PHONE} px screen")
    problems += [f"{kind} cut off on a {PHONE} px screen without a horizontal scroll: {text}"
                 for kind, text in driver.execute_script(CLIPPED)]
    viewport(driver, DESKTOP)
    return [f"{page.name}: {p}" for p in problems]


def pages(html: Path) -> list[Path]:
    """The book's pages: the landing page, the notebooks, the claims, the glossary and the
    results at a glance (Sphinx's own search and index pages left out)."""
    skip = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(p for p in html.rglob("*.html")
                  if p.name not in skip and "_static" not in p.parts
                  and "_sources" not in p.parts)


SLICE = 4000  # CSS px captured at a time: Chromium draws a tall page in slices


def full_page_png(driver) -> bytes:
    """The whole page, however tall, as one PNG: slices captured beyond the viewport through
    the DevTools protocol and stitched."""
    import base64
    import io

    from PIL import Image

    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    width, height = int(size["width"]), int(size["height"])
    page = Image.new("RGB", (width, height), "white")
    for top in range(0, height, SLICE):
        clip = {"x": 0, "y": top, "width": width, "height": min(SLICE, height - top), "scale": 1}
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True, "clip": clip})
        page.paste(Image.open(io.BytesIO(base64.b64decode(shot["data"]))), (0, top))
    out = io.BytesIO()
    page.save(out, format="PNG")
    return out.getvalue()


def screenshots(driver, page: Path, html: Path, shots: Path) -> None:
    """The whole page at the desktop width and at a phone's, as PNG files under `shots`."""
    name = "_".join(page.relative_to(html).with_suffix("").parts)
    for width in (DESKTOP, PHONE):
        viewport(driver, width)
        open_page(driver, page)
        (shots / f"{name}_{width}.png").write_bytes(full_page_png(driver))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/book_render.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html", type=lambda p: Path(p).resolve(),
                        help="the built book, e.g. build/book/html")
    parser.add_argument("--shots", type=Path, help="save screenshots of every page here")
    args = parser.parse_args(argv)
    if not (args.html / "index.html").is_file():
        print(f"book_render: no book at {args.html}; run `make book` first", file=sys.stderr)
        return 2
    import tempfile

    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as profile:
        driver = browser(Path(profile))
        try:
            problems = []
            for page in pages(args.html):
                problems += page_problems(driver, page, [root, str(Path.home())])
                if args.shots:
                    args.shots.mkdir(parents=True, exist_ok=True)
                    screenshots(driver, page, args.html, args.shots)
        finally:
            driver.quit()
    problems += source_problems(Path(root) / "notebooks")
    problems += book_page_problems(Path(root) / "book")
    problems += published_problems(Path(root) / "figures")
    problems += figure_file_problems(Path(root) / "figures")
    print("\n".join(problems) or "book_render: no problems found")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
