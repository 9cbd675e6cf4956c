"""Less work per run, the same bits: each saving computes what it replaced, bit for bit."""

from __future__ import annotations

import pytest
import torch
from parallel_runs_check import bits
from tiny import tiny

from memlib import cache, seed
from memlib.studies import rlp
from memlib.studies.rlp import method


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


@pytest.mark.parametrize("model", ["smallcnn", "wrn"])
def test_evaluation_in_chunks_gives_the_same_bits(model, monkeypatch):
    """A whole training run, its measurements, features and predictions from evaluation
    forwards of 16 images at a time against whole batches: the same stored bits."""
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   validation_samples=100, epochs=2, model=model,
                                   layer_models=(model,), cnn_channels=(4, 8, 8),
                                   wrn_depth=10, wrn_width=1, noise=0.2))
    spec = rlp.spec(config)
    runs = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for chunk in (16, 10**9):
            monkeypatch.setattr(method, "EVAL_CHUNK", chunk)
            runs[chunk] = rlp.train_run(spec)
    finally:
        torch.set_num_threads(threads)
    assert stored(runs[16]) == stored(runs[10**9])


def test_only_convolutional_models_are_chunked(monkeypatch):
    from memlib import models

    monkeypatch.setattr(method, "EVAL_CHUNK", 4)
    calls = []
    for name in ("smallcnn", "mlp"):
        model = models.build(name, 10, (1, 28, 28)).eval()
        model.register_forward_hook(lambda m, i, o: calls.append(len(i[0])))
        with torch.no_grad():
            logits, pooled = method.eval_forward(model, torch.randn(10, 1, 28, 28))
        assert logits.shape == (10, 10) and pooled == {}
    assert calls == [4, 4, 2, 10]
