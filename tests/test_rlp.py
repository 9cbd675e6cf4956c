"""memlib.rlp: random labels, stable penalty, gradient routing, regularizer effect, config."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from memlib import rlp
from memlib.config import ConfigError, build
from memlib.models import MLP, SmallCNN, taps
from memlib.train import TensorBatches, TrainSpec, train


def tiny_setup(n=64, d=6, seed=0, widths=(16, 16)):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    torch.manual_seed(seed)
    model = MLP(d, widths, 3)
    layers = model.probe_layers
    heads = rlp.RLPHeads(rlp.feature_dims(model, layers, x), 4)
    return x, y, model, heads


# --- random labels ------------------------------------------------------------------------


def test_random_labels_fixed_per_index_across_epochs_and_subsets():
    labels = rlp.random_labels(100, 5, seed=7)
    assert torch.equal(labels, rlp.random_labels(100, 5, seed=7))
    assert not torch.equal(labels, rlp.random_labels(100, 5, seed=8))
    assert labels.min() >= 0 and labels.max() < 5
    # a subset keeps each sample's label: index the full table with original indices
    subset = torch.tensor([3, 17, 42, 99])
    assert torch.equal(labels[subset], rlp.random_labels(100, 5, seed=7)[subset])
    # shuffled batches: the label seen for a sample is the same in every epoch
    x = torch.arange(100.0)[:, None]
    seen: dict[int, int] = {}
    loader = TensorBatches(x, torch.zeros(100, dtype=torch.long), 16, seed=0)
    for _ in range(3):
        for xb, _, idx in loader:
            for value, label in zip(xb[:, 0].long().tolist(), labels[idx].tolist(), strict=True):
                assert seen.setdefault(value, label) == label
    assert len(seen) == 100


def test_random_labels_do_not_touch_global_rng():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    rlp.random_labels(50, 10, seed=1)
    assert torch.equal(torch.rand(3), expected)


def test_load_data_keys_random_labels_by_original_index():
    from memlib import data

    split = data.load("digits", "train")
    config = build(rlp.Config, dict(dataset="digits", train_samples=500, test_samples=100))
    full = rlp.random_labels(len(split), 10, config.label_seed)
    for overrides in ({}, {"fraction": 0.3}, {"long_tail_ratio": 5.0}, {"noise": 0.4}):
        d = rlp.load_data(rlp.spec(config, **overrides))
        assert torch.equal(d["random"], full[d["index"]])
        assert torch.equal(d["clean_y"], split.y[d["index"]])
    noisy = rlp.load_data(rlp.spec(config, noise=0.4))
    assert (noisy["y"] != noisy["clean_y"]).float().mean() > 0.2


# --- the stable penalty ---------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 12), st.integers(1, 8), st.floats(0.1, 8.0), st.integers(0, 10_000))
def test_log1m_softmax_matches_naive_where_finite(classes, rows, scale, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, classes, generator=g, dtype=torch.float64) * scale
    target = torch.randint(0, classes, (rows,), generator=g)
    naive = torch.log1p(-logits.softmax(1).gather(1, target[:, None])[:, 0])
    stable = rlp.log1m_softmax(logits, target)
    finite = torch.isfinite(naive)
    assert torch.allclose(stable[finite], naive[finite], atol=1e-9)
    assert torch.all(stable <= 0)


def test_log1m_softmax_stays_finite_when_probability_is_one():
    logits = torch.tensor([[200.0, 0.0, 0.0]])
    naive = torch.log1p(-logits.softmax(1)[:, 0])
    assert torch.isinf(naive).all()
    stable = rlp.log1m_softmax(logits, torch.tensor([0]))
    assert torch.isfinite(stable).all() and stable.item() == pytest.approx(-200 + 0.6931, abs=1e-3)
    logits.requires_grad_(True)
    rlp.rlp_penalty(logits, torch.tensor([0])).backward()
    assert torch.isfinite(logits.grad).all()


def test_penalty_gradient_lowers_target_probability():
    logits = torch.randn(5, 4, requires_grad=True)
    target = torch.tensor([0, 1, 2, 3, 0])
    rlp.rlp_penalty(logits, target).backward()
    stepped = logits.detach() - 0.5 * logits.grad
    before = logits.softmax(1).gather(1, target[:, None])
    after = stepped.softmax(1).gather(1, target[:, None])
    assert torch.all(after < before)


# --- gradient routing ------------------------------------------------------------------------


def grads(module):
    return {n: p.grad for n, p in module.named_parameters()}


def test_l_rnd_reaches_only_the_heads():
    x, _, model, heads = tiny_setup()
    r = torch.randint(0, 4, (len(x),))
    with taps(model, heads.layers) as outs:
        model(x)
    l_rnd, l_reg = rlp.rlp_losses(outs, heads, r, reg_layers=())
    assert l_reg.item() == 0
    l_rnd.backward()
    assert all(g is None for g in grads(model).values())
    assert all(g is not None and g.abs().sum() > 0 for g in grads(heads).values())


@pytest.mark.parametrize("reg_layers", [("act2",), ("act1", "act2")])
def test_l_reg_reaches_only_the_extractor(reg_layers):
    x, _, model, heads = tiny_setup()
    r = torch.randint(0, 4, (len(x),))
    with taps(model, heads.layers) as outs:
        model(x)
    _, l_reg = rlp.rlp_losses(outs, heads, r, reg_layers)
    l_reg.backward()
    assert all(g is None for g in grads(heads).values())
    # the task head `out` sits after the last probe: no gradient; the extractor has one
    assert grads(model)["out.weight"] is None
    assert grads(model)["fc1.weight"].abs().sum() > 0
    if reg_layers == ("act1",):
        assert grads(model)["fc2.weight"] is None


def test_full_step_routes_each_loss_exactly():
    """Total gradient = class-loss gradient on the model, L_rnd gradient on the heads, plus
    λ L_reg on the model only: compared with separately computed pieces."""
    x, y, model, heads = tiny_setup()
    r = torch.randint(0, 4, (len(x),))
    idx = torch.arange(len(x))
    lam = 3.0
    rlp.rlp_step(heads, r, lam, ("act2",))(model, (x, y, idx)).backward()
    total_model = {n: p.grad.clone() for n, p in model.named_parameters()}
    total_heads = {n: p.grad.clone() for n, p in heads.named_parameters()}
    for p in [*model.parameters(), *heads.parameters()]:
        p.grad = None
    with taps(model, heads.layers) as outs:
        logits = model(x)
    l_rnd, l_reg = rlp.rlp_losses(outs, heads, r, ("act2",))
    expected_model = torch.autograd.grad(F.cross_entropy(logits, y) + lam * l_reg,
                                         list(model.parameters()), retain_graph=True)
    expected_heads = torch.autograd.grad(l_rnd, list(heads.parameters()))
    for (name, g), e in zip(total_model.items(), expected_model, strict=True):
        assert torch.allclose(g, e, atol=1e-6), name
    for (name, g), e in zip(total_heads.items(), expected_heads, strict=True):
        assert torch.allclose(g, e, atol=1e-6), name


def test_heads_attach_by_module_name_to_conv_and_timm_models():
    x = torch.rand(4, 1, 28, 28)
    cnn = SmallCNN(1, 10, channels=(4, 8, 8))
    dims = rlp.feature_dims(cnn, ("block1", "block3"), x)
    assert dims == {"block1": 4, "block3": 8}
    from memlib.models import vit

    model = vit("vit_tiny", 10, 28, 1)
    heads = rlp.RLPHeads(rlp.feature_dims(model, model.probe_layers, x), 5)
    assert heads.head("blocks.0").in_features == 64
    loss = rlp.rlp_step(heads, torch.randint(0, 5, (4,)), 1.0, model.probe_layers)(
        model, (x, torch.randint(0, 10, (4,)), torch.arange(4)))
    loss.backward()
    with pytest.raises(ValueError, match="unknown layer"):
        rlp.feature_dims(cnn, ("nope",), x)


def test_mlp_head_has_no_batchnorm():
    head = rlp.make_head(8, 3, hidden=16)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in head.modules())
    assert head(torch.randn(2, 8)).shape == (2, 3)


# --- the regularizer's effect ----------------------------------------------------------------


def train_tiny(lam):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=g)
    y = (x[:, 0] > 0).long()
    r = rlp.random_labels(96, 2, seed=3)
    torch.manual_seed(0)
    model = MLP(8, (64, 64), 2)
    heads = rlp.RLPHeads(rlp.feature_dims(model, ("act2",), x), 2)
    spec = TrainSpec(epochs=60, batch_size=None, lr=1e-2)
    opts = [torch.optim.Adam(model.parameters(), lr=1e-2),
            torch.optim.Adam(heads.parameters(), lr=3e-2)]
    train(model, (x, y), spec, step=rlp.rlp_step(heads, r, lam, ("act2",)), optimizers=opts)
    return rlp.measure(model, heads, x, y, r)


def test_positive_lambda_lowers_head_accuracy_on_a_tiny_problem():
    plain, regularized = train_tiny(0.0), train_tiny(10.0)
    assert plain["rlp_act2"] > 0.7  # the head memorizes 96 random bits from 64 features
    assert regularized["rlp_act2"] < plain["rlp_act2"] - 0.1


def test_measure_and_per_class_accuracy():
    x, y, model, heads = tiny_setup()
    r = torch.randint(0, 4, (len(x),))
    out = rlp.measure(model, heads, x, y, r, batch_size=10)
    assert set(out) == {"train_acc", "rlp_act1", "rlp_act2"}
    assert all(0 <= v <= 1 for v in out.values())
    acc = rlp.per_class_accuracy(model, x, y, 3, batch_size=7)
    pred = model(x).argmax(1)
    assert acc == pytest.approx([((pred == y) & (y == c)).sum().item() / (y == c).sum().item()
                                 for c in range(3)])


# --- claim measures --------------------------------------------------------------------------


def test_onset_and_gap_epochs():
    assert rlp.onset_epoch([0.1, 0.1, 0.12, 0.2, 0.3], 0.1) == 3
    assert rlp.onset_epoch([0.5, 0.1, 0.1], 0.1) is None
    assert rlp.onset_epoch([0.3, 0.1, 0.3], 0.1) == 2  # epoch 0 (before training) is skipped
    assert rlp.gap_epoch([0.5, 0.8, 0.95], [0.5, 0.78, 0.85]) == 2
    assert rlp.gap_epoch([0.5, 0.6], [0.5, 0.6]) is None


def test_head_tail_change_and_best_lambda():
    lt = pd.DataFrame({"lam": [0.0] * 4 + [1.0] * 4, "class": [0, 1, 2, 3] * 2,
                       "train_count": [100, 50, 20, 10] * 2,
                       "test_acc": [0.9, 0.8, 0.6, 0.5, 0.92, 0.8, 0.5, 0.3]})
    change = rlp.head_tail_change(lt)
    assert change["head"] == pytest.approx(0.01)
    assert change["tail"] == pytest.approx(-0.15)
    sweep = pd.DataFrame({"regularize": ["last", "last", "last", "all"],
                          "lam": [0.0, 1.0, 10.0, 1.0], "test_acc": [0.9, 0.8, 0.85, 0.99]})
    assert rlp.best_lambda(sweep) == 10.0


# --- config --------------------------------------------------------------------------------


def test_config_coerces_strings_and_lists():
    c = build(rlp.Config, {"lambdas": "[1, 1e2]", "widths": "[32, 32]", "lr": "1e-3",
                           "n_random": "null", "train_samples": "None", "seeds": "0"})
    assert c.lambdas == (1.0, 100.0) and c.widths == (32, 32) and c.lr == 1e-3
    assert c.n_random is None and c.train_samples is None and c.seeds == (0,)


@pytest.mark.parametrize("bad", [
    {"noise_rates": [1.0]}, {"lambdas": [0.0]}, {"model": "resnet50"}, {"fractions": [0]},
    {"optimizer": "lbfgs"}, {"layer_models": ["smallcnn"]}, {"n_random": 1},
    {"dropouts": [1.0]}, {"unknown_knob": 3}, {"epochs": "many"}, {"device": "tpu"},
])
def test_config_rejects_bad_values_with_one_line(bad):
    with pytest.raises(ConfigError) as err:
        build(rlp.Config, bad)
    assert "\n" not in str(err.value)


def test_spec_uses_layer_model_epochs_for_other_models():
    c = build(rlp.Config, {})
    assert rlp.spec(c).epochs == c.epochs
    assert rlp.spec(c, model="smallcnn").epochs == c.layer_model_epochs
    assert rlp.spec(c, noise=0.4, seed=2).seed == 2
    assert dataclasses.asdict(rlp.spec(c))["long_tail_ratio"] == 1.0


def test_train_run_and_frozen_baseline_on_digits():
    config = build(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                    widths=(16, 16), epochs=2, layer_models=("mlp",)))
    s = rlp.spec(config, lam=1.0)
    result = rlp.train_run(s)
    h = result["history"]
    assert list(h["epoch"]) == [0, 1, 2] and result["layers"] == ["act1", "act2"]
    assert {"train_acc", "test_acc", "rlp_act1", "rlp_act2"} <= set(h.columns)
    assert sum(result["class_counts"]) == 200 and len(result["class_acc"]) == 10
    again = rlp.train_run(s)["history"]
    pd.testing.assert_frame_equal(h, again)  # same seed, same result
    frozen = rlp.frozen_baseline(s)
    assert list(frozen.columns) == ["epoch", "rlp_act1", "rlp_act2"] and len(frozen) == 3
    assert frozen.iloc[1:, 1:].to_numpy().min() >= 0
