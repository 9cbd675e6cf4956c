import os
import pickle
from pathlib import Path

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
    cache.cached("other", {"seed": 0}, compute)
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


def test_only_cached_reads_hits_and_names_the_command_on_a_miss():
    cache.cached("exp", {"a": 1}, lambda: torch.ones(2))
    calls = []
    with cache.only_cached("memlib run exp --scale full"):
        assert torch.equal(cache.cached("exp", {"a": 1}, lambda: calls.append(1)), torch.ones(2))
        with pytest.raises(cache.MissingResultError, match="memlib run exp --scale full"):
            cache.cached("exp", {"a": 2}, lambda: calls.append(1))
    assert not calls
    assert torch.equal(cache.cached("exp", {"a": 2}, lambda: torch.zeros(1)), torch.zeros(1))


def test_intact_reads_the_digest_not_just_the_path(tmp_path):
    path = tmp_path / "x.pt"
    assert not cache.intact(path)
    cache.save(path, {"a": torch.ones(3)})
    assert cache.intact(path)
    data = bytearray(path.read_bytes())
    data[5] ^= 0xFF
    path.write_bytes(bytes(data))
    assert path.exists() and not cache.intact(path)
    path.write_bytes(b"")
    assert not cache.intact(path)


def test_prefetch_fills_the_cache_with_what_a_serial_call_computes(tmp_path, monkeypatch):
    from tiny import tiny

    from memlib.parallel import prefetch
    from memlib.studies import rlp

    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path))
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=100, test_samples=50,
                                   widths=(8, 8), epochs=1, layer_models=("mlp",)))
    specs = [rlp.spec(config, seed=k) for k in (0, 1)]
    prefetch([(rlp.cached_run, s) for s in specs] * 2, processes=2)  # duplicates once
    assert len(list(tmp_path.glob("rlp_run-*.pt"))) == 2
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers
    try:
        for s in specs:
            pd.testing.assert_frame_equal(rlp.cached_run(s)["history"],
                                          rlp.train_run(s)["history"])
    finally:
        torch.set_num_threads(threads)


def record_pid(path: Path) -> None:
    path.write_text(str(os.getpid()))


def test_this_process_computes_beside_its_workers_only_on_one_thread(tmp_path):
    """On one thread, as its workers compute, this process takes runs too (the first at once:
    no worker has started yet); on more threads its bits could differ from theirs, and the
    workers compute every run. Each run is computed once."""
    from memlib.parallel import prefetch

    paths = [tmp_path / str(k) for k in range(6)]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        prefetch([(record_pid, p) for p in paths[:3]], processes=2)
        torch.set_num_threads(2)
        prefetch([(record_pid, p) for p in paths[3:]], processes=2)
    finally:
        torch.set_num_threads(threads)
    pids = [int(p.read_text()) for p in paths]
    assert os.getpid() in pids[:3] and os.getpid() not in pids[3:], pids


def fail_or_record(path: Path) -> None:
    import time

    if path.name == "fails":
        raise ValueError("this run fails")
    time.sleep(1)
    path.write_text("done")


def test_a_workers_error_is_raised_and_starts_no_more_runs(tmp_path, monkeypatch):
    from memlib import parallel

    monkeypatch.setattr(parallel, "COMPUTES_HERE", False)
    paths = [tmp_path / "fails", *(tmp_path / str(k) for k in range(6))]
    with pytest.raises(ValueError, match="this run fails"):
        parallel.prefetch([(fail_or_record, p) for p in paths], processes=2)
    assert len(list(tmp_path.glob("[0-9]"))) <= 2  # those started beside the failing one


def test_uncached_keeps_the_calls_that_would_compute():
    from memlib.parallel import uncached

    def ones(n: int):
        return cache.cached("exp", {"n": n}, lambda: torch.ones(n))

    ones(1)
    counts = cache.activity.copy()
    assert uncached([(ones, 1), (ones, 2)]) == [(ones, 2)]
    assert not cache.entry_path("exp", {"n": 2}).exists()  # only tried, not computed
    assert cache.activity == counts  # trying is not loading


def test_prefetch_starts_no_workers_where_nothing_may_be_computed():
    from memlib.parallel import can_prefetch

    assert can_prefetch(2) and not can_prefetch(1)
    with cache.only_cached("memlib run exp --scale full"):
        assert not can_prefetch(2)  # the workers would compute what only_cached forbids


@pytest.fixture
def timed(tmp_path, monkeypatch):
    """(clock, ledger): a clock that only the computations advance (exact seconds) and the
    ledger file the cache notes its top-level entries in."""
    import types

    clock = [0.0]
    monkeypatch.setattr(cache, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(cache.LEDGER_VARIABLE, str(ledger))
    return clock, ledger


def test_entries_keep_their_cold_compute_seconds(timed):
    clock, ledger = timed

    def inner():
        clock[0] += 2.0
        return torch.ones(1)

    def outer():
        clock[0] += 1.0
        return cache.cached("inner", {}, inner) + 1

    cache.cached("outer", {}, outer)
    seconds = {name: cache.load_timed(cache.entry_path(name, {}))[1]
               for name in ("inner", "outer")}
    assert seconds == {"inner": 2.0, "outer": 3.0}
    assert cache.own_seconds(cache.entry_path("outer", {})) == 1.0  # without the inner's 2
    cache.cached("outer", {}, outer, refresh=True)  # the inner entry now loads at once
    assert cache.load_timed(cache.entry_path("outer", {}))[1] == 3.0  # still its cold cost
    outer_name = cache.entry_path("outer", {}).name
    assert cache.read_ledger(ledger) == {outer_name: 3.0}  # calls outside a computation only
    assert cache.ledger[outer_name] == 3.0


def test_an_entry_used_alone_and_inside_another_costs_once(timed, tmp_path):
    """A run read on its own and by the probes computed from it: the ledger's cost counts the
    run once, and the probes' own seconds beside it; each entry keeps its full cold cost."""
    from memlib.provenance import compute_cost

    clock, ledger = timed

    def run():
        clock[0] += 5.0
        return torch.ones(1)

    def probes():
        clock[0] += 1.0
        return cache.cached("run", {}, run) * 2

    def report():  # a computation two levels up: what it used, it used however deep
        clock[0] += 0.5
        return cache.cached("probes", {}, probes) + 1

    cache.cached("run", {}, run)  # read on its own, then by its probes (computed, not loaded)
    cache.cached("probes", {}, probes)
    name = {n: cache.entry_path(n, {}).name for n in ("run", "probes", "report")}
    assert cache.read_ledger(ledger) == {name["run"]: 5.0, name["probes"]: 6.0}
    assert cache.ledger_seconds(ledger) == {name["run"]: 5.0, name["probes"]: 1.0}
    assert compute_cost(ledger)["compute_seconds"] == 6.0  # not 11: the run counts once
    cache.cached("report", {}, report)
    assert cache.ledger_seconds(ledger) == {name["run"]: 5.0, name["probes"]: 1.0,
                                            name["report"]: 0.5}
    assert cache.load_timed(cache.entry_path("report", {}))[1] == 6.5  # its full cold cost
    # an entry stored before own seconds were recorded counts all its seconds, as before
    (tmp_path / "old").write_text('{"entry": "x", "seconds": 3.0}\n')
    assert cache.ledger_seconds(tmp_path / "old") == {"x": 3.0}


def test_entries_without_a_time_load_with_none(tmp_path):
    cache.save(tmp_path / "plain.pt", {"a": torch.ones(2)})
    value, seconds = cache.load_timed(tmp_path / "plain.pt")
    assert torch.equal(value["a"], torch.ones(2)) and seconds is None
    (tmp_path / "ledger").write_text('{"entry": "x", "seconds": null}\nnot json\n')
    assert cache.read_ledger(tmp_path / "ledger") == {"x": None}
