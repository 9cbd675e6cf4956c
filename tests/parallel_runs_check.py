"""A study's run with parallel_runs=2 against the same run computed in this process alone:
the check that the studies' tests share."""

import dataclasses
import math

import pandas as pd
import torch

from memlib import cache
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


def check_parallel_runs(module, config, tmp_path, monkeypatch, clocks=frozenset()) -> None:
    """`module.run` with parallel_runs=2 has its worker processes compute every planned result:
    this process then computes nothing and loads exactly the entries they wrote, which are
    those of a run computed in this process (the same keys), with the same results (but for
    the wall-clock columns `clocks`)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as below full scale, and in the workers
    try:
        monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "serial"))
        serial = module.run(dataclasses.replace(config, parallel_runs=1))
        monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "parallel"))
        config = dataclasses.replace(config, parallel_runs=2)
        plan = module.planned_runs(config)
        assert missing(plan) == plan  # every planned call computes something
        computed = cache.activity["computed"]
        cache.ledger.clear()
        parallel = module.run(config)
        assert cache.activity["computed"] == computed, "computed here, not in the workers"
        assert set(cache.ledger) == entries(tmp_path / "parallel") == entries(tmp_path / "serial")
        assert_same(parallel, serial, clocks=frozenset(clocks))
    finally:
        torch.set_num_threads(threads)
