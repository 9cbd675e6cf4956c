"""A study's run with two worker processes against the same run computed in this process
alone: the check that the studies' tests share."""

import dataclasses
import io
import math
import struct

import pandas as pd
import torch

from memlib import cache
from memlib import parallel as pool
from memlib.runs import missing


def assert_same(a, b, where: str = "results", clocks: frozenset = frozenset()) -> None:
    """Equal bit for bit: frames, tensors, numbers (NaN equals NaN) and containers of them,
    except frame columns named in `clocks` (wall-clock seconds)."""
    assert type(a) is type(b), where
    if isinstance(a, pd.DataFrame):
        a, b = (x.drop(columns=[c for c in x.columns if c in clocks]) for x in (a, b))
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]", clocks)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]", clocks)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def entries(folder) -> set[str]:
    return {p.name for p in folder.glob("*.pt")}


def bits(value) -> bytes:
    """Every leaf of a stored value as its bits, in order: a tensor's dtype, shape and memory,
    a float's IEEE bytes (NaN's sign and payload included), any other leaf its type and repr;
    wall-clock fields (dict keys and table columns naming seconds) left out.
    Not torch's serialisation itself: pickle shares one object met twice, and which objects
    are one depends on how the process built them, not on what they hold."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        return (f"T{t.dtype}{tuple(t.shape)}".encode()
                + t.view(-1).view(torch.uint8).numpy().tobytes())
    if isinstance(value, float):
        return b"F" + struct.pack("<d", value)
    if isinstance(value, dict):  # a clock (a key naming seconds) differs run to run
        return b"D" + b"".join(bits(k) + bits(v) for k, v in value.items()
                               if not (isinstance(k, str) and "seconds" in k)) + b"E"
    if isinstance(value, (list, tuple)):
        return type(value).__name__[0].encode() + b"".join(map(bits, value)) + b"E"
    return f"{type(value).__name__}:{value!r}".encode()


def stored_bytes(path) -> bytes:
    """The bits of what cache entry `path` stores, without the seconds its computation took
    (which differ from one computation to the next)."""
    assert cache.intact(path), path
    stored = torch.load(io.BytesIO(path.read_bytes()[:-32]), weights_only=True)
    return bits(stored.get(cache._TIMED, {}).get("value", stored))


def assert_same_entries(a, b) -> None:
    """Cache folders `a` and `b` hold the same entries, each storing the same bytes."""
    assert entries(a) == entries(b)
    differ = [name for name in sorted(entries(a))
              if stored_bytes(a / name) != stored_bytes(b / name)]
    assert not differ, f"{len(differ)} of {len(entries(a))} entries differ, e.g. {differ[0]}"


def check_parallel_runs(module, config, tmp_path, monkeypatch, clocks=frozenset(),
                        every_entry_top_level: bool = True) -> None:
    """`module.run` with 2 workers (its `parallel_runs` left to its default, MEMLIB_WORKERS=2)
    has its worker processes compute every planned result: this process then computes nothing
    and loads exactly the entries they wrote, which are those of a run computed in this
    process (MEMLIB_WORKERS=1: the same keys), each storing the same bytes, with the same
    results (but for the wall-clock columns `clocks`). `every_entry_top_level`: the study's run
    calls every entry itself (so the ledger names them all), none only inside another's
    computation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as below full scale, and in the workers
    config = dataclasses.replace(config, parallel_runs=None)  # the default: as many as given
    try:
        monkeypatch.setenv("MEMLIB_WORKERS", "1")
        monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "serial"))
        serial = module.run(config)
        monkeypatch.setenv("MEMLIB_WORKERS", "2")
        monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "parallel"))
        plan = module.planned_runs(config)
        assert missing(plan) == plan  # every planned call computes something
        computed = cache.computed_count()  # what this process computed itself
        monkeypatch.setattr(pool, "COMPUTES_HERE", False)  # every run in a worker
        cache.ledger.clear()
        parallel = module.run(config)
        assert cache.computed_count() == computed, "computed here, not in the workers"
        assert entries(tmp_path / "parallel") == entries(tmp_path / "serial"), (
            entries(tmp_path / "parallel") ^ entries(tmp_path / "serial"))
        ledger = set(cache.ledger)
        assert ledger <= entries(tmp_path / "parallel")
        assert ledger == entries(tmp_path / "parallel") or not every_entry_top_level, sorted(
            entries(tmp_path / "parallel") - ledger)
        assert_same_entries(tmp_path / "parallel", tmp_path / "serial")
        assert_same(parallel, serial, clocks=frozenset(clocks))
    finally:
        torch.set_num_threads(threads)
