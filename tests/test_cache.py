import pickle

import pandas as pd
import pytest
import torch

from memlib import cache


def test_compute_once_then_load():
    calls = []

    def compute():
        calls.append(1)
        return {"w": torch.arange(3.0), "df": pd.DataFrame({"a": [1, 2]}), "n": 3}

    first = cache.cached("exp", {"seed": 0}, compute)
    second = cache.cached("exp", {"seed": 0}, compute)
    assert len(calls) == 1
    assert torch.equal(first["w"], second["w"])
    pd.testing.assert_frame_equal(first["df"], second["df"])
    cache.cached("exp", {"seed": 1}, compute)
    cache.cached("exp", {"seed": 0}, compute, code="edited")
    assert len(calls) == 3


def test_corrupted_entry_is_recomputed():
    cache.cached("exp", {"a": 1}, lambda: torch.ones(4))
    path = cache.entry_path("exp", {"a": 1})
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupted"):
        cache.load(path)
    with pytest.warns(UserWarning, match="recomputing"):
        value = cache.cached("exp", {"a": 1}, lambda: torch.zeros(4))
    assert torch.equal(value, torch.zeros(4))
    assert torch.equal(cache.load(path), torch.zeros(4))


def test_truncated_entry_is_detected(tmp_path):
    path = tmp_path / "x.pt"
    cache.save(path, {"a": torch.ones(100)})
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(ValueError):
        cache.load(path)


def test_failed_compute_leaves_no_entry():
    def boom():
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        cache.cached("exp", {"b": 2}, boom)
    assert not cache.entry_path("exp", {"b": 2}).exists()


def test_atomic_write_leaves_no_temp_files(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    cache.atomic_write_bytes(target, b"old")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache.os, "replace", failing_replace)
    with pytest.raises(OSError):
        cache.atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_loading_refuses_arbitrary_objects(tmp_path):
    import argparse
    import hashlib
    import io

    buffer = io.BytesIO()
    torch.save(argparse.Namespace(a=1), buffer)  # an arbitrary class, not a tensor container
    payload = buffer.getvalue()
    path = tmp_path / "evil.pt"
    path.write_bytes(payload + hashlib.sha256(payload).digest())
    with pytest.raises(pickle.UnpicklingError):
        cache.load(path)


def test_written_files_are_readable_by_others(tmp_path):
    import os

    target = tmp_path / "table.csv"
    cache.atomic_write_bytes(target, b"a,b\n")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_only_cached_reads_hits_and_names_the_command_on_a_miss():
    cache.cached("exp", {"a": 1}, lambda: torch.ones(2))
    calls = []
    with cache.only_cached("memlib run exp --scale full"):
        assert torch.equal(cache.cached("exp", {"a": 1}, lambda: calls.append(1)), torch.ones(2))
        with pytest.raises(cache.MissingResultError, match="memlib run exp --scale full"):
            cache.cached("exp", {"a": 2}, lambda: calls.append(1))
    assert not calls
    assert torch.equal(cache.cached("exp", {"a": 2}, lambda: torch.zeros(1)), torch.zeros(1))


def test_code_version_ignores_the_claims_section(tmp_path):
    import types

    def module(source: str):
        path = tmp_path / f"m{abs(hash(source))}.py"
        path.write_text(source)
        return types.SimpleNamespace(__file__=str(path))

    runs = "def run():\n    return 1\n"
    a = cache.code_version(module(runs + "\n# --- claims ---\nRULE = 1\n"))
    b = cache.code_version(module(runs + "\n# --- claims ---\nRULE = 2\n"))
    c = cache.code_version(module(runs.replace("1", "2") + "\n# --- claims ---\nRULE = 1\n"))
    assert a == b != c


def test_prefetch_fills_the_cache_with_what_a_serial_call_computes(tmp_path, monkeypatch):
    from memlib import rlp
    from memlib.config import build

    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path))
    config = build(rlp.Config, dict(dataset="digits", train_samples=100, test_samples=50,
                                    widths=(8, 8), epochs=1, layer_models=("mlp",)))
    specs = [rlp.spec(config, seed=k) for k in (0, 1)]
    cache.prefetch([(rlp.cached_run, s) for s in specs] * 2, processes=2)  # duplicates once
    assert len(list(tmp_path.glob("rlp_run-*.pt"))) == 2
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers
    try:
        for s in specs:
            pd.testing.assert_frame_equal(rlp.cached_run(s)["history"],
                                          rlp.train_run(s)["history"])
    finally:
        torch.set_num_threads(threads)
