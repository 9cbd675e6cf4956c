"""The book under faults: interrupted, built twice at once, fed a damaged notebook or a bad
argument. Each builds a tiny book (one Markdown cell per notebook) in its own folders."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlib import STUDIES

ROOT = Path(__file__).resolve().parent.parent
CLAIM_COLUMNS = "id,scope,statement,paper,measure,rule,fingerprint,headline,ours,verdict," \
                "caveat,where,previous,version"


def publish_tiny_figures(figures: Path) -> None:
    """What `make figures SCALE=smoke` publishes, at its smallest: per notebook an executed
    notebook, its manifest and its claims; and the claims report."""
    for study in STUDIES.values():
        folder = figures / "smoke" / study
        folder.mkdir(parents=True)
        notebook = {"cells": [{"cell_type": "markdown", "id": "title", "metadata": {},
                               "source": f"# {study}\n\nText of {study}."}],
                    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (folder / f"{study}.ipynb").write_text(json.dumps(notebook))
        (folder / "manifest.json").write_text(json.dumps(
            {"wall_seconds": 3.0, "device": "cpu", "data": {}}))
        (folder / "claims.csv").write_text(
            f"{CLAIM_COLUMNS}\nc1,paper,S,,m,r > 0,f,1 ± 0.5 (n=3),,holds,,,,v1\n")
    (figures / "smoke" / "CLAIMS.md").write_text("# Claims report (smoke scale)\n")


@pytest.fixture
def book_env(tmp_path):
    figures, build = tmp_path / "figures", tmp_path / "build"
    publish_tiny_figures(figures)
    return {**os.environ, "PYTHONPATH": str(ROOT), "MEMLIB_FIGURES": str(figures),
            "MEMLIB_BUILD": str(build)}


def book_process(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memlib.book", "--scale", "smoke", *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def build_book(env: dict, *args: str) -> tuple[int, str, str]:
    process = book_process(env, *args)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def html_of(env: dict) -> Path:
    return Path(env["MEMLIB_BUILD"]) / "book" / "smoke" / "html"


def complete(html: Path) -> bool:
    """Every page of the tiny book is there."""
    pages = [html / "index.html", html / "glance.html", html / "glossary.html",
             html / "figures" / "CLAIMS.html",
             *(html / "figures" / s / f"{s}.html" for s in STUDIES.values())]
    return all(p.is_file() and p.stat().st_size > 0 for p in pages)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_ctrl_c_keeps_the_old_book_and_says_so_in_one_line(book_env):
    assert build_book(book_env)[0] == 0
    html = html_of(book_env)
    before = (html / "index.html").read_text()
    process = book_process(book_env)
    book = html.parent
    deadline = time.monotonic() + 120
    while not list(book.glob(".build.*/src/glance.md")):  # Sphinx is about to run
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the whole process group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert one_line(err) == "memlib: interrupted; the book was left as it was"
    assert (html / "index.html").read_text() == before and complete(html)
    assert not list(book.glob(".build.*"))  # its private folder went with it


def test_two_builds_at_once_both_end_with_a_complete_book(book_env):
    first, second = book_process(book_env), book_process(book_env)
    for process in (first, second):
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    assert complete(html_of(book_env))
    assert not list(html_of(book_env).parent.glob(".build.*"))


def test_a_truncated_notebook_is_one_line_naming_it_and_the_book_stays(book_env):
    assert build_book(book_env)[0] == 0
    study = next(iter(STUDIES.values()))
    notebook = Path(book_env["MEMLIB_FIGURES"]) / "smoke" / study / f"{study}.ipynb"
    notebook.write_text(notebook.read_text()[:40])
    code, _, err = build_book(book_env)
    assert code == 1
    assert str(notebook) in one_line(err) and "not a complete notebook" in err
    assert complete(html_of(book_env))


def test_each_damaged_input_is_one_line_naming_the_published_file(book_env, monkeypatch,
                                                                   capsys):
    """A truncated manifest, a claims report or claims table that is not UTF-8, and a full
    disk: one line naming the file where it is published (not a copy), the old book kept."""
    import errno

    from memlib import book

    assert build_book(book_env)[0] == 0
    before = (html_of(book_env) / "index.html").read_text()
    figures = Path(book_env["MEMLIB_FIGURES"]) / "smoke"
    study = next(iter(STUDIES.values()))
    for damaged, damage, what in [
            (figures / study / "manifest.json", lambda b: b[:20], "not a complete manifest"),
            (figures / "CLAIMS.md", lambda b: b + b"\xff\xfe", "not UTF-8 text"),
            (figures / study / "claims.csv", lambda b: b"\xff" + b, "cannot be read")]:
        kept = damaged.read_bytes()
        damaged.write_bytes(damage(kept))
        code, _, err = build_book(book_env)
        assert code == 1
        assert str(damaged) in one_line(err) and what in err
        damaged.write_bytes(kept)
    for name, value in book_env.items():
        monkeypatch.setenv(name, value)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "somewhere")

    monkeypatch.setattr(book.shutil, "copytree", full_disk)
    assert book.main(["--scale", "smoke"]) == 1
    assert one_line(capsys.readouterr().err) == (
        "memlib: could not build the book: no space left on device (somewhere); the previous "
        "book was left as it was")
    assert (html_of(book_env) / "index.html").read_text() == before


def test_a_bad_scale_is_one_line_and_exit_2(book_env):
    code, _, err = build_book(book_env, "--scale", "bogus")
    assert code == 2
    assert "invalid choice: 'bogus'" in one_line(err)
