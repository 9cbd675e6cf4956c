"""memlib.studies.rlp: random labels, stable penalty, gradient routing, regularizer effect,
config."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import tiny
from torch import nn

from memlib.config import ConfigError, build
from memlib.models import MLP, SmallCNN, taps
from memlib.studies import rlp
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
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=500, test_samples=100))
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
    return rlp.measure(model, heads, (x, y), r)


def test_positive_lambda_lowers_head_accuracy_on_a_tiny_problem():
    plain, regularized = train_tiny(0.0), train_tiny(10.0)
    assert plain["rlp_act2"] > 0.7  # the head memorizes 96 random bits from 64 features
    assert regularized["rlp_act2"] < plain["rlp_act2"] - 0.1


def test_measure_and_per_class_accuracy():
    x, y, model, heads = tiny_setup()
    r = torch.randint(0, 4, (len(x),))
    out = rlp.measure(model, heads, (x, y), r, batch_size=10)
    assert set(out) == {"acc", "loss", "rlp_act1", "rlp_act2", "pen_act1", "pen_act2"}
    with torch.no_grad(), taps(model, ["act2"]) as outs:
        logits = model(x)
        hits = (heads.head("act2")(outs["act2"]).argmax(1) == r).float().mean()
    assert out["loss"] == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
    assert out["acc"] == pytest.approx((logits.argmax(1) == y).float().mean().item())
    assert out["rlp_act2"] == pytest.approx(hits.item())
    # (x, y, idx): a subset of samples, scored against the random labels of its indices
    part = torch.tensor([1, 5, 6, 40])
    sub = rlp.measure(model, heads, (x[part], y[part], part), r, batch_size=3)
    assert sub["rlp_act1"] == pytest.approx(rlp.measure(
        model, heads, (x[part], y[part]), r[part])["rlp_act1"])
    # other label sets from the same pass: -1 marks the samples that do not count
    other = torch.where(torch.arange(len(y)) % 3 == 0, (y + 1) % 3, -1)
    out = rlp.measure(model, None, (x, y), batch_size=10,
                      labels={"same": y, "other": other, "none": torch.full_like(y, -1)})
    keep = other >= 0
    assert out["acc_same"] == out["acc"]
    assert out["acc_other"] == pytest.approx(
        (logits.argmax(1)[keep] == other[keep]).float().mean().item())
    assert math.isnan(out["acc_none"])
    acc = rlp.per_class_accuracy(model, (x, y), 3, batch_size=7)
    pred = logits.argmax(1)
    assert acc == pytest.approx([((pred == y) & (y == c)).sum().item() / (y == c).sum().item()
                                 for c in range(3)])


# --- claim measures --------------------------------------------------------------------------


def test_onset_and_gap_epochs():
    assert rlp.onset_epoch([0.1, 0.1, 0.12, 0.2, 0.3], 0.1) == 3
    assert rlp.onset_epoch([0.5, 0.1, 0.1], 0.1) is None
    assert rlp.onset_epoch([0.3, 0.1, 0.3], 0.1) == 2  # epoch 0 (before training) is skipped
    assert rlp.gap_epoch([0.5, 0.8, 0.95], [0.5, 0.78, 0.85]) == 2
    assert rlp.gap_epoch([0.5, 0.6], [0.5, 0.6]) is None
    assert rlp.onset_epoch([0.1, 0.12, 0.3], 0.1, epochs=[0, 5, 10]) == 10
    assert rlp.gap_epoch([0.5, 0.8, 0.95], [0.5, 0.78, 0.85], epochs=[0, 5, 10]) == 10


def test_head_tail_change_and_best_lambda():
    lt = pd.DataFrame({"lam": [0.0] * 4 + [1.0] * 4, "class": [0, 1, 2, 3] * 2,
                       "train_count": [100, 50, 20, 10] * 2,
                       "test_acc": [0.9, 0.8, 0.6, 0.5, 0.92, 0.8, 0.5, 0.3]})
    change = rlp.head_tail_change(lt)
    assert change["head"] == pytest.approx(0.01)
    assert change["tail"] == pytest.approx(-0.15)
    sweep = pd.DataFrame({"regularize": ["last", "last", "last", "all"],
                          "lam": [0.0, 1.0, 10.0, 1.0], "val_acc": [0.9, 0.8, 0.85, 0.99],
                          "test_acc": [0.9, 0.9, 0.1, 0.99]})
    assert rlp.best_lambda(sweep) == 10.0  # chosen on validation, never on test


def _sweep(train: dict, where: str = "last") -> pd.DataFrame:
    return pd.DataFrame([{"regularize": where, "lam": lam, "seed": s, "train_acc": acc}
                         for lam, accs in train.items() for s, acc in enumerate(accs)])


def test_trained_lambda_is_the_largest_that_still_fits():
    sweep = _sweep({0.0: [1, 1, 1], 10.0: [0.99, 0.95, 0.93], 30.0: [0.97, 0.85, 0.99],
                    100.0: [0.1, 0.2, 0.13]})
    assert rlp.trained_lambda(sweep) == 10.0  # λ = 30: one seed fits only 85%
    assert rlp.worst_train(sweep, "last", 10.0) == 0.93
    assert rlp.trained_lambda(_sweep({0.0: [1, 1], 100.0: [0.1, 0.2]})) is None
    assert rlp.worst_train(sweep, "all", 10.0) is None


def _histories(curves: dict) -> pd.DataFrame:
    """(lam, seed) -> (train_acc, test_acc, rlp_act2) curves, measured every 5 epochs."""
    return pd.concat([pd.DataFrame({"regularize": "last", "lam": lam, "seed": seed,
                                    "epoch": [5 * i for i in range(len(c[0]))],
                                    "train_acc": c[0], "test_acc": c[1], "rlp_act2": c[2]})
                      for (lam, seed), c in curves.items()], ignore_index=True)


def test_early_rise_reads_the_trained_minus_frozen_excess_per_seed():
    train, test = [0.1, 0.5, 0.9] + [1.0] * 7, [0.1, 0.6, 0.6] + [0.6] * 7
    h = _histories({(0.0, 0): (train, test, [0.1, 0.2] + [0.3] * 8),
                    (0.0, 1): (train, test, [0.1, 0.1, 0.2, 0.35] + [0.4] * 6),
                    (10.0, 0): (train, test, [0.1] * 10)})
    # the heads on frozen features rise too: by themselves to 0.2 at every later epoch, so
    # seed 1's excess (0.2 at the end) is half-way at epoch 15, not at 10 as over chance
    frozen = pd.concat([pd.DataFrame({"seed": seed, "epoch": range(46),
                                      "rlp_act2": [0.1] + [0.2] * 45}) for seed in (0, 1)])
    rise = rlp.rise_and_gap(h, frozen, "rlp_act2")
    # seed 0: excess 0, 0, 0.1, 0.1 ... half-way at 10; train - test > 5 points from 10
    assert rise["half_epochs"] == [10, 15] and rise["gap_epochs"] == [10, 10]
    assert (rise["lead"].mean, rise["lead"].n) == (-2.5, 2)
    flat = frozen.assign(rlp_act2=0.5)  # the frozen head beats the trained one: no excess
    assert rlp.rise_and_gap(h, flat, "rlp_act2")["lead"] is None


def test_clean_train_acc_and_validation_accuracy_are_measured_every_epoch():
    from memlib import data

    config = tiny(rlp.Config, dict(dataset="digits", train_samples=300, test_samples=100,
                                   validation_samples=200, widths=(32, 32), epochs=4,
                                   layer_models=("mlp",), noise=0.4))
    s = rlp.spec(config)
    d = rlp.load_data(s)
    held = rlp.validation_indices(s, data.load("digits", "train").y)
    assert not set(held.tolist()) & set(d["index"].tolist())  # never trained on
    assert len(d["validation"][1]) == 200
    # validation images are scaled as the training ones are (standardized: mean near 0)
    assert abs(float(d["validation"][0].mean()) - float(d["train"][0].mean())) < 0.1
    assert abs(float(d["validation"][0].mean())) < 0.2
    h = rlp.train_run(s)["history"]
    assert h["clean_train_acc"].nunique() > 1  # one value per measured epoch
    assert h["clean_train_acc"].iloc[0] < h["clean_train_acc"].iloc[-1]
    assert h["val_acc"].between(0, 1).all() and h["val_acc"].nunique() > 1


# --- config --------------------------------------------------------------------------------


def test_config_coerces_strings_and_lists():
    c = build(rlp.Config, {"lambdas": "[1, 1e2]", "widths": "[32, 32]", "lr": "1e-3",
                           "n_random": "null", "train_samples": "None", "seeds": "0"})
    assert c.lambdas == (1.0, 100.0) and c.widths == (32, 32) and c.lr == 1e-3
    assert c.n_random is None and c.train_samples is None and c.seeds == (0,)


@pytest.mark.parametrize("bad", [
    {"noise_rates": [1.0]}, {"lambdas": [0.0]}, {"model": "resnet50"}, {"fractions": [0]},
    {"optimizer": "lbfgs"}, {"layer_models": ["mlp"]}, {"n_random": 1},
    {"dropouts": [1.0]}, {"unknown_knob": 3}, {"epochs": "many"}, {"device": "tpu"},
])
def test_config_rejects_bad_values_with_one_line(bad):
    with pytest.raises(ConfigError) as err:
        build(rlp.Config, bad)
    assert "\n" not in str(err.value)


def test_spec_uses_layer_model_epochs_for_other_models():
    c = tiny(rlp.Config)
    assert rlp.spec(c).epochs == c.epochs
    assert rlp.spec(c, model="smallcnn").epochs == c.layer_model_epochs
    assert rlp.spec(c, noise=0.4, seed=2).seed == 2
    assert dataclasses.asdict(rlp.spec(c))["long_tail_ratio"] == 1.0


def test_a_run_is_keyed_by_the_sizes_of_the_model_it_trains_alone():
    c = tiny(rlp.Config)
    mlp, cnn = rlp.spec(c, model="mlp"), rlp.spec(c, model="smallcnn")
    assert mlp.widths == c.widths and mlp.cnn_channels is None and mlp.wrn_depth is None
    assert cnn.cnn_channels == c.cnn_channels and cnn.widths is None
    assert rlp.spec(c, model="vit_tiny").vit_depth == c.vit_depth
    wider = dataclasses.replace(c, cnn_channels=tuple(2 * n for n in c.cnn_channels))
    assert rlp.cached_run.key(rlp.spec(wider, model="mlp")) == rlp.cached_run.key(mlp)
    assert rlp.cached_run.key(rlp.spec(wider, model="smallcnn")) != rlp.cached_run.key(cnn)


def test_train_run_and_frozen_baseline_on_digits():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   widths=(16, 16), epochs=2, layer_models=("mlp",)))
    s = rlp.spec(config, lam=1.0)
    result = rlp.train_run(s)
    h = result["history"]
    assert list(h["epoch"]) == [0, 1, 2] and result["layers"] == ["act1", "act2"]
    assert {"train_acc", "test_acc", "rlp_act1", "rlp_act2"} <= set(h.columns)
    assert sum(result["class_counts"]) == 200 and len(result["class_acc"]) == 10
    again = rlp.train_run(s)["history"]
    pd.testing.assert_frame_equal(h, again)  # same seed, same result
    frozen = rlp.frozen_baseline(s)["history"]
    assert list(frozen.columns) == ["epoch", "rlp_act1", "rlp_act2"] and len(frozen) == 3
    assert frozen.iloc[1:, 1:].to_numpy().min() >= 0


def test_the_fit_is_checked_at_the_measured_epochs_from_the_training_pass():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   widths=(16, 16), epochs=7, layer_models=("mlp",),
                                   measure_every=2, fit_train_acc=0.01, fit_flipped_acc=0.01,
                                   epochs_after_fit=1))
    result = rlp.train_run(rlp.spec(config, noise=0.4))
    h = result["history"]
    # met at once, but first checked at epoch 2; the stop comes at the first measured epoch
    # at least one epoch later
    assert result["fit_epoch"] == 2 and result["epochs_trained"] == 4
    assert list(h["epoch"]) == [0, 2, 4]
    last = h.iloc[-1]
    assert last["fit_train_acc"] == last["train_acc"]  # one pass gives both
    assert result["noisy_fit"] == last["fit_flipped_acc"]
    everything = tiny(rlp.Config, {**dataclasses.asdict(config), "epochs_after_fit": None})
    full = rlp.train_run(rlp.spec(everything, noise=0.4))
    assert full["epochs_trained"] == 7 and list(full["history"]["epoch"]) == [0, 2, 4, 6, 7]


def test_projected_control_heads_noisy_fit_and_collapse_on_digits():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   widths=(16, 8), epochs=2, layer_models=("mlp",),
                                   head_project=4))
    s = rlp.spec(config, noise=0.4)
    result = rlp.train_run(s)
    h = result["history"]
    assert {"rlpproj_act1", "rlpproj_act2"} <= set(h.columns)
    assert 0 <= result["noisy_fit"] <= 1
    assert set(result["collapse"]) == {"act1", "act2"}
    assert all(v > 0 for v in result["collapse"].values())
    frozen = rlp.frozen_baseline(s)
    assert list(frozen["history"].columns) == ["epoch", "rlp_act1", "rlp_act2",
                                               "rlpproj_act1", "rlpproj_act2"]
    assert rlp.spec(config).noise == 0 and rlp.train_run(rlp.spec(config))["noisy_fit"] is None


def test_projected_heads_have_the_same_capacity_at_every_layer():
    heads = rlp.RLPHeads({"a": 100, "b": 7}, n_random=5, project=16, seed=3)
    sizes = {m: sum(p.numel() for p in h.parameters()) for m, _, h in heads.probes()}
    assert sizes["rlpproj_a"] == sizes["rlpproj_b"] == 16 * 5 + 5
    assert sizes["rlp_a"] != sizes["rlp_b"]
    again = rlp.RLPHeads({"a": 100, "b": 7}, n_random=5, project=16, seed=3)
    proj = heads[rlp.PROJECTED + "a"][0].weight
    assert torch.equal(proj, again[rlp.PROJECTED + "a"][0].weight)
    assert not any(p is proj for p in heads.parameters())  # a buffer: never trained


def test_projected_heads_are_never_regularized():
    heads = rlp.RLPHeads({"a": 6}, n_random=3, project=4)
    f = {"a": torch.randn(8, 6, requires_grad=True)}
    r = torch.randint(0, 3, (8,))
    plain_heads = rlp.RLPHeads({"a": 6}, n_random=3)
    _, plain = rlp.rlp_losses(f, plain_heads, r, ("a",))
    heads.head("a").load_state_dict(plain_heads.head("a").state_dict())
    _, both = rlp.rlp_losses(f, heads, r, ("a",))
    assert torch.allclose(plain, both)


def test_class_variance_ratio():
    labels = torch.tensor([0, 0, 1, 1])
    collapsed = torch.tensor([[0.0], [0.0], [1.0], [1.0]])
    assert rlp.class_variance_ratio(collapsed, labels) == 0
    spread = torch.tensor([[0.0], [2.0], [1.0], [3.0]])  # within 2 * (1+1) = 4, between 1
    assert rlp.class_variance_ratio(spread, labels) == pytest.approx(4.0)


# --- image folders (ImageNet layout): the DataLoader path ------------------------------------


def write_gray_imagefolder(root, classes=3, per_class=8):
    """ImageFolder train/val of flat gray JPEGs, each with its own gray level (image k of the
    train split: 10 k), so any crop or flip of an image still tells which file it came from."""
    from PIL import Image

    for split in ("train", "val"):
        for c in range(classes):
            folder = root / split / f"n0000{c}"
            folder.mkdir(parents=True)
            for i in range(per_class):
                Image.new("RGB", (40, 40), (10 * (c * per_class + i),) * 3).save(
                    folder / f"img{i}.JPEG", format="JPEG")


def gray_level(x: torch.Tensor) -> torch.Tensor:
    """The gray level (0..255) of each normalised flat image in a batch (red channel)."""
    from memlib.imagenet import MEAN, STD

    return (x[:, 0].mean((1, 2)) * STD[0] + MEAN[0]) * 255


@pytest.fixture
def imagefolder(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    torch.set_num_threads(1)
    write_gray_imagefolder(tmp_path / "imagenet")
    return tmp_path


IMAGENET = dict(dataset="imagenet", model="vit_tiny", layer_models=("vit_tiny",),
                image_size=28, workers=0, epochs=1, batch_size=8, train_samples=21,
                test_samples=None, validation_samples=3)


def test_imagenet_indices_survive_the_loader(imagefolder):
    """Shuffled, augmented loader batches carry the index of the image they show: its random
    label is random_labels(len(train folder))[original index], its label the noisy label."""
    from memlib import imagenet

    config = tiny(rlp.Config, IMAGENET)
    d = rlp.load_data(rlp.spec(config, noise=0.4))
    full = imagenet.imagenet("train")
    table = rlp.random_labels(len(full), 3, config.label_seed)
    assert d["n_random"] == 3 and len(d["index"]) == 21
    seen = set()
    for x, y, idx in d["train"]:
        original = d["index"][idx]
        assert torch.allclose(gray_level(x), 10.0 * original, atol=4)  # the file it came from
        assert torch.equal(d["random"][idx], table[original])
        assert torch.equal(y, d["y"][idx])
        assert torch.equal(d["clean_y"][idx], original // 8)  # class = folder
        seen.update(idx.tolist())
    assert seen == set(range(21)) and (d["y"] != d["clean_y"]).any()
    for x, _, idx in d["train_eval"]:  # eval transform: a centre crop, in order
        assert torch.allclose(gray_level(x), 10.0 * d["index"][idx], atol=4)


def test_loader_and_tensors_give_the_same_measures(imagefolder):
    from torch.utils.data import Subset

    from memlib import imagenet
    from memlib.models import vit

    data = imagenet.imagenet("train", transform_fn=imagenet.transform(False, 28))
    x, y, _ = (torch.stack([torch.as_tensor(v) for v in column])
               for column in zip(*(data[i] for i in range(len(data)))))
    torch.manual_seed(0)
    model = vit("vit_tiny", 3, 28, 3)
    layers = model.probe_layers
    heads = rlp.RLPHeads(rlp.feature_dims(model, layers, x), 3)
    r = rlp.random_labels(len(y), 3, seed=1)
    loader = rlp.eval_loader(data, batch_size=5)
    by_tensor, by_loader = rlp.measure(model, heads, (x, y), r, 5), rlp.measure(model, heads,
                                                                                  loader, r)
    assert by_loader == pytest.approx(by_tensor, abs=1e-6) and len(by_loader) == 2 + 2 * len(layers)
    part = torch.tensor([0, 3, 4, 9, 17, 23])
    assert rlp.measure(model, heads, rlp.eval_loader(Subset(data, part.tolist()), 4), r) == \
        pytest.approx(rlp.measure(model, heads, (x[part], y[part], part), r), abs=1e-6)
    assert rlp.per_class_accuracy(model, loader, 3) == pytest.approx(
        rlp.per_class_accuracy(model, (x, y), 3))
    feats = rlp.pooled_features(model, loader, layers[-1:])[layers[-1]]
    assert torch.allclose(feats, rlp.pooled_features(model, (x, y), layers[-1:])[layers[-1]],
                          atol=1e-5)


def test_train_run_and_frozen_baseline_on_an_imagefolder(imagefolder):
    config = tiny(rlp.Config, {**IMAGENET, "measure_samples": 12, "precision": "bf16"})
    s = rlp.spec(config, lam=10.0, noise=0.2)
    result = rlp.train_run(s)
    h = result["history"]
    columns = [f"rlp_blocks.{i}" for i in range(4)]
    assert result["layers"] == [c[4:] for c in columns] and list(h["epoch"]) == [0, 1]
    assert {"train_acc", "test_acc", "test_loss", "clean_train_acc", *columns} <= set(h.columns)
    scores = h[["train_acc", "test_acc", "clean_train_acc", *columns]].to_numpy()
    assert ((scores >= 0) & (scores <= 1)).all()
    # measured on 12 samples by K heads: every mean accuracy is a multiple of 1/(12 K)
    assert ((h[columns].to_numpy() * 12 * s.heads).round(6) % 1 == 0).all()
    assert sum(result["class_counts"]) == 21 and len(result["class_acc"]) == 3
    assert 0 <= result["noisy_fit"] <= 1  # from the measured samples' pass
    assert result["collapse"] is None  # features not held in memory
    frozen = rlp.frozen_baseline(s)["history"]
    assert list(frozen.columns) == ["epoch", *columns] and len(frozen) == 2
    assert frozen[columns].to_numpy().min() >= 0 and frozen[columns].to_numpy().max() <= 1


def test_missing_imagenet_is_one_line(tmp_path, monkeypatch):
    from memlib.data import MissingDataError

    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    with pytest.raises(MissingDataError, match="ImageNet train folder") as err:
        rlp.train_run(rlp.spec(tiny(rlp.Config, IMAGENET)))
    assert "\n" not in str(err.value)


def test_imagenet_lt_reads_its_lists_over_the_imagenet_images(imagefolder):
    lists = imagefolder / "imagenet_lt"
    lists.mkdir()
    train = [f"train/n0000{c}/img{i}.JPEG {c}" for c in range(3) for i in range(8 - 3 * c)]
    lists.joinpath("ImageNet_LT_train.txt").write_text("\n".join(train) + "\n")
    lists.joinpath("ImageNet_LT_test.txt").write_text(
        "".join(f"val/n0000{c}/img{i}.JPEG {c}\n" for c in range(3) for i in range(4)))
    d = rlp.load_data(rlp.spec(tiny(rlp.Config, {**IMAGENET, "dataset": "imagenet_lt",
                                                 "train_samples": None})))
    # one image per class is held out for validation
    assert d["num_classes"] == 3 and d["clean_y"].bincount().tolist() == [7, 4, 1]
    x, y, idx = next(iter(d["test"]))
    assert x.shape[1:] == (3, 28, 28) and len(y) == 8 and idx.tolist() == list(range(8))


def test_small_preset_interpolates_its_noisy_labels():
    """The label-noise rows are a study of memorization only while the model fits every
    training label, the flipped ones included: one seed of the small preset's unregularized
    run at its highest noise rate (measured once, at the end) must stay at >= 99% train
    accuracy and >= 95% of flipped labels."""
    from memlib.studies import preset_config

    config = preset_config("rlp", "small")
    rate = max(config.noise_rates)
    s = dataclasses.replace(rlp.noise_spec(config, rate, 0.0, 0), feature_grid=0,
                            test_samples=100)
    assert s.measure_every == config.epochs  # measured once, at the end
    result = rlp.train_run(s)
    assert rate >= 0.4 and result["history"]["train_acc"].iloc[-1] >= 0.99
    assert result["noisy_fit"] >= 0.95


def test_swept_runs_are_measured_at_their_last_epoch_only_with_the_same_final_values():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   widths=(16, 16), epochs=5, layer_models=("mlp",),
                                   measure_every=2, lambdas=(1.0,), all_lambdas=(1.0,),
                                   dropouts=(0.1,), weight_decays=(1e-3,),
                                   label_smoothings=(0.1,)))
    plan = {s for f, s in rlp.planned_runs(config) if f is not rlp.cached_probes}
    # the regularized runs, and the random-label runs of the retraining row
    swept = {s for s in plan if s.lam > 0 or s.weight_decay > 0 or s.dropout > 0
             or s.label_smoothing > 0 or s.labels == "random"}
    assert swept and all(s.measure_every == config.epochs for s in swept)
    base = {s for s in plan - swept if s.noise == config.noise}
    assert base and all(s.measure_every == 2 for s in base)  # the base and layer-wise runs
    noisy = plan - swept - base  # the noise sweep's unregularized runs at its own rates
    assert noisy and all(s.measure_every == config.epochs for s in noisy)
    curve = rlp.train_run(rlp.spec(config, lam=1.0))
    last_only = rlp.train_run(rlp.swept(config, lam=1.0))
    assert list(last_only["history"]["epoch"]) == [0, 5]
    pd.testing.assert_series_equal(curve["history"].iloc[-1], last_only["history"].iloc[-1],
                                   check_names=False)  # the same bits at the last epoch
    stopping = dataclasses.replace(config, epochs_after_fit=1)
    assert rlp.swept(stopping, lam=1.0).measure_every == 2  # the fit is seen only when measured


# --- post-hoc probes over stored features ---------------------------------------------------

def test_grid_pool_keeps_cells_whose_mean_is_global_pooling():
    x = torch.randn(3, 5, 6, 6)
    cells = rlp.grid_pool(x, 2)
    assert cells.shape == (3, 20)
    torch.testing.assert_close(cells.view(3, 5, 4).mean(-1), rlp.grid_pool(x, 1))
    flat = torch.randn(3, 7)
    assert torch.equal(rlp.grid_pool(flat, 2), flat)  # not a conv map: as it is


def test_label_draws_differ_per_draw_and_follow_the_original_index():
    full = rlp.label_draws(torch.arange(50), 10, seed=1, k=3)
    assert full.shape == (3, 50) and not torch.equal(full[0], full[1])
    index = torch.tensor([40, 3, 17])
    assert torch.equal(rlp.label_draws(index, 10, seed=1, k=3, num_samples=50),
                       full[:, index])
    assert torch.equal(full[0], rlp.random_labels(50, 10, 1 + rlp.PROBE_SEED_STRIDE))


def test_probes_memorize_informative_features_and_not_constant_ones():
    n, classes = 60, 4
    labels = rlp.label_draws(torch.arange(n), classes, seed=0, k=3)
    informative = torch.eye(n)  # each sample its own direction: any labels are separable
    accs = rlp.train_probes(informative.half(), labels, classes, epochs=40, lr=0.05,
                            batch_size=16, seed=0)
    assert accs.shape == (3,) and accs.min() == 1.0
    constant = torch.ones(n, 5)  # one point: a probe predicts a single class at most
    accs = rlp.train_probes(constant, labels, classes, epochs=40, lr=0.05, batch_size=16,
                            seed=0)
    majority = max(int(torch.bincount(row, minlength=classes).max()) for row in labels) / n
    assert float(accs.max()) <= majority + 1e-9


def test_probes_are_seeded_per_probe_and_reject_mismatched_rows():
    x, labels = torch.randn(40, 6), rlp.label_draws(torch.arange(40), 3, seed=2, k=2)
    one = rlp.train_probes(x, labels, 3, epochs=3, lr=0.05, batch_size=8, seed=5)
    assert torch.equal(one, rlp.train_probes(x, labels, 3, epochs=3, lr=0.05, batch_size=8,
                                             seed=5))
    with pytest.raises(ValueError, match="feature rows"):
        rlp.train_probes(x[:10], labels, 3, epochs=1, lr=0.05, batch_size=8, seed=0)


def _digits_probe_config(**over):
    return tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=None,
                                 curve_test_samples=100, widths=(16, 16), epochs=4,
                                 measure_every=2, layer_models=("mlp",), feature_grid=1,
                                 probes=3, probe_epochs=2, **over))


def test_a_run_stores_the_features_and_test_predictions_the_measures_read():
    config = _digits_probe_config()
    result = rlp.train_run(rlp.spec(config))
    features = result["features"]
    assert sorted(features) == [0, 2, 4]
    assert set(features[0]) == set(features[4]) == {"act1", "act2"}
    assert set(features[2]) == {"act2"}  # between the ends: the deepest layer only
    assert features[0]["act1"].dtype == torch.float16 and features[0]["act1"].shape[0] == 200
    assert len(result["feature_index"]) == 200
    pred, y = result["test_pred"], result["test_y"]
    last = result["history"].iloc[-1]
    assert len(y) > 100 and math.isclose(float((pred == y).double().mean()), last["test_acc"])
    no_features = rlp.train_run(rlp.spec(config, feature_grid=0))
    assert "features" not in no_features
    pd.testing.assert_frame_equal(no_features["history"], result["history"])  # same training


def test_predictions_score_the_test_set_as_measure_does_in_the_same_pass():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    x, y = torch.randn(70, 3, 4), torch.randint(0, 5, (70,))
    predicted, scores = rlp.method.predictions(model, (x, y), batch_size=32)
    assert torch.equal(predicted, model(x).argmax(1))
    assert scores == rlp.method.measure(model, None, (x, y), batch_size=32)


def test_posthoc_probes_read_frozen_and_trained_features_of_the_run():
    config = _digits_probe_config()
    s = rlp.spec(config)
    probes = rlp.cached_probes(rlp.probe_spec(config, s))
    assert probes["layers"] == ["act1", "act2"] and set(probes["frozen"]) == {"act1", "act2"}
    assert sorted(probes["trained"]) == [2, 4] and len(probes["trained"][4]["act1"]) == 3
    means = rlp.probe_means(probes)
    assert set(means) == {"probe_act1", "probe_act2", "probe_frozen_act1", "probe_frozen_act2"}
    row = rlp.final_row(rlp.cached_run(s), probes)
    assert row["probe_act2"] == means["probe_act2"]
    other = rlp.spec(config, seed=1)  # another replicate draws other random labels
    assert rlp.cached_probes(rlp.probe_spec(config, other))["frozen"] != probes["frozen"]


def test_changing_the_probes_computes_probes_only(monkeypatch):
    config = _digits_probe_config()
    s = rlp.spec(config)
    trained = []
    real = rlp.runs.train_run
    monkeypatch.setattr(rlp.runs, "train_run", lambda spec: trained.append(spec) or real(spec))
    first = rlp.cached_probes(rlp.probe_spec(config, s))
    assert len(trained) == 1
    more = dataclasses.replace(config, probes=4, probe_epochs=3)
    again = rlp.cached_probes(rlp.probe_spec(more, s))
    assert len(trained) == 1 and len(again["frozen"]["act1"]) == 4  # probes again, no training
    assert rlp.cached_probes.key(rlp.probe_spec(config, s)) != rlp.cached_probes.key(
        rlp.probe_spec(more, s)) and first != again
    rlp.cached_probes(rlp.probe_spec(config, rlp.spec(config, lam=1.0)))
    assert len(trained) == 2  # another run's probes need that run
    # keyed by the run's own key: whatever re-keys the training re-keys its probes
    assert rlp.cached_probes.spec(rlp.probe_spec(config, s))["run"] == rlp.cached_run.key(s)


def test_editing_a_probe_re_keys_the_probes_and_no_training(tmp_path):
    from test_runs import PACKAGE, copy_of_memlib, keys_of, with_statement_in

    original = keys_of(PACKAGE)
    edited = keys_of(copy_of_memlib(tmp_path, with_statement_in("studies.rlp.method",
                                                                "train_probe_sets")))
    assert edited["rlp_probes"] != original["rlp_probes"]
    trains = [name for name in original if name != "rlp_probes" and " " not in name]
    assert {n: edited[n] for n in trains} == {n: original[n] for n in trains}


def _curve(excess_by_epoch: dict, spread: float = 0.01, k: int = 8) -> pd.DataFrame:
    offsets = [spread * (j - (k - 1) / 2) for j in range(k)]
    return pd.DataFrame([{"epoch": e, "probe": j, "excess": m + o}
                         for e, m in excess_by_epoch.items() for j, o in enumerate(offsets)])


def test_excess_onset_is_the_first_epoch_from_which_the_excess_clears_its_noise():
    assert rlp.excess_onset(_curve({0: 0.0, 2: 0.0, 4: 0.05, 6: 0.08, 8: 0.1})) == 4
    # a flicker that falls back is no onset; noise wider than the mean is none either
    assert rlp.excess_onset(_curve({0: 0.0, 2: 0.05, 4: -0.01, 6: 0.08})) == 6
    assert rlp.excess_onset(_curve({0: 0.0, 2: 0.01, 4: 0.01}, spread=0.1)) is None


def test_onset_and_gap_give_the_lead_per_seed():
    hist = pd.DataFrame([{"regularize": "last", "lam": 0.0, "seed": s, "epoch": e,
                          "train_acc": 0.5 + 0.05 * e, "test_acc": 0.5}
                         for s in (0, 1) for e in (0, 2, 4, 6, 8)])
    curves = pd.concat([_curve({0: 0.0, 2: 0.0, 4: 0.05, 6: 0.1, 8: 0.1}).assign(seed=s)
                        for s in (0, 1)])
    out = rlp.onset_and_gap(hist, curves)
    assert out["onset_epochs"] == [4, 4] and out["gap_epochs"] == [2, 2]
    assert out["lead"].mean == -2
    flat = pd.concat([_curve({0: 0.0, 2: 0.0}).assign(seed=s) for s in (0, 1)])
    assert rlp.onset_and_gap(hist, flat)["lead"] is None


def test_strength_trend_is_each_seeds_slope_over_strength_ranks():
    rows = [{"regularizer": "none", "strength": 0.0, "seed": s, "probe_x": 0.5}
            for s in (0, 1, 2)]
    rows += [{"regularizer": "dropout", "strength": v, "seed": s,
              "probe_x": 0.5 - 0.02 * (i + 1) - 0.001 * s}
             for i, v in enumerate((0.1, 0.3, 0.5)) for s in (0, 1, 2)]
    rows += [{"regularizer": "weight_decay", "strength": v, "seed": s, "probe_x": 0.5 + 0.01 * i}
             for i, v in enumerate((1e-4, 1e-3)) for s in (0, 1, 2)]
    reg = pd.DataFrame(rows)
    down = rlp.strength_trend(reg, "probe_x", "dropout")
    assert down.n == 3 and down.mean > 1.9 and down.beyond_noise  # about 2 points per step
    up = rlp.strength_trend(reg, "probe_x", "weight_decay")
    assert up.mean < 0


def test_a_rule_on_fewer_replicates_than_its_confirmatory_n_needs_them():
    from memlib.claims import powered, verdict

    base = next(c for c in rlp.CLAIMS if c.id == "all_layers_test")
    assert base.confirmatory_n == 5 and "confirmatory n ≥ 5 seeds" in base.caveat
    claim = powered(base, 10, "a power analysis")
    value = {"all_lam": 1.0, "all_train": 0.95, "change": claims_estimate(-3.0, 0.2, 10)}
    assert verdict(claim, value) == "holds"
    # it ran, on too few: within noise with the n it needs, never "not run at this scale"
    assert verdict(claim, {**value, "change": claims_estimate(-3.0, 0.2, 9)}) == (
        "within noise: needs n ≈ 10 seeds")
    assert claim.fingerprint != base.fingerprint


def claims_estimate(mean, se, n):
    from memlib.claims import Estimate

    return Estimate(mean, se, n)


# --- retraining: the probes beside a network trained from scratch on random labels ---------

def _layer_table(excess: dict[int, list[float]], model: str = "smallcnn",
                 train_acc: float = 1.0, fit_epoch: int | None = 60) -> pd.DataFrame:
    """Layer rows of one network per seed: the probes' accuracy on the trained and on the
    frozen-initialisation features, whose difference is `excess[seed]` per layer."""
    return pd.DataFrame([{"model": model, "seed": seed, "layer": f"block{i + 1}",
                          "probe_acc": 0.2 + e, "probe_frozen_acc": 0.2,
                          "train_acc": train_acc, "fit_epoch": fit_epoch}
                         for seed, values in excess.items() for i, e in enumerate(values)])


def test_layer_agreement_is_the_mean_of_per_seed_spearman_over_layers():
    clean = _layer_table({0: [0.01, 0.02, 0.05], 1: [0.01, 0.03, 0.02], 2: [0.0, 0.01, 0.02]})
    retrained = _layer_table({0: [0.1, 0.3, 0.6], 1: [0.1, 0.3, 0.6], 2: [0.6, 0.3, 0.1]})
    # another model's rows are left out
    other = _layer_table({0: [0.5, 0.1, 0.0]}, model="mlp")
    out = rlp.layer_agreement(pd.concat([clean, other]), retrained, "smallcnn")
    assert out["rhos"] == pytest.approx([1.0, 0.5, -1.0])
    assert out["agreement"].mean == pytest.approx(1 / 6) and out["agreement"].n == 3
    assert out["agreement"].test is not None  # a Fisher-z interval
    assert out["retrained"]["block3"].mean == pytest.approx(100 * (0.6 + 0.6 + 0.1) / 3)
    assert out["clean"]["block1"].mean == pytest.approx(100 * 0.02 / 3)
    assert out["random_fitted"] and out["random_train"] == 1.0
    unfit = _layer_table({0: [0.1, 0.2, 0.3], 1: [0.1, 0.2, 0.3]}, train_acc=0.4,
                         fit_epoch=None)
    out = rlp.layer_agreement(clean, unfit, "smallcnn")
    assert not out["random_fitted"] and out["random_train"] == 0.4
    assert out["random_fit_epochs"] == [None, None]


def test_retraining_rule_holds_fails_and_misses_each_precondition():
    from memlib.claims import correlations, verdict

    claim = next(c for c in rlp.CLAIMS if c.id == "retraining")
    assert [name for name, _ in claim.preconditions] == [rlp.INTERPOLATES[0],
                                                         rlp.RANDOM_FITS[0]]
    assert verdict(claim, claim.cases.holds) == "holds"
    assert verdict(claim, claim.cases.fails) == "does not hold"
    for name, value in claim.cases.preconditions.items():
        assert verdict(claim, value).startswith(f"precondition failed: {name} (")
    # seeds that agree and disagree by turns decide nothing (the rule's logic, judged without
    # the confirmatory n it needs), and five seeds are fewer than that n
    mixed = {**claim.cases.holds, "agreement": correlations([1.0, -0.5, 0.5, -1.0, 0.5])}
    assert verdict(dataclasses.replace(claim, confirmatory_n=None), mixed) == "within noise"
    assert verdict(claim, mixed).startswith("within noise: needs n ")
    assert claim.delta is None
    assert claim.confirmatory_n == rlp.claims.CONFIRMATORY_N["retraining"]  # its planned n
    assert claim.where == "fig2c_retraining"


def test_the_plan_trains_the_default_run_on_random_labels_and_probes_it():
    from memlib.studies import preset_config

    config = preset_config("rlp", "smoke")
    plan = rlp.planned_runs(config)
    trained = {s for f, s in plan if f is rlp.cached_run}
    probed = {p.run for f, p in plan if f is rlp.cached_probes}
    random = {s for s in trained if s.labels == "random"}
    assert {s.seed for s in random} == set(config.seeds) and random <= probed
    for s in random:  # the clean default run with its labels replaced, nothing else
        assert dataclasses.replace(s, labels="clean",
                                   measure_every=config.measure_every) == rlp.spec(
            config, seed=s.seed)
        assert s.measure_every == config.epochs and s.feature_grid == config.feature_grid
    full = preset_config("rlp", "full")
    assert {s.seed for f, s in rlp.planned_runs(full)
            if f is rlp.cached_run and s.labels == "random"} == set(full.seeds)


def test_the_plan_probes_only_runs_whose_probes_are_read():
    """The label-noise and sampling tables read no post-hoc probes: none are planned for their
    own runs (a noise run that is also another table's run keeps its probes)."""
    from memlib.studies import preset_config

    config = preset_config("rlp", "smoke")
    plan = rlp.planned_runs(config)
    trained = {s for f, s in plan if f is rlp.cached_run}
    probed = {p.run for f, p in plan if f is rlp.cached_probes}
    noise = {rlp.noise_spec(config, rate, lam, seed) for rate in config.noise_rates
             for lam in (0.0, *config.noise_lambdas) for seed in config.seeds}
    assert trained - noise <= probed <= trained and noise - probed
    assert config.sampling_experiment
    assert not [f for f, _ in rlp.planned_runs(config, best=10.0) if f is rlp.cached_probes]


def test_random_training_labels_are_uniform_per_index_and_apart_from_the_probes():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=50,
                                   validation_samples=100))
    clean = rlp.spec(config, seed=3)
    random = dataclasses.replace(clean, labels="random")
    d_clean, d_random = rlp.load_data(clean), rlp.load_data(random)
    assert torch.equal(d_clean["index"], d_random["index"])  # the same training subset
    assert torch.equal(d_clean["clean_y"], d_random["clean_y"])
    y = d_random["y"]
    agree = (y == d_random["clean_y"]).float().mean().item()
    assert 0.0 < agree < 0.3  # about 1/10: independent of the class, not "always wrong"
    whole = rlp.retraining_labels(random, d_random["num_samples"], d_random["num_classes"])
    assert torch.equal(whole[d_random["index"].cpu()], y.cpu())  # keyed by original index
    draws = rlp.label_draws(d_random["index"].cpu(), d_random["n_random"],
                            random.label_seed + rlp.DRAW_STRIDE * random.seed, 8,
                            d_random["num_samples"])
    assert not any(torch.equal(draw, y.cpu()) for draw in draws)
    other = rlp.load_data(dataclasses.replace(random, seed=4))["y"]
    assert not torch.equal(other, y)  # each replicate draws afresh


def test_probes_trained_together_match_each_set_trained_alone():
    from memlib.studies.rlp.method import label_draws, train_probe_sets

    torch.manual_seed(0)
    sets = [torch.randn(40, d).half() for d in (3, 7, 5, 7)]
    labels = label_draws(torch.arange(40), 4, 11, 3, 40)
    settings = dict(n_random=4, epochs=4, lr=0.05, batch_size=8, seed=2)
    together = train_probe_sets(sets, labels, **settings)
    for features, accuracy in zip(sets, together):
        assert torch.allclose(accuracy, train_probe_sets([features], labels, **settings)[0])
    # a group cap that splits the sets gives the same accuracies
    import memlib.studies.rlp.method as method

    cap = method.PROBE_CHUNK
    try:
        method.PROBE_CHUNK = 40 * 7 * 2
        split = train_probe_sets(sets, labels, **settings)
    finally:
        method.PROBE_CHUNK = cap
    assert all(torch.allclose(a, b) for a, b in zip(split, together))


# --- K online heads per layer -----------------------------------------------------------------


def test_each_head_reads_its_own_random_label_draw_and_the_first_is_a_single_heads():
    labels = rlp.head_labels(200, 5, seed=11, heads=4)
    assert labels.shape == (200, 4)
    assert torch.equal(labels[:, 0], rlp.random_labels(200, 5, seed=11))
    for i in range(4):
        for j in range(i + 1, 4):
            assert (labels[:, i] != labels[:, j]).float().mean() > 0.5  # independent draws
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=100, test_samples=50,
                                   heads=3))
    d = rlp.load_data(rlp.spec(config))
    assert d["randoms"].shape == (len(d["index"]), 3)
    assert torch.equal(d["random"], d["randoms"][:, 0])
    assert torch.equal(d["randoms"], rlp.head_labels(d["num_samples"], d["n_random"],
                                                     config.label_seed, 3)[d["index"].cpu()])


def k_setup(k=3, n=48):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 6, generator=g)
    torch.manual_seed(0)
    model = MLP(6, (16, 16), 3)
    heads = rlp.RLPHeads(rlp.feature_dims(model, model.probe_layers, x), 4, k=k)
    r = torch.randint(0, 4, (n, k), generator=g)
    return x, model, heads, r


def test_k_heads_random_label_loss_reaches_every_head_and_no_extractor_weight():
    x, model, heads, r = k_setup()
    with taps(model, heads.layers) as outs:
        model(x)
    l_rnd, l_reg = rlp.rlp_losses(outs, heads, r, reg_layers=())
    assert l_reg.item() == 0
    l_rnd.backward()
    assert all(p.grad is None for p in model.parameters())
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in heads.parameters())


def test_k_heads_penalty_reaches_the_features_not_the_heads_and_is_their_mean():
    x, model, heads, r = k_setup()
    with taps(model, heads.layers) as outs:
        model(x)
    _, l_reg = rlp.rlp_losses(outs, heads, r, ("act2",))
    l_reg.backward()
    assert all(p.grad is None for p in heads.parameters())
    assert model.fc1.weight.grad.abs().sum() > 0
    # the mean of the K heads' own penalties: λ means what it does for one head
    f = outs["act2"].detach()
    own = [rlp.rlp_penalty(h(f), r[:, j]) for j, h in enumerate(heads["act2"].heads)]
    assert l_reg.item() == pytest.approx(torch.stack(own).mean().item(), rel=1e-5)


def test_each_head_learns_from_its_own_labels_as_if_alone():
    x, model, heads, r = k_setup(k=2)
    with taps(model, heads.layers) as outs:
        model(x)
    l_rnd, _ = rlp.rlp_losses(outs, heads, r, reg_layers=())
    l_rnd.backward()
    f = outs["act1"].detach()
    for j, h in enumerate(heads["act1"].heads):
        alone = torch.autograd.grad(F.cross_entropy(h(f), r[:, j]), h.weight)[0]
        assert torch.allclose(h.weight.grad, alone, atol=1e-6)


def test_one_head_is_the_single_head_bit_for_bit():
    x, _, model, _ = tiny_setup()
    torch.manual_seed(5)
    one = rlp.RLPHeads(rlp.feature_dims(model, model.probe_layers, x), 4, k=1)
    torch.manual_seed(5)
    single = {n: rlp.make_head(d, 4) for n, d in
              rlp.feature_dims(model, model.probe_layers, x).items()}
    for n, head in single.items():
        assert torch.equal(one.head(n).weight, head.weight)


def test_measure_averages_the_heads_accuracies():
    x, model, heads, r = k_setup(k=3)
    y = torch.zeros(len(x), dtype=torch.long)
    out = rlp.measure(model, heads, (x, y), r)
    with taps(model, heads.layers) as outs:
        model.eval()
        model(x)
    f = outs["act1"]
    each = [(h(f).argmax(1) == r[:, j]).double().mean().item()
            for j, h in enumerate(heads["act1"].heads)]
    assert out["rlp_act1"] == pytest.approx(sum(each) / 3)
    assert out["pen_act1"] > 0


def test_the_frozen_control_trains_the_same_k_draws():
    config = tiny(rlp.Config, dict(dataset="digits", train_samples=100, test_samples=50,
                                   heads=2, epochs=2))
    s = rlp.spec(config)
    assert s.heads == 2
    frozen = rlp.frozen_baseline(s)["history"]
    assert len(frozen) == 3 and frozen.filter(like="rlp_").to_numpy().max() <= 1


# --- the paper's rows on the heads, memlib's rows on the probes ---------------------------------


def test_paper_rows_read_the_online_heads_and_the_probes_read_memlibs_own_rows():
    by_id = {c.id: c for c in rlp.CLAIMS}
    for name in ("depth", "levels", "early_rise", "regularizers", "regularizer_trend",
                 "regularizer_works", "shift", "all_layers", "frozen_near_chance"):
        assert by_id[name].scope == "paper" and by_id[name].instrument == rlp.HEADS_INSTRUMENT
    for name in ("depth_probes", "penalty_probes", "retraining"):
        assert by_id[name].scope == "ours" and by_id[name].instrument == rlp.PROBES_INSTRUMENT
    for name in ("positive_control", "noise_reading"):
        assert by_id[name].scope == "ours" and by_id[name].instrument == rlp.HEADS_INSTRUMENT
    assert (rlp.TRAINED, rlp.FROZEN) == ("rlp_acc", "frozen_acc")
    # the memorization target gates no row any more, and every changed rule keeps its
    # earlier version beside it
    for claim in rlp.CLAIMS:
        assert not any("memorization target" in name or name == rlp.TARGET
                       for name, _ in claim.preconditions), claim.id
    for name in ("depth", "levels", "regularizer_works", "noise", "retraining"):
        assert by_id[name].previous, name


def test_the_regularizer_checks_read_what_each_regularizer_acts_on():
    sweep = pd.DataFrame([{"regularize": "last", "lam": lam, "seed": s,
                           "pen_block3": 2.0 - 0.5 * (lam > 0) + 0.01 * s}
                          for lam in (0.0, 3.0) for s in range(5)])
    drop = rlp.penalty_drop(sweep, "block3", "last", 3.0)
    assert drop.n == 5 and drop.mean == pytest.approx(0.5) and drop.beyond_noise
    assert rlp.penalty_drop(sweep.drop(columns="pen_block3"), "block3", "last", 3.0) is None
    reg = pd.DataFrame([{"regularizer": k, "strength": v, "seed": s,
                         "train_ce": 0.01 + 0.1 * v + 0.001 * s}
                        for k, v in (("none", 0.0), ("dropout", 0.1), ("dropout", 0.5))
                        for s in range(5)])
    rise = rlp.ce_rise(reg, "dropout")
    assert rise.mean == pytest.approx(0.05)  # at the strongest, 0.5


def test_noise_reduction_reads_flipped_fit_and_heads_at_the_chosen_lambda():
    rows = [{"noise": 0.4, "lam": lam, "seed": s,
             "noisy_fit": 1.0 if lam == 0 else 0.6 + 0.01 * s,
             "rlp_block3": 0.3 if lam < 3 else 0.2}
            for lam in (0.0, 1.0, 3.0) for s in range(5)]
    out = rlp.noise_reduction(pd.DataFrame(rows), "block3", {0.4: 3.0})[0.4]
    assert out["lam"] == 3.0 and out["flipped_fit_0"] == pytest.approx(100.0)
    assert out["flipped_drop"].mean == pytest.approx(38.0)
    assert out["rlp_drop"].mean == pytest.approx(10.0)


def test_reading_difference_and_frozen_levels_subtract_the_frozen_control():
    base = pd.DataFrame([{"model": "m", "layer": n, "seed": s, "rlp_acc": 0.2, "frozen_acc": 0.15}
                         for n in ("a", "b") for s in range(5)])
    rand = base.assign(rlp_acc=[0.3 + 0.001 * i for i in range(10)])
    diff = rlp.reading_difference(rand, base, "b")
    assert diff.n == 5 and diff.mean == pytest.approx(10.7, abs=0.3)
    levels = rlp.frozen_levels(base, "m", 0.1)
    assert list(levels) == ["a", "b"] and levels["a"].mean == pytest.approx(5.0)
