"""Less work per run, the same bits: each saving computes what it replaced, bit for bit."""

from __future__ import annotations

import pytest
import torch
from parallel_runs_check import bits
from tiny import tiny

from memlib import cache, seed
from memlib.studies import rlp


def test_bits_tell_apart_what_equality_does_not():
    assert bits(torch.tensor([0.0])) != bits(torch.tensor([-0.0]))
    assert bits(float("nan")) != bits(-float("nan"))
    assert bits({"a": [1.0, torch.ones(2)]}) == bits({"a": [1.0, torch.ones(2)]})


def stored(result: dict) -> bytes:
    """What the cache would store of a run's result, as bits (its wall-clock columns left
    out: they differ from one run to the next)."""
    value = cache._encode(result)
    frames = [k for k, v in value.items() if isinstance(v, dict) and cache._FRAME in v]
    for k in frames:
        value[k] = {cache._FRAME: {c: col for c, col in value[k][cache._FRAME].items()
                                   if "second" not in c}}
    return bits({k: v for k, v in value.items() if "second" not in k})


@pytest.mark.parametrize("model", ["smallcnn", "mlp"])
def test_new_tensors_left_unfilled_give_the_same_bits(model, monkeypatch):
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   validation_samples=100, epochs=2, model=model,
                                   layer_models=(model,), widths=(16, 16),
                                   cnn_channels=(4, 8, 8), noise=0.2))
    spec = rlp.spec(config)
    runs = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for fill in (True, False):
            monkeypatch.setattr(seed, "FILL_UNINITIALIZED_MEMORY", fill)
            runs[fill] = rlp.train_run(spec)
            assert torch.utils.deterministic.fill_uninitialized_memory is fill
    finally:
        torch.set_num_threads(threads)
    assert stored(runs[True]) == stored(runs[False])


def test_memlib_leaves_new_tensors_unfilled_in_deterministic_mode():
    seed.seed_everything(0)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.utils.deterministic.fill_uninitialized_memory is False
