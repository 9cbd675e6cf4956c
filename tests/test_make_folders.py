"""`make class-kit` and `make clean` use the folders memlib.paths names (MEMLIB_CACHE,
MEMLIB_RESULTS, MEMLIB_BUILD, MEMLIB_FIGURES), spaces included; a class kit carries no file
that runs; `make figures` with a space in a folder it must name is one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

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


def warm_cache(cache: Path) -> None:
    """Two entries, and what a kit must never carry: a compiled kernel, a planted library and
    an executable beside the entries, a checkpoint."""
    (cache / "kernels").mkdir(parents=True)
    (cache / "checkpoints").mkdir()
    (cache / "rlp_run-0123.pt").write_bytes(b"entry")
    (cache / "lens_run-4567.pt").write_bytes(b"entry")
    (cache / "kernels" / "secular-x.so").write_bytes(b"\x7fELF")
    (cache / "planted.so").write_bytes(b"\x7fELF")
    (cache / "run.sh").write_text("#!/bin/sh\n")
    (cache / "run.sh").chmod(0o755)
    (cache / "checkpoints" / "rlp_run-0123.1.ckpt").write_bytes(b"half")


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
def test_clean_removes_the_configured_folders_and_nothing_else(tmp_path):
    env = folders(tmp_path)
    warm_cache(Path(env["MEMLIB_CACHE"]))
    built = Path(env["MEMLIB_BUILD"])
    for made in (built / "smoke" / "x.ipynb", built / "book" / "html" / "index.html",
                 Path(env["MEMLIB_FIGURES"]) / "smoke" / "CLAIMS.md",
                 Path(env["MEMLIB_FIGURES"]) / "CLAIMS.md"):
        made.parent.mkdir(parents=True, exist_ok=True)
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
