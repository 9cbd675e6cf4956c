"""A class kit records what its entries' keys depend on (commit, Python and library versions,
platform, CPU dispatch and pins), and `python -m memlib kit-check KIT` says in one line whether
this machine will load it, exiting non-zero and naming what differs when it will not."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from memlib import cache, kit

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def made(tmp_path, monkeypatch) -> Path:
    """A kit of one entry, packed from a cache in tmp_path on this machine."""
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMLIB_BUILD", str(tmp_path / "build"))
    (tmp_path / "cache").mkdir()
    cache.save(tmp_path / "cache" / "rlp_run-0123.pt", {"accuracy": 0.5})  # a real entry
    return kit.class_kit()


def rewritten(path: Path, change) -> Path:
    """A copy of the kit at `path` whose record `change(record)` edited."""
    with tarfile.open(path) as tar:
        record = json.loads(tar.extractfile(kit.RECORD).read())
        entries = [(m, tar.extractfile(m).read()) for m in tar.getmembers()
                   if m.name != kit.RECORD]
    change(record)
    other = path.with_name("other-kit.tar.gz")
    with tarfile.open(other, "w:gz") as tar:
        data = json.dumps(record).encode()
        info = tarfile.TarInfo(kit.RECORD)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for member, content in entries:
            tar.addfile(member, io.BytesIO(content))
    return other


def kit_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memlib", "kit-check", str(path)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=300)


def test_a_kit_records_what_it_was_made_with(made, tmp_path):
    with tarfile.open(made) as tar:
        assert tar.getmembers()[0].name == kit.RECORD
        record = json.loads(tar.extractfile(kit.RECORD).read())
    entry = tmp_path / "cache" / "rlp_run-0123.pt"
    assert record["entries"] == 1 and record["bytes"] == entry.stat().st_size
    assert record["libraries"]["torch"] and record["python"].count(".") == 1
    assert {"commit", "platform", "dispatch", "pins"} <= set(record)


def test_a_kit_made_here_loads_here(made):
    run = kit_check(made)
    assert run.returncode == 0, run.stderr
    assert "will load on this machine" in run.stdout and len(run.stdout.splitlines()) == 1


def test_another_torch_is_named_in_one_line(made):
    def other_torch(record):
        record["libraries"]["torch"] = "1.0.0"

    run = kit_check(rewritten(made, other_torch))
    assert run.returncode == 1 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr
    assert "torch 1.0.0 in the kit" in run.stderr


def test_other_pins_and_another_platform_are_named(made):
    def elsewhere(record):
        record["pins"] = {**record["pins"], "MKL_CBWR": "AUTO"}
        record["platform"] = "darwin arm64"

    line = kit.check(rewritten(made, elsewhere))
    assert not line[0]
    assert "platform darwin arm64 in the kit" in line[1]
    if kit.machine()["pins"]:  # a pinned machine names the pin; an unpinned one the dispatch
        assert "CPU pin MKL_CBWR AUTO in the kit" in line[1]


def test_a_kit_made_without_the_pins_is_named():
    here = kit.machine()
    unpinned = {**here, "dispatch": "native", "pins": {}}
    found = kit.differences(unpinned, here)
    assert found == ([] if here["dispatch"] == "native" else
                     [f"CPU dispatch native in the kit, {here['dispatch']} here"])


def test_what_is_no_kit_is_one_line_and_exit_2(tmp_path):
    not_a_kit = tmp_path / "class-kit.tar.gz"
    not_a_kit.write_bytes(b"not gzip")
    for path in (not_a_kit, tmp_path / "missing.tar.gz"):
        run = kit_check(path)
        assert run.returncode == 2 and len(run.stderr.splitlines()) == 1
        assert "Traceback" not in run.stderr


def test_make_venv_installs_the_pinned_versions():
    """constraints.txt pins every computing library a cache key names, and `make venv`
    installs under it (the kit then loads next week)."""
    from memlib.runs import COMPUTING_LIBRARIES

    pinned = dict(line.split("==", 1) for line in
                  (ROOT / "constraints.txt").read_text().splitlines()
                  if "==" in line and not line.startswith("#"))
    assert set(COMPUTING_LIBRARIES.values()) <= set(pinned)
    assert "memlib" not in pinned
    plan = subprocess.run(["make", "-n", "venv", "VENV=/nonexistent-venv"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60).stdout
    assert "-c constraints.txt -e '.[dev]'" in plan


def test_the_readme_states_the_cold_cost_the_manifests_give():
    from memlib import book

    manifests = [json.loads(p.read_text()) for p in sorted(ROOT.glob("figures/0*/manifest.json"))]
    total = book.duration(sum(book.cold_seconds(m) for m in manifests))
    assert f"`make figures` computes for {total} (the sum of the published" in " ".join(
        (ROOT / "README.md").read_text().split())


@pytest.mark.notebook
def test_the_teachers_page_shows_the_load_measured_from_a_smoke_kit_in_a_fresh_clone(tmp_path):
    """A smoke run fills the cache, `make class-kit` packs it, benchmarks/kit_loads.py's
    measurement unpacks it into a fresh clone and runs the notebook there: nothing is
    computed, and the teachers' page shows exactly the seconds measured."""
    from memlib import book

    stem = "05_memorization_lens"
    cold = subprocess.run([sys.executable, "-m", "memlib", "notebook", f"notebooks/{stem}.py",
                           "--scale", "smoke"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1200)
    assert cold.returncode == 0, cold.stderr
    made = kit.class_kit()
    measured = kit.measure_loads(made, "smoke", [stem])
    assert measured["computed"] == {stem: 0}  # every result came from the kit
    assert json.loads(kit.loads_file("smoke").read_text()) == measured
    loads = book.read_loads("smoke")
    manifest = json.loads((Path(os.environ["MEMLIB_FIGURES"]) / "smoke" / stem
                           / "manifest.json").read_text())
    notebook = json.loads((Path(os.environ["MEMLIB_FIGURES"]) / "smoke" / stem
                           / f"{stem}.ipynb").read_text())
    page = book.teachers_times({stem: notebook}, {stem: manifest}, loads)
    row = next(line for line in page.splitlines() if line.startswith("| 05 |"))
    assert row.endswith(f"| {book.duration(measured['load_seconds'][stem])} |")
