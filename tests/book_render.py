"""Read the built book as a reader sees it, in headless Chromium: what each page shows that it
should not (raw TeX, machine paths, object reprs, cut claims tables, literal Markdown links),
whether it fits a phone's width, and whether its figures are shown large enough to read.

As a script it checks every page of a built book and saves a screenshot of each at 1300 px
and at 390 px:

    python tests/book_render.py build/book/html --shots build/book/shots
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

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
REPRS = re.compile(r"PosixPath\(|Estimate\(|\w+\.\w+\.run/|<IPython\.core")
ELLIPSIS = re.compile(r"(…|\.\.\.)$")

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
# high-resolution image declares its size) or else its natural width
SMALL_IMAGES = """
return [...document.querySelectorAll('main img')]
  .filter(i => i.complete && i.naturalWidth > 0)
  .map(i => [i.getAttribute('src').slice(0, 80), i.clientWidth,
             parseFloat(i.getAttribute('width')) || parseFloat(i.style.width)
             || i.naturalWidth])
  .filter(([src, shown, meant]) => shown < meant / 2);
"""
MATHJAX_DONE = """
const done = arguments[arguments.length - 1];
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => done(true), () => done(false));
} else { done(true); }
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
    problems += [f"machine path {path}: …{text[i - 20:i + 60]}…"
                 for path in machine_paths if path and (i := text.find(path)) >= 0]
    return problems


def context(text: str, match: re.Match, width: int = 30) -> str:
    return text[max(0, match.start() - width):match.end() + width].replace("\n", " ")


def claims_problems(cells: list[str]) -> list[str]:
    return [f"claims table cell cut short: {c[-80:]!r}" for c in cells if ELLIPSIS.search(c)]


def page_problems(driver, page: Path, machine_paths: list[str]) -> list[str]:
    """Every defect of `page` a reader would see, at the desktop width and at a phone's."""
    viewport(driver, DESKTOP)
    open_page(driver, page)
    problems = text_problems(driver.execute_script(PROSE_TEXT), driver.execute_script(ALL_TEXT),
                             machine_paths)
    problems += claims_problems(driver.execute_script(CLAIM_CELLS))
    problems += [f"image shown at {shown} px of the {meant:.0f} px it was made for: {src}"
                 for src, shown, meant in driver.execute_script(SMALL_IMAGES)]
    viewport(driver, PHONE)
    open_page(driver, page)
    width = driver.execute_script(PAGE_WIDTH)
    if width > PHONE:
        problems.append(f"lays out {width} px wide on a {PHONE} px screen")
    viewport(driver, DESKTOP)
    return [f"{page.name}: {p}" for p in problems]


def pages(html: Path) -> list[Path]:
    """The book's pages: the landing page, the notebooks, the claims, the glossary and the
    results at a glance (Sphinx's own search and index pages left out)."""
    skip = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(p for p in html.rglob("*.html")
                  if p.name not in skip and "_static" not in p.parts
                  and "_sources" not in p.parts)


def screenshots(driver, page: Path, html: Path, shots: Path) -> None:
    """The whole page at the desktop width and at a phone's, as PNG files under `shots`."""
    name = "_".join(page.relative_to(html).with_suffix("").parts)
    for width in (DESKTOP, PHONE):
        viewport(driver, width)
        open_page(driver, page)
        height = driver.execute_script("return document.documentElement.scrollHeight;")
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": min(height, 16000), "deviceScaleFactor": 1,
            "mobile": width < 600})
        (shots / f"{name}_{width}.png").write_bytes(driver.get_screenshot_as_png())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/book_render.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html", type=Path, help="the built book, e.g. build/book/html")
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
    print("\n".join(problems) or "book_render: no problems found")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
