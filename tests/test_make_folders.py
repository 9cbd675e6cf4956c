"""`make class-kit` and `make clean` use the folders memlib.paths names (MEMLIB_CACHE,
MEMLIB_RESULTS, MEMLIB_BUILD, MEMLIB_FIGURES), spaces included; a class kit carries no file
that runs (admitted by content, not by name) and is written through no planted link; `make
clean` removes only what memlib made; `make figures` with a space in a folder it must name is
one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from memlib import cache, paths

ROOT = Path(__file__).resolve().parent.parent
needs_make = pytest.mark.skipif(not shutil.which("make"), reason="needs make")


def make(target: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    venv = Path(sys.executable).parent.parent
    return subprocess.run(["make", "--no-print-directory", target, f"VENV={venv}",
                           "-o", f"{venv}/.installed"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=300)


def folders(tmp_path: Path) -> dict[str, str]:
    base = tmp_path / "with space"
    return {"MEMLIB_CACHE": str(base / "cache"), "MEMLIB_RESULTS": str(base / "results"),
            "MEMLIB_BUILD": str(base / "build"), "MEMLIB_FIGURES": str(base / "figures")}


def warm_cache(folder: Path) -> None:
    """Two entries, and what a kit must never carry: a compiled kernel, planted libraries (one
    named like an entry) and an executable beside the entries, a checkpoint."""
    (folder / "kernels").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    cache.save(folder / "rlp_run-0123.pt", {"x": 1})
    cache.save(folder / "lens_run-4567.pt", [1.0, 2.0], seconds=3.0)
    (folder / "kernels" / "secular-x.so").write_bytes(b"\x7fELF")
    (folder / "planted.so").write_bytes(b"\x7fELF")
    (folder / "planted.so.1").write_bytes(b"\x7fELF")
    (folder / "probe_run-89ab.pt").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    (folder / "run.sh").write_text("#!/bin/sh\n")
    (folder / "run.sh").chmod(0o755)
    (folder / "checkpoints" / "rlp_run-0123.1.ckpt").write_bytes(b"half")


@needs_make
def test_class_kit_packs_the_configured_cache_into_the_configured_build(tmp_path):
    env = folders(tmp_path)
    empty = make("class-kit", env)
    assert empty.returncode != 0 and f"no results in {env['MEMLIB_CACHE']}" in empty.stderr
    warm_cache(Path(env["MEMLIB_CACHE"]))
    run = make("class-kit", env)
    assert run.returncode == 0, run.stderr
    kit = Path(env["MEMLIB_BUILD"]) / "class-kit.tar.gz"
    with tarfile.open(kit) as tar:
        members = tar.getmembers()
    assert sorted(m.name for m in members) == ["cache/lens_run-4567.pt", "cache/rlp_run-0123.pt",
                                               "kit.json"]
    assert all(m.isfile() and not m.mode & 0o111 for m in members)
    assert not (ROOT / "build" / "class-kit.tar.gz.tmp").exists()


@needs_make
def test_class_kit_writes_through_no_link_planted_at_its_temporary_name(tmp_path):
    env = folders(tmp_path)
    warm_cache(Path(env["MEMLIB_CACHE"]))
    built = Path(env["MEMLIB_BUILD"])
    built.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    for name in (".class-kit.tar.gz.tmp", "class-kit.tar.gz"):
        (built / name).symlink_to(victim)
    run = make("class-kit", env)
    assert run.returncode == 0, run.stderr
    assert victim.read_text() == "mine"
    assert tarfile.is_tarfile(built / "class-kit.tar.gz")
    assert not (built / "class-kit.tar.gz").is_symlink()


@needs_make
def test_clean_removes_the_configured_folders_and_nothing_else(tmp_path):
    env = folders(tmp_path)
    for variable in ("MEMLIB_CACHE", "MEMLIB_BUILD", "MEMLIB_FIGURES"):
        paths.own_dir(Path(env[variable]))  # as memlib makes them: marked as its own
    warm_cache(Path(env["MEMLIB_CACHE"]))
    built = Path(env["MEMLIB_BUILD"])
    for made in (built / "smoke" / "x.ipynb", built / "book" / "html" / "index.html",
                 Path(env["MEMLIB_FIGURES"]) / "smoke" / "CLAIMS.md",
                 Path(env["MEMLIB_FIGURES"]) / "CLAIMS.md"):
        paths.own_dir(made.parent)
        made.write_text("x")
    checkout_cache = sorted((ROOT / "results" / "cache").glob("*")) if (
        ROOT / "results" / "cache").exists() else []
    run = make("clean", env)
    assert run.returncode == 0, run.stderr
    assert not Path(env["MEMLIB_CACHE"]).exists()
    assert not (built / "smoke").exists() and not (built / "book").exists()
    assert not (Path(env["MEMLIB_FIGURES"]) / "smoke").exists()
    assert (Path(env["MEMLIB_FIGURES"]) / "CLAIMS.md").exists()  # the small scale's stay
    if checkout_cache:  # the checkout's own cache is not the configured one: left alone
        assert sorted((ROOT / "results" / "cache").glob("*")) == checkout_cache


@needs_make
@pytest.mark.parametrize("variable", ["MEMLIB_BUILD", "MEMLIB_FIGURES"])
def test_figures_with_a_space_in_its_folders_is_one_line(variable, tmp_path):
    run = make("figures", {variable: str(tmp_path / "a folder")})
    assert run.returncode != 0 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and f"{variable}=" in run.stderr
    assert "has a space" in run.stderr


@needs_make
def test_clean_keeps_what_memlib_did_not_make_in_a_cache_folder(tmp_path):
    """A cache set to a folder of the user's: its entries go, a thesis beside them stays, and
    so does the folder; one line says what was kept."""
    data = tmp_path / "data"
    warm_cache(data)
    (data / "thesis.tex").write_text("\\chapter{mine}")
    run = make("clean", {**folders(tmp_path), "MEMLIB_CACHE": str(data)})
    assert run.returncode == 0, run.stderr
    assert (data / "thesis.tex").read_text() == "\\chapter{mine}"
    assert not (data / "rlp_run-0123.pt").exists() and not (data / "lens_run-4567.pt").exists()
    assert (data / "probe_run-89ab.pt").exists()  # named like an entry, not one: not memlib's
    kept = [line for line in run.stdout.splitlines() if line.startswith("memlib: kept")]
    assert len(kept) == 1 and str(data) in kept[0] and "did not create" in kept[0]


@needs_make
@pytest.mark.parametrize("where", ["working", "repository"])
def test_clean_never_removes_the_working_folder_or_a_repository(where, tmp_path):
    """MEMLIB_CACHE=. from a folder of notes and source (`make clean` run there), or a cache
    set to a repository: nothing in it is removed, and the line says why."""
    here = tmp_path / "notes"
    here.mkdir()
    shutil.copy(ROOT / "Makefile", here / "Makefile")
    (here / "notes.md").write_text("mine")
    (here / "src.py").write_text("x = 1")
    warm_cache(here / "cache")
    paths.own_dir(here / "marked")
    (here / "marked" / paths.MARKER).rename(here / paths.MARKER)  # even one marked as made
    if where == "repository":
        (here / ".git").mkdir()
    venv = Path(sys.executable).parent.parent
    cache_value = "." if where == "working" else str(here)
    run = subprocess.run(["make", "--no-print-directory", "clean", f"VENV={venv}",
                          "-o", f"{venv}/.installed"], cwd=here if where == "working" else ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **folders(tmp_path),
                              "MEMLIB_CACHE": cache_value},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (here / "notes.md").read_text() == "mine" and (here / "src.py").exists()
    assert (here / "cache" / "rlp_run-0123.pt").exists() and (ROOT / "README.md").exists()
    assert "memlib never removes it" in run.stdout
