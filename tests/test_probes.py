"""memlib.studies.probes: every probe on hand-made matrices, batched evaluation, config, claims."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import tiny as tiny_config

from memlib import data
from memlib.claims import (
    FAILS,
    HOLDS,
    NOT_RUN,
    WITHIN_NOISE,
    Estimate,
    evaluate,
    headline,
    verdict,
)
from memlib.config import ConfigError, confirmatory_seeds
from memlib.models import MLP
from memlib.studies import probes
from memlib.train import TrainSpec, train

W = torch.tensor([[0.5, -0.1, 0.0, 2.0],
                  [-3.0, 0.2, -0.05, 0.7],
                  [1.5, -0.6, 0.3, 0.0]])


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@st.composite
def signed_matrices(draw, min_rows=2, max_rows=6, max_cols=7, zeros=True):
    rows = draw(st.integers(min_rows, max_rows))
    cols = draw(st.integers(2, max_cols))
    choices = [-3, -2, -1, 1, 2, 3] + ([0, 0] if zeros else [])
    values = draw(st.lists(st.sampled_from(choices), min_size=rows * cols,
                           max_size=rows * cols))
    noise = torch.linspace(0.01, 0.02, rows * cols)  # distinct magnitudes
    w = torch.tensor(values, dtype=torch.float32)
    return (w + torch.sign(w) * noise).view(rows, cols)


def sorted_rows(m):
    return m.sort(dim=1).values


# --- pruning, binarization, noise, flips -------------------------------------------------


def test_count_is_floor_and_robust_to_float_error():
    assert probes.count(0.7, 10) == 7
    assert probes.count(0.3, 10) == 3
    assert probes.count(0.5, 3) == 1
    assert probes.count(1.0, 5) == 5


def test_prune_keeps_the_largest_magnitudes():
    out = probes.prune(W, 0.5)  # N = 12: keep floor(0.5 * 12) = 6
    assert int((out != 0).sum()) == 6
    kept = out[out != 0].abs().sort().values
    assert torch.equal(kept, torch.tensor([0.5, 0.6, 0.7, 1.5, 2.0, 3.0]))
    assert torch.equal(out[out != 0], W[out != 0])  # values unchanged where kept


def test_prune_variants_and_output_layer_reaches_zero_first():
    largest = probes.prune(W, 0.5, "largest")  # keeps the 6 smallest |w| (two are zeros)
    assert largest.abs().max() <= 0.3
    rand = probes.prune(torch.ones(10, 10), 0.37, "random", gen())
    assert int((rand != 0).sum()) == 63
    small = torch.ones(2, 3)
    assert int((probes.prune(small, 0.9) != 0).sum()) == 0  # floor(0.1 * 6) = 0
    big = torch.ones(64, 784)
    assert int((probes.prune(big, 0.9) != 0).sum()) == 5017


def test_prune_with_precomputed_order_matches():
    order = probes.magnitude_order(W)
    for p in (0.0, 0.25, 0.6):
        assert torch.equal(probes.prune(W, p, order=order), probes.prune(W, p))
        assert torch.equal(probes.flip(W, p, order=order), probes.flip(W, p))


def test_binarize_is_ternary_without_scale_and_scaled_variant():
    out = probes.binarize(W)
    assert set(out.unique().tolist()) <= {-1.0, 0.0, 1.0}
    assert torch.equal(out == 0, W == 0)
    alpha = W[W != 0].abs().mean()
    assert torch.allclose(probes.binarize(W, scaled=True), alpha * out)


def test_uniform_noise_leaves_zeros_and_is_bounded():
    w = W.clone()
    out = probes.uniform_noise(w, 0.25, gen())
    assert torch.equal(w, W)  # not in place
    assert torch.all(out[W == 0] == 0)
    assert (out - W).abs().max() <= 0.25
    assert torch.equal(out, probes.uniform_noise(W, 0.25, gen()))
    assert not torch.equal(out, probes.uniform_noise(W, 0.25, gen(1)))


def test_flip_negates_exactly_the_smallest():
    out = probes.flip(W, 0.25)  # floor(3) entries: 0.0, 0.0 and -0.05 by |w|
    changed = out != W
    assert int(changed.sum()) == 1  # the two zeros flip to themselves
    assert out[1, 2] == 0.05
    largest = probes.flip(W, 0.25, "largest")
    assert torch.equal(largest[W.abs() >= 1.5], -W[W.abs() >= 1.5])
    rand = probes.flip(torch.ones(5, 5), 0.4, "random", gen())
    assert int((rand < 0).sum()) == 10
    assert torch.equal(rand.abs(), torch.ones(5, 5))


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError, match="smallest"):
        probes.prune(W, 0.5, "median")
    with pytest.raises(ValueError, match="A, B"):
        probes.null_model(W, "H")


# --- null models ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(signed_matrices(), st.integers(0, 1000))
def test_null_models_a_to_f_keep_values_and_zeros(w, seed):
    for kind in "ABCDEF":
        out = probes.null_model(w, kind, gen(seed))
        assert torch.equal(out == 0, w == 0), kind  # zeros in place
        assert torch.equal(out.flatten().sort().values, w.flatten().sort().values), kind
    for kind in "BEF":  # sign structure kept position by position
        out = probes.null_model(w, kind, gen(seed))
        assert torch.equal(torch.sign(out), torch.sign(w)), kind
    c, d = probes.null_model(w, "C", gen(seed)), probes.null_model(w, "D", gen(seed))
    assert torch.equal(sorted_rows(c.T), sorted_rows(w.T))  # each input node's weights
    assert torch.equal(sorted_rows(d), sorted_rows(w))  # each output node's weights
    assert torch.allclose(c.sum(0), w.sum(0), atol=1e-5)
    assert torch.allclose(d.sum(1), w.sum(1), atol=1e-5)
    e, f = probes.null_model(w, "E", gen(seed)), probes.null_model(w, "F", gen(seed))
    assert torch.equal(sorted_rows(e.T), sorted_rows(w.T))
    assert torch.equal(sorted_rows(f), sorted_rows(w))


@settings(max_examples=40, deadline=None)
@given(signed_matrices(zeros=True), st.integers(0, 1000))
def test_curveball_keeps_signed_degrees_and_row_weights(w, seed):
    out = probes.null_model(w, "G", gen(seed), trades_per_row=5)
    for sign in (1, -1):
        assert torch.equal((torch.sign(out) == sign).sum(0), (torch.sign(w) == sign).sum(0))
        assert torch.equal((torch.sign(out) == sign).sum(1), (torch.sign(w) == sign).sum(1))
    assert torch.equal(sorted_rows(out), sorted_rows(w))  # weights travel with their row
    assert torch.allclose(out.sum(1), w.sum(1), atol=1e-5)


def test_curveball_moves_a_dense_layer():
    w = torch.randn(16, 40, generator=gen())
    out = probes.null_model(w, "G", gen(1))
    assert (out != w).float().mean() > 0.3
    assert torch.equal((out > 0).sum(0), (w > 0).sum(0))


def test_permute_within_groups_and_as_matrix():
    w = torch.arange(1.0, 13.0).view(3, 4)
    groups = torch.tensor([[0, 0, 1, 1]] * 3)
    out = probes.permute_within(w, groups, gen())
    assert torch.equal(out[:, :2].flatten().sort().values, w[:, :2].flatten().sort().values)
    assert probes.as_matrix(torch.zeros(1, 17, 64)).shape == (17, 64)
    assert probes.as_matrix(torch.zeros(64, 1, 7, 7)).shape == (64, 49)
    conv = torch.randn(8, 1, 3, 3, generator=gen())
    assert probes.null_model(conv, "B", gen()).shape == conv.shape


# --- evaluation on copies, batched ---------------------------------------------------------


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    model = MLP(6, (5,), 2)
    x = torch.randn(37, 6, generator=gen(2))
    y = torch.randint(0, 2, (37,), generator=gen(3))
    return model, x, y


def test_accuracy_of_variants_matches_plain_evaluation(tiny):
    model, x, y = tiny
    params = probes.detached_params(model)
    names = list(params)
    variants = [params, probes.apply_probe(params, names, probes.binarize),
                probes.apply_probe(params, names, lambda w: probes.prune(w, 0.5))]
    acc = probes.accuracy_of_variants(model, variants, x, y, batch_size=10, chunk=2)
    for value, variant in zip(acc.tolist(), variants, strict=True):
        copy = MLP(6, (5,), 2)
        copy.load_state_dict(variant)
        expected = 100.0 * (copy(x).argmax(1) == y).float().mean().item()
        assert value == pytest.approx(expected)


def test_noise_is_redrawn_per_batch(tiny):
    model, x, y = tiny
    params = probes.detached_params(model)
    calls = []

    def draw():
        calls.append(1)
        return [params]

    probes.accuracy_of_variants(model, draw, x, y, batch_size=10)
    assert len(calls) == 4


def test_sweep_never_changes_the_model(tiny):
    model, x, y = tiny
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = probes.detached_params(model)
    config = tiny_config(probes.Config, prune_levels=(0.0, 0.5), flip_levels=(0.0, 0.2),
                           noise_log2_levels=(-3.0,))
    specs = probes.fig1_grid(config)
    table = probes.sweep(model, params, x, y, specs, batch_size=16)
    nulls = probes.null_sweep(model, params, x, y, probes.NULL_MODELS, [0.0, 0.5], 2)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
        assert torch.equal(params[k], before[k])
    assert len(table) == len(specs) and table["acc"].between(0, 100).all()
    assert len(nulls) == 2 * 7 * 2
    base = table.query("probe == 'prune' and level == 0.0 and form == 'float'")["acc"]
    assert base.nunique() == 1  # p = 0 is the trained model for every mode


def test_probe_parameter_works_on_a_copy(tiny):
    model, x, y = tiny
    before = model.fc1.weight.clone()
    seen = []

    def metric(forward):
        seen.append(forward(x))
        return 1.0

    assert probes.probe_parameter(model, "fc1.weight", torch.zeros_like, metric) == 1.0
    assert torch.equal(model.fc1.weight, before)
    assert torch.equal(seen[0], model.out.bias.expand(37, 2).detach()
                       + model.out.weight.detach() @ torch.relu(model.fc1.bias))
    with pytest.raises(ValueError, match="unknown parameter"):
        probes.probe_parameter(model, "fc9.weight", torch.zeros_like, metric)


def test_layerwise_table_and_drops(tiny):
    model, x, y = tiny
    config = tiny_config(probes.Config, standin_prune_levels=(0.5,), standin_noise_levels=(1.0,),
                           standin_flip_levels=(0.2,))
    names = ["fc1.weight", "fc1.bias", "out.bias", "out.weight", "fc1.weight"]
    table = probes.layerwise_table(model, names, probes.accuracy_metric(x, y), config)
    assert set(table["probe"]) == {"float", "sign", "A", "B", "prune", "noise", "flip"}
    drops = probes.layer_drops(table)
    assert set(drops) == {"float", "first", "last_block_1", "last_block_2"}
    assert set(probes.layer_drops(table, "prune", 0.5)) == set(drops)
    assert probes.layer_drops(table, "prune", 0.3) is None  # a level the table lacks


def layer_table(losses, probe="sign", level=0.0, unprobed=90.0):
    """A layer-wise table of stand-in models by seed: each model's unprobed metric and its
    losses (first matrix, the last block's two) under `probe` at `level`."""
    rows = []
    for seed, drops in losses.items():
        for order, drop in zip((0, 3, 4), drops, strict=True):
            rows += [{"seed": seed, "order": order, "probe": "float", "level": 0.0,
                      "metric": unprobed},
                     {"seed": seed, "order": order, "probe": probe, "level": level,
                      "metric": unprobed - drop}]
    return pd.DataFrame(rows)


def test_layer_estimates_pair_each_models_losses(monkeypatch):


    # three hand-made models exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    table = layer_table({9: (35, 4, 3), 7: (40, 5, 2), 8: (30, 6, 1)})
    drops = probes.model_drops(table)
    assert drops.to_dict("list") == {"float": [90.0] * 3, "first": [40.0, 30.0, 35.0],
                                     "last_block_1": [5.0, 6.0, 4.0],
                                     "last_block_2": [2.0, 1.0, 3.0]}  # by seed
    value = probes.layer_estimates(table)
    assert value["models"] == 3 and value["float"] == 90.0
    assert value["first"] == Estimate.of([40, 30, 35])
    assert value["first_minus_last_block_1"] == Estimate.of([35, 24, 31])
    assert value["first_minus_last_block_2"] == Estimate.of([38, 29, 32])
    assert probes.layer_estimates(table, "prune", 0.5) is None  # a probe the table lacks

    def verdict(losses, unprobed=90.0):
        value = probes.layer_estimates(layer_table(losses, unprobed=unprobed))
        return verdicts({"transformer_layers_standin": value})["transformer_layers_standin"]

    assert verdict({7: (40, 5, 2), 8: (30, 6, 1), 9: (35, 4, 3)}) == HOLDS
    # the first matrix loses less than a last-block one on every model
    assert verdict({7: (5, 20, 1), 8: (6, 25, 2), 9: (4, 22, 0)}) == FAILS
    assert verdict({7: (40, 5, 2), 8: (3, 6, 1), 9: (35, 4, 3)}) == WITHIN_NOISE
    # losses that move together from model to model: paired, the gap is decided although
    # the models' spread is as large as the gap itself
    together = {7: (60, 30, 31), 8: (40, 8.5, 10), 9: (80, 49.5, 50.5)}
    assert verdict(together) == HOLDS
    # a gap beyond noise, however small: the paper gives no number for a margin δ
    small = {7: (40, 38, 39), 8: (20, 17.5, 19), 9: (60, 58.5, 58.5)}
    assert verdict(small) == HOLDS
    claim = {c.id: c for c in probes.CLAIMS}["transformer_layers_standin"]
    [one_model_rule] = [c for c in claim.previous if c.rule == probes.claims._ONE_MODEL_RULE]
    value = probes.layer_estimates(layer_table(together))
    assert not one_model_rule.beyond_noise(value)  # unpaired, the models' spread hides it
    # one model: no interval, fewer than the minimum
    assert verdict({7: (40, 5, 2)}) == f"{WITHIN_NOISE}: needs n ≈ 3 models"
    assert verdict({7: (40, 5, 2), 8: (30, 6, 1), 9: (35, 4, 3)}, unprobed=30.0).startswith(
        "precondition failed: the stand-in learned its task")


@pytest.mark.parametrize("warmup_steps", [0, 3])
def test_ensemble_training_equals_separate_runs(warmup_steps):
    x = torch.randn(50, 6, generator=gen(5))
    y = (x[:, 0] > 0).long()
    seeds = [3, 4]
    stacked = probes.train_runs(x, y, seeds, 5, "relu", epochs=2, batch_size=16, lr=0.01,
                                warmup_steps=warmup_steps)
    for r, seed in enumerate(seeds):
        model = probes.make_mlp(5, "relu", seed, in_features=6)
        spec = TrainSpec(epochs=2, batch_size=16, optimizer="adam", lr=0.01,
                         schedule="warmup_cosine" if warmup_steps else "cosine",
                         warmup_epochs=warmup_steps / 4, seed=seed)  # 4 batches per epoch
        train(model, (x, y), spec)
        for name, value in model.named_parameters():
            assert torch.allclose(stacked[name][r], value, atol=1e-5), name


def test_each_run_trains_on_its_own_subset_as_it_would_alone():
    """Runs stacked on one shared dataset tensor, each drawing its batches from its own rows,
    end where each run trained alone on its rows ends."""
    x = torch.randn(60, 6, generator=gen(5))
    y = (x[:, 0] > 0).long()
    seeds = [3, 4]
    subsets = probes.run_subsets(y, 12, seeds)
    assert subsets.shape == (2, 24) and not torch.equal(subsets[0], subsets[1])
    stacked = probes.train_runs(x, y, seeds, 5, "relu", epochs=2, batch_size=8, lr=0.01,
                                subsets=subsets)
    for r, seed in enumerate(seeds):
        alone = probes.train_runs(x[subsets[r]], y[subsets[r]], [seed], 5, "relu", epochs=2,
                                  batch_size=8, lr=0.01)
        for name, value in alone.items():
            assert torch.allclose(stacked[name][r], value[0], atol=1e-5), name
    shared = probes.train_runs(x, y, seeds, 5, "relu", epochs=2, batch_size=8, lr=0.01)
    assert not torch.allclose(shared["fc1.weight"], stacked["fc1.weight"])


def test_each_replicate_draws_its_own_pair_subset_and_the_same_one_again():
    x, y = probes.pair_data("mnist-5k", (0, 7), "train")
    first, again = (probes.run_subsets(y, 100, [0, 1]) for _ in range(2))
    assert torch.equal(first, again)
    assert first.shape == (2, 200) and not torch.equal(first[0], first[1])
    assert [torch.bincount(y[row]).tolist() for row in first] == [[100, 100]] * 2
    assert probes.run_subsets(y, None, [0, 1]) is None  # the whole pair: nothing to draw
    assert probes.run_subsets(y, 400, [0, 1]) is None  # mnist-5k's 400 a class: all of them


def test_each_standin_is_scored_on_test_images_of_its_own_and_sizes_are_not_clamped(
        monkeypatch):
    from memlib.data import DataRequestError

    drawn = []
    monkeypatch.setattr(probes.runs, "_standin_data",
                        lambda split, n, seed, asked: drawn.append((split, n, seed)) or (0, 0))
    monkeypatch.setattr(probes.runs, "standin_model", lambda config, seed: MLP(4, (3,), 2))
    monkeypatch.setattr(probes.STANDIN_TABLE, "get", lambda key, compute: pd.DataFrame())
    config = tiny_config(probes.Config)
    for seed in (1000, 1001, 1000):
        probes.cached_standin((seed, config))
    assert drawn[0] == drawn[2] and drawn[0][2] != drawn[1][2]
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="standin_test=10001 asks for more than the 10000 "
                                          "test images of fashion_mnist"):
        tiny_config(probes.Config, standin_test=10001)
    with pytest.raises(ConfigError, match="standin_train=60001 asks for more than the 60000"):
        tiny_config(probes.Config, standin_train=60001)
    with pytest.raises(DataRequestError, match="standin_test=10001 asks for more than the "
                                               "10000 test images of fashion_mnist"):
        probes.runs._standin_data("test", 10001, 0, "standin_test")
    x, y = probes.runs._standin_data("test", 10000, 0, "standin_test")  # all: as asked
    assert len(y) == 10000


def test_reinit_biases_keeps_trained_weights():
    x = torch.randn(40, 6, generator=gen(5))
    y = (x[:, 0] > 0).long()
    kept = probes.train_runs(x, y, [0], 4, "relu", 1, 16, 0.01)
    quirk = probes.train_runs(x, y, [0], 4, "relu", 1, 16, 0.01, reinit_biases=True)
    assert torch.equal(kept["fc1.weight"], quirk["fc1.weight"])
    assert not torch.equal(kept["fc1.bias"], quirk["fc1.bias"])


# --- difficulty, transition, claims, config -----------------------------------------------


def test_difficulty_matrix_is_symmetric_and_choose_pairs():
    x = torch.rand(30, 1, 8, 8, generator=gen()) * 2 - 1
    x[:10] = -1  # class 0: blank images
    x[10:20] = -1
    x[10:20, :, 2:6, 2:6] = 1  # class 1: a square
    y = torch.arange(30) // 10
    d = probes.difficulty_matrix(x, y, 3, pairs=5)
    assert np.allclose(d, d.T)
    assert d[0, 0] == pytest.approx(0.0)
    assert probes.choose_pairs(d, "fashion_mnist", "authors") == {"easy": (3, 2),
                                                                  "hard": (3, 1)}
    chosen = probes.choose_pairs(d, "fashion_mnist", "ssim")
    assert chosen["hard"] != chosen["easy"] and chosen["hard"][0] != chosen["hard"][1]


def test_transition_rise_and_width():
    levels = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.8])
    acc = np.array([50, 50, 50, 60, 90, 95, 99])  # 0.8 lies beyond max_level
    rise, width = probes.transition(levels, acc)
    assert rise == 45
    assert width == pytest.approx((0.4 + 0.5 / 5 * 0.1) - (0.2 + 4.5 / 10 * 0.1))
    assert np.isnan(probes.transition(levels, 100 - acc)[1])


def test_transition_points_mark_the_crossings():
    levels = np.array([0.0, 0.1, 0.2, 0.3])
    rise, p10, p90 = probes.transition_points(levels, np.array([50, 50, 90, 90]))
    assert rise == 40 and p10 == pytest.approx(0.11) and p90 == pytest.approx(0.19)
    assert np.isnan(probes.transition_points(levels, np.array([90, 80, 70, 60]))[1])
    _, p50 = probes.transition_points(levels, np.array([50, 50, 90, 90]), fractions=(0.5,))
    assert p50 == pytest.approx(0.15)


def test_spread_interval_and_threshold():
    tight, wide = probes.Spread(0.03, 8), probes.Spread(0.25, 8)
    lo, hi = tight.interval()
    assert lo < 0.03 < hi < 0.1
    assert tight.at_most(0.1) == (True, True) and wide.at_most(0.1) == (False, True)
    assert probes.Spread(0.09, 3).at_most(0.1) == (True, False)  # 3 runs: undecided
    assert probes.Spread.of([0.4]).at_most(0.1) == (False, False)
    assert probes.Spread.of([0.3, 0.5]).sd == pytest.approx(np.sqrt(0.02))


def test_interior_peak_ignores_the_ends():
    curves = pd.DataFrame({0: [50, 70, 90, 40], 1: [52, 72, 88, 60]}, index=[0.01, 0.1, 0.2, 1])
    peak = probes.interior_peak(curves)
    assert peak["peak"] == 0.2 and peak["gain"].mean == 38 and peak["fall"].mean == 39
    rising = pd.DataFrame({0: [50, 60, 70, 99]}, index=[0.01, 0.1, 0.2, 1])  # no interior peak
    assert probes.interior_peak(rising)["gain"].mean == 20
    ends = probes.interior_peak(curves.iloc[[0, -1]])  # two levels: nothing in between
    assert np.isnan(ends["gain"].mean) and ends["start"] == 51


def estimate(values):
    return Estimate.of(values)


def verdicts(measured):
    """The rules' verdicts on synthetic values of a few runs: their own logic, without the
    confirmatory n each needs at the small scale (tested in test_register and test_rlp)."""
    import dataclasses

    table = evaluate([dataclasses.replace(c, judged_at=None, confirmatory_n=None)
                      for c in probes.CLAIMS], measured)
    return dict(zip(table["id"], table["verdict"], strict=True))


LEARNED = {"float_easy": 99.0, "float_hard": 98.0, "at_chance_easy": 0, "at_chance_hard": 0,
           "dist_easy": 0.6, "dist_hard": 0.4}


def test_every_claim_is_found_in_study_4_and_reads_its_preset():
    """The claims' rules live in the parts of the package: each still names its study, whose
    small preset gives the values its fingerprint reads."""
    from memlib.claims.rules import preset_values, study_of

    assert {study_of(claim) for claim in probes.CLAIMS} == {"probes"}
    assert preset_values(probes.CLAIMS[0])["epochs"] > 0


def test_claim_rules_preconditions_and_noise(monkeypatch):
    # three synthetic runs exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    clear_sep = {"data": "mnist-5k", "easy": estimate([90, 91, 89]),
                 "hard": estimate([50, 52, 51]), "gap": estimate([40, 39, 38]), **LEARNED}
    vague_sep = {**clear_sep, "hard": estimate([50, 80, 62]), "gap": estimate([40, 11, 27])}
    v = verdicts({"binarization_separates_mnist": clear_sep,
                  "binarization_separates_fashion_mnist": vague_sep})
    assert v["binarization_separates_mnist"] == HOLDS
    assert v["binarization_separates_fashion_mnist"] == WITHIN_NOISE
    dead = {**clear_sep, "at_chance_hard": 1}  # one run at chance fails the precondition
    assert verdicts({"binarization_separates_mnist": dead})[
        "binarization_separates_mnist"].startswith("precondition failed: hard models")

    sharp = {"data": "mnist", "rise": estimate([40, 42, 44]), "width": estimate([0.1, 0.12, 0.1]),
             "level_sd": probes.Spread(0.02, 12), "signed_hard_p0": estimate([50, 51, 52]),
             "float_hard": 98.0, "at_chance_hard": 0, "rising": 3, "runs": 3}
    sharp |= {"width_all": sharp["width"], "level_sd_all": sharp["level_sd"]}
    scattered = {**sharp, "level_sd_all": probes.Spread(0.3, 12)}  # sharp, but anywhere in p
    unsure = {**sharp, "level_sd_all": probes.Spread(0.05, 3)}
    v = verdicts({"phase_transition_mnist": sharp, "phase_transition_fashion_mnist": scattered})
    assert v["phase_transition_mnist"] == HOLDS and v["phase_transition_fashion_mnist"] == FAILS
    assert verdicts({"phase_transition_mnist": unsure})["phase_transition_mnist"] == WITHIN_NOISE
    # no run rises: the rise is what the rule judges, never a precondition
    flat = {**sharp, "rise": estimate([2, 1, 3]), "width": estimate([]),
            "level_sd": probes.Spread.of([]), "rising": 0}
    assert verdicts({"phase_transition_mnist": flat})["phase_transition_mnist"] == FAILS

    # hard_needs_magnitudes needs every sign-keeping null model, not one of them
    one = {"data": "mnist", "B": estimate([20, 22, 21]), "E": estimate([-1, 0, -2]),
           "F": estimate([-1, 1, 0]), **LEARNED}
    assert verdicts({"hard_needs_magnitudes_mnist": one})["hard_needs_magnitudes_mnist"] == FAILS

    # the gaps must grow as the pairs grow similar: a negative correlation with 1 - SSIM
    gaps = {"data": "mnist", "rho_bin": Estimate(-0.5, 0.1, 10),
            "rho_rand": Estimate(-0.1, 0.1, 10), "pairs": 45, "at_chance": 0}
    # the random-sign gap's correlation near 0: the paper gives no number for a margin δ, so
    # it is within noise
    assert verdicts({"complexity_measure_mnist": gaps})["complexity_measure_mnist"] \
        == WITHIN_NOISE
    wide = {**gaps, "rho_rand": Estimate(-0.1, 0.3, 10)}  # neither beyond 0 nor inside ±δ
    assert verdicts({"complexity_measure_mnist": wide})["complexity_measure_mnist"] \
        == WITHIN_NOISE
    assert verdicts({"complexity_measure_mnist": {**gaps, "rho_rand": Estimate(0.5, 0.1, 10)}})[
        "complexity_measure_mnist"] == FAILS

    # room to gain is measured against each task's full-precision model
    room = {"peak": 0.1, "gain": estimate([20, 22, 21]), "fall": estimate([30, 31, 32]),
            "start": 70.0, "float": 98.0}
    full = {"peak": 0.1, "gain": estimate([0, 1, 0]), "fall": estimate([40, 41, 42]),
            "start": 95.0, "float": 97.5}
    flat_noise = {**room, "gain": estimate([1, 0, 2])}
    v = verdicts({"stochastic_resonance": {"a/easy": room, "a/hard": full}})
    assert v["stochastic_resonance"] == HOLDS  # the task without room is not asked to gain
    v = verdicts({"stochastic_resonance": {"a/easy": room, "a/hard": flat_noise}})
    assert v["stochastic_resonance"] == HOLDS  # noise *can* raise accuracy: some task suffices
    v = verdicts({"stochastic_resonance": {"a/easy": flat_noise, "a/hard": flat_noise}})
    assert v["stochastic_resonance"] == FAILS  # no task with room shows the peak

    one = probes.layer_estimates(layer_table({7: (30, 5, 2)}, "prune", 0.5, unprobed=85.0),
                                 "prune", 0.5)
    v = verdicts({"transformer_layers_pruned_standin": one,
                  "transformer_layers_pruned_distilbert": {**one, "float": 0.3}})
    # one model: no interval, fewer than the minimum (3 here)
    assert v["transformer_layers_pruned_standin"] == f"{WITHIN_NOISE}: needs n ≈ 3 models"
    assert v["transformer_layers_pruned_distilbert"].startswith("precondition failed: the model")
    assert len({c.id for c in probes.CLAIMS}) == len(probes.CLAIMS)


def test_bootstrap_spearman_spread_over_classes_and_runs():
    rng = np.random.default_rng(0)
    rows = []
    for i, (a, b) in enumerate(itertools.combinations(range(10), 2)):
        for run in range(3):
            rows.append({"a": a, "b": b, "run": run, "x": i + rng.normal(0, 0.1),
                         "y": 2 * i + rng.normal(0, 0.1)})
    agree = pd.DataFrame(rows)
    rho = probes.bootstrap_spearman(agree, "x", "y", draws=200)
    assert rho.n == 10 and rho.mean > 0.99 and rho.se < 0.01 and rho.beyond_noise
    noisy = agree.assign(y=rng.normal(0, 1, len(agree)))
    rho = probes.bootstrap_spearman(noisy, "x", "y", draws=200)
    assert abs(rho.mean) < 0.5 and rho.se > 0.05
    constant_x = agree.assign(x=agree["a"] + agree["b"])  # a per-pair property, like distance
    assert probes.bootstrap_spearman(constant_x, "x", "y", draws=50).mean > 0.5


def synthetic_results(dataset="fashion_mnist", runs=3, dead_hard_run=None):
    rows = []
    for run in range(runs):
        for task, signed0 in (("easy", 85.0), ("hard", 50.0)):
            signed0 += run  # a spread over runs
            for level, acc in ((0.0, signed0), (0.3, signed0), (0.5, 95.0)):
                rows.append({"task": task, "probe": "prune", "mode": "smallest",
                             "form": "signed", "level": level, "acc": acc, "run": run})
            for level, acc in ((0.001, signed0), (0.1, signed0 + 10), (1.0, 50.0)):
                rows.append({"task": task, "probe": "noise", "mode": "-", "form": "signed",
                             "level": level, "acc": acc, "run": run})
            for level, acc in ((0.0, signed0), (0.2, signed0 + 8), (0.5, 50.0)):
                rows.append({"task": task, "probe": "flip", "mode": "smallest",
                             "form": "signed", "level": level, "acc": acc, "run": run})
    nulls = pd.DataFrame([{"task": t, "null": k, "prune": 0.0, "run": r, "draw": d,
                           "acc": (90.0 if k in "BEFG" else 50.0) - (t == "hard") * 5 * (k in "B")}
                          for t in ("easy", "hard") for k in probes.NULL_MODELS
                          for r in range(runs) for d in range(2)])
    baseline = pd.DataFrame([{"task": t, "run": r, "acc": 50.0 if (t, r) == ("hard", dead_hard_run)
                              else 98.0 + 0.1 * r} for t in ("easy", "hard") for r in range(runs)])
    heatmap_runs = pd.DataFrame([{"a": a, "b": b, "run": r, "delta_bin": a + b + r,
                                  "delta_rand": 2 * (a + b) + r, "acc": 95.0}
                                 for a in range(10) for b in range(a + 1, 10) for r in range(3)])
    difficulty = pd.DataFrame([{"a": a, "b": b, "distance": 1.0 - (a + b) / 20}
                               for a in range(10) for b in range(10)])
    pairs = pd.DataFrame({"task": ["easy", "hard"], "distance": [0.6, 0.4]})
    tag = {"dataset": dataset}
    standin = pd.DataFrame({"seed": 7, "order": [0, 0, 0, 3, 3, 3, 4, 4, 4],
                            "probe": ["float", "sign", "prune"] * 3,
                            "level": [0.0, 0.0, 0.5] * 3,
                            "metric": [90, 10, 40, 90, 80, 85, 90, 85, 88]})
    # a second stand-in model, 10 points less accurate everywhere
    standin = pd.concat([standin, standin.assign(seed=8, metric=standin["metric"] - 10)],
                        ignore_index=True)
    return {"sweep": pd.DataFrame(rows).assign(**tag), "nulls": nulls.assign(**tag),
            "baseline": baseline.assign(**tag), "pairs": pairs.assign(**tag),
            "heatmap_runs": heatmap_runs.assign(**tag), "difficulty": difficulty.assign(**tag),
            "standin": standin, "distilbert": None}


def test_measure_on_a_synthetic_result(monkeypatch):
    # three synthetic runs exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    measured = probes.measure(synthetic_results())
    sep = measured["binarization_separates_fashion_mnist"]
    assert sep["data"] == "fashion_mnist" and sep["easy"].mean == 86.0
    assert sep["hard"] == Estimate.of([50.0, 51.0, 52.0]) and sep["gap"].mean == 35.0
    assert sep["gap"].se == 0 and sep["float_easy"] == pytest.approx(98.1)
    assert sep["hard_median"] == 51.0 and sep["at_chance_hard"] == 0
    phase = measured["phase_transition_fashion_mnist"]
    assert phase["rise"].mean == 44.0 and phase["transition_runs"] == "3/3"
    assert phase["level"].mean == pytest.approx(0.4) and phase["level_sd"].n == 3
    assert measured["sign_structure_easy_fashion_mnist"]["B"].mean == 90.0
    assert measured["hard_needs_magnitudes_fashion_mnist"]["B"].mean == 5.0
    assert measured["hard_needs_magnitudes_fashion_mnist"]["E"].mean == 0.0
    resonance = measured["stochastic_resonance"]["fashion_mnist/hard"]
    assert resonance["gain"].mean == 10.0 and resonance["peak"] == 0.1
    assert resonance["start"] == 51.0
    flips = measured["flips_mirror_noise"]["fashion_mnist/easy"]
    assert flips["noise_gain"].mean == 10 and flips["flip_gain"].mean == 8
    layers = measured["transformer_layers_standin"]
    assert layers["float"] == 85 and layers["models"] == 2
    assert layers["first"] == Estimate(80.0, 0.0, 2)
    assert layers["last_block_2"] == Estimate(5.0, 0.0, 2)
    assert layers["first_minus_last_block_1"] == Estimate(70.0, 0.0, 2)
    assert measured["transformer_layers_pruned_standin"]["first"].mean == 50
    complexity = measured["complexity_measure_fashion_mnist"]
    assert complexity["rho_bin"].mean == pytest.approx(-1.0) and complexity["pairs"] == 45
    assert measured["measures_agree_fashion_mnist"]["rho"].mean == pytest.approx(1.0)
    assert "transformer_layers_distilbert" not in measured
    assert "binarization_separates_mnist" not in measured
    v = verdicts(measured)
    assert v["binarization_separates_fashion_mnist"] == HOLDS
    assert v["hard_needs_magnitudes_fashion_mnist"] == FAILS  # E and F cost both pairs alike
    assert v["complexity_measure_fashion_mnist"] == HOLDS
    assert v["binarization_separates_mnist"] == NOT_RUN
    assert v["transformer_layers_pruned_distilbert"] == NOT_RUN


def test_pruning_improves_binarized_models_where_they_have_room(monkeypatch):
    # three synthetic runs exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    results = synthetic_results()
    flat = probes.measure(results)["pruning_improves_binarized"]
    # flat up to p = 0.3, the only pruned fraction between the ends: no gain
    assert flat["fashion_mnist/hard"]["peak"] == 0.3
    assert flat["fashion_mnist/hard"]["gain"] == Estimate(0.0, 0.0, 3)
    assert verdicts({"pruning_improves_binarized": flat})["pruning_improves_binarized"] == FAILS
    sweep = results["sweep"]
    mid = ((sweep["probe"] == "prune") & (sweep["level"] == 0.3)).to_numpy()
    gains = probes.measure({**results, "sweep": sweep.assign(
        acc=np.where(mid, sweep["acc"] + 10, sweep["acc"]))})["pruning_improves_binarized"]
    assert gains["fashion_mnist/easy"]["gain"].mean == 10
    assert verdicts({"pruning_improves_binarized": gains})["pruning_improves_binarized"] == HOLDS
    no_room = {k: {**v, "start": 97.0} for k, v in gains.items()}
    assert verdicts({"pruning_improves_binarized": no_room})[
        "pruning_improves_binarized"].startswith(
        "precondition failed: a binarized hard model has room")


def _claim(claim_id):
    """The rule, judged on a few synthetic runs without the confirmatory n it needs."""
    import dataclasses

    return dataclasses.replace(next(c for c in probes.CLAIMS if c.id == claim_id),
                               judged_at=None, confirmatory_n=None)


def _earlier(claim_id, index=0):
    """An earlier version of the rule, likewise without its confirmatory n."""
    import dataclasses

    return dataclasses.replace(_claim(claim_id).previous[index], judged_at=None)


def test_headroom_is_measured_against_the_full_precision_model(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    e = Estimate
    # an easy task at 93.35% whose full-precision model reaches 97.51%: 5 points above its
    # start are out of reach, so it has no room; the hard task gains 37 points
    value = {"x/easy": {"peak": 0.1, "gain": e(2.0, 0.2, 3), "fall": e(30, 1, 3),
                        "start": 93.35, "float": 97.51},
             "x/hard": {"peak": 0.2, "gain": e(37, 1, 3), "fall": e(40, 1, 3), "start": 55.0,
                        "float": 97.0}}
    claim = _claim("stochastic_resonance")
    assert verdict(claim, value) == HOLDS
    assert verdict(claim.previous[0], value) == FAILS  # room against 100%: the easy task
    value["x/easy"]["start"] = 90.0  # now the easy task has room, and gains too little
    # the registered rule asked every task with room for the peak; the paper's "can" asks
    # some task: the hard task's 37 points decide
    assert verdict(_earlier("stochastic_resonance", -1), value) == FAILS
    assert verdict(claim, value) == HOLDS
    value["x/hard"]["gain"] = e(1.0, 0.2, 3)
    assert verdict(claim, value) == FAILS


def test_a_task_resonates_only_with_both_a_gain_and_a_fall(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    e = Estimate
    rises, small, falls = e(10, 1, 8), e(3, 2, 8), e(-6, 1, 8)
    # the margin of "both pass" is the one with the smaller t: the intersection-union test
    assert probes.both_pass(rises, small) is small
    assert probes.both_pass(rises, falls) is falls and probes.both_pass(falls, small) is falls
    claim = _claim("stochastic_resonance")
    # noise raises accuracy and it never falls again: a rise, not a resonance
    no_peak = {"x/hard": {"peak": 0.2, "gain": e(30, 1, 3), "fall": e(0.5, 0.2, 3),
                          "start": 55.0, "float": 97.0}}
    assert verdict(claim, no_peak) == FAILS
    peak = {"x/hard": {**no_peak["x/hard"], "fall": e(40, 1, 3)}}
    assert verdict(claim, {**no_peak, "y/hard": peak["x/hard"]}) == HOLDS
    assert headline(claim, {**no_peak, "y/hard": peak["x/hard"]}).startswith("30")


def test_pruning_improves_binarized_is_about_the_hard_tasks(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    e = Estimate
    value = {"x/easy": {"peak": 0.1, "gain": e(0.5, 0.2, 3), "fall": e(1, 1, 3), "start": 88.0,
                        "float": 98.0},
             "x/hard": {"peak": 0.5, "gain": e(40, 1, 3), "fall": e(10, 1, 3), "start": 52.0,
                        "float": 97.0}}
    claim = _claim("pruning_improves_binarized")
    assert verdict(claim, value) == HOLDS  # the easy task's flat curve is not the claim's
    assert verdict(claim.previous[0], value) == FAILS  # the earlier rule read it
    value["x/hard"]["gain"] = e(-1, 0.2, 3)
    assert verdict(claim, value) == FAILS


def test_phase_transition_counts_every_run(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    points = [(40.0, 0.3, 0.4, 0.5), (42.0, 0.32, 0.41, 0.5), (38.0, 0.31, 0.39, 0.48),
              (10.0, 0.05, 0.35, 0.65)]  # the last run barely rises
    runs = probes.transition_runs(points)
    assert runs["rising"] == 3 and runs["runs"] == 4 and runs["transition_runs"] == "3/4"
    assert runs["width_all"].n == 4 and runs["width"].n == 3  # every run vs the rising ones
    assert runs["width_all"].mean == pytest.approx((0.2 + 0.18 + 0.17 + 0.6) / 4)
    learned = {"signed_hard_p0": Estimate.of([50, 51, 52, 53]), "float_hard": 97.0,
               "at_chance_hard": 0}
    claim = _claim("phase_transition_fashion_mnist")
    # the registered version made the rise of every run a precondition: the outcome itself
    assert verdict(_earlier("phase_transition_fashion_mnist", -1), {**runs, **learned}) \
        .startswith("precondition failed: every run transitions")
    # now every run enters the rise and the width, and the rule judges them
    assert not verdict(claim, {**runs, **learned}).startswith("precondition")
    assert [name for name, _ in claim.preconditions] == [
        name for name, _ in claim.previous[-1].preconditions][:-1]
    # the earlier rule measured the width on the rising runs alone, and needs no more
    assert not verdict(claim.previous[0], {**runs, **learned}).startswith("precondition")
    rising = probes.transition_runs(points[:3])
    assert rising["width_all"] == rising["width"]
    assert verdict(claim, {**rising, **learned}) == verdict(claim.previous[0],
                                                           {**rising, **learned})
    never = probes.transition_runs([*points[:3], (-1.0, math.nan, math.nan, math.nan)])
    assert math.isnan(never["width_all"].mean) and never["rising"] == 3


def test_phase_transitions_preconditions_read_nothing_the_rule_judges():
    claim = _claim("phase_transition_mnist")
    collapsed = {"signed_hard_p0": Estimate.of([50, 51, 52]), "float_hard": 97.0,
                 "at_chance_hard": 0}
    # whatever the runs' rises and widths, the manipulation checks pass: they read the
    # unprobed models and the binarized start, before any pruning
    for rise, width in ((-1.0, math.nan), (10.0, 0.6), (45.0, 0.1)):
        runs = probes.transition_runs([(rise, 0.3, 0.4, 0.3 + width)] * 3)
        assert all(test({**runs, **collapsed}) for _, test in claim.preconditions)


def test_flips_are_judged_where_the_noise_probe_fired_never_by_their_own_gain(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    e = Estimate
    claim = _claim("flips_mirror_noise")
    [(_, noise_helps)] = claim.preconditions
    helps = {"x/easy": {"noise_gain": e(20, 1, 3), "flip_gain": e(15, 1, 3), "flip_peak": 0.2},
             "x/hard": {"noise_gain": e(6, 3, 3), "flip_gain": e(0, 0.5, 3), "flip_peak": 0.1}}
    # the precondition reads the noise probe alone: whatever the flips do, it passes
    for flips in (-50, 0, 50):
        assert noise_helps({k: {**t, "flip_gain": e(flips, 1, 3)} for k, t in helps.items()})
    # the hard task's noise gain (6 ± 3) is not beyond noise: its flips are not asked
    assert verdict(claim, helps) == HOLDS
    # the registered version chose the tasks by the noise gain's mean, then judged it too
    assert verdict(_earlier("flips_mirror_noise", -1), helps) == FAILS
    quiet = {k: {**t, "noise_gain": e(1, 0.5, 3)} for k, t in helps.items()}
    assert verdict(claim, quiet).startswith("precondition failed: noise raises")


def test_the_vit_stand_ins_are_memlibs_rows_and_distilbert_the_papers():
    claims = {c.id: c for c in probes.CLAIMS}
    standins = [c for c in claims.values() if c.id.endswith("_standin")]
    assert len(standins) == 3
    for c in standins:
        assert c.scope == "ours" and c.instrument.startswith("ViT stand-in for DistilBERT")
        assert c.previous[-1].scope == "paper"  # as registered, kept beside it
    bert = [c for c in claims.values() if c.id.endswith("_distilbert")]
    assert len(bert) == 3 and all(c.scope == "paper" and "DistilBERT" in c.instrument
                                  for c in bert)
    assert all(verdict(c, None) == NOT_RUN for c in bert)  # below full scale: no model


def test_every_row_names_its_instrument_and_smallest_effect_and_no_delta_of_its_own():
    for c in probes.CLAIMS:
        assert c.instrument.strip() and c.smallest_effect, c.id
        assert c.smallest_effect_reason.strip(), c.id
        # the paper gives no number that could serve as any row's margin δ
        assert c.delta is None and not c.delta_source, c.id


def bert_table(bin_loss, rand_loss, f1=0.9):
    """A DistilBERT-like layer-wise table of one model: each matrix's F1 unprobed, under sign
    and under null model B, losing `bin_loss` and `rand_loss`."""
    rows = []
    for order, (b, r) in enumerate(zip(bin_loss, rand_loss, strict=True)):
        rows += [{"order": order, "probe": "float", "level": 0.0, "metric": f1},
                 {"order": order, "probe": "sign", "level": 0.0, "metric": f1 - b},
                 {"order": order, "probe": "B", "level": 0.0, "metric": f1 - r},
                 {"order": order, "probe": "prune", "level": 0.5, "metric": f1 - b / 2}]
    return pd.DataFrame(rows)


BIN = [0.9, 0.5, 0.4, 0.1, 0.05, 0.0]
RAND = [0.8, 0.6, 0.3, 0.2, 0.1, 0.01]


def test_matrix_gaps_and_their_agreement_over_one_models_matrices():
    table = bert_table(BIN, RAND)
    gaps = probes.matrix_gaps(table)
    assert gaps["delta_bin"].to_numpy() == pytest.approx(BIN)
    assert gaps["delta_rand"].to_numpy() == pytest.approx(RAND)
    rho = probes.gap_agreement(gaps)
    assert rho.mean == pytest.approx(1.0) and rho.n == 6 and rho.beyond_noise
    # one swap among six matrices: ρ = 0.943, which Student's exact t on r (4 df) decides
    swapped = probes.gap_agreement(gaps.assign(delta_rand=[0.8, 0.6, 0.3, 0.1, 0.2, 0.01]))
    assert swapped.mean == pytest.approx(0.943, abs=1e-3) and swapped.beyond_noise
    # half the matrices out of order: within noise
    mixed = probes.gap_agreement(gaps.assign(delta_rand=[0.2, 0.6, 0.01, 0.8, 0.1, 0.3]))
    assert not mixed.beyond_noise
    assert probes.matrix_gaps(table[table["probe"] != "B"]) is None


def test_the_modality_row_reads_images_and_text_and_without_text_is_not_run(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    results = synthetic_results()
    claim = {c.id: c for c in probes.CLAIMS}[probes.MODALITIES]
    assert claim.scope == "paper"
    value = probes.measure(results)[probes.MODALITIES]
    assert value["text"] is None and set(value["images"]) == {"fashion_mnist"}
    assert verdict(claim, value) == NOT_RUN  # the text arm (DistilBERT) did not run
    value = probes.measure({**results, "distilbert": bert_table(BIN, RAND)})[probes.MODALITIES]
    assert value["text_f1"] == pytest.approx(0.9) and value["text"].n == 6
    assert value["data"] == "fashion_mnist, conll2003"
    assert verdict(claim, value) == HOLDS
    reversed_ = bert_table(BIN, RAND[::-1])
    value = probes.measure({**results, "distilbert": reversed_})[probes.MODALITIES]
    assert verdict(claim, value) == FAILS
    untrained = bert_table(BIN, RAND, f1=0.3)
    value = probes.measure({**results, "distilbert": untrained})[probes.MODALITIES]
    assert verdict(claim, value).startswith("precondition failed: the models of both")


def test_binarization_keeps_easy_reads_the_loss_of_sign_w(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    measured = probes.measure(synthetic_results())
    kept = measured["binarization_keeps_easy_fashion_mnist"]
    # unprobed 98.0, 98.1, 98.2 against signed 85, 86, 87 at p = 0
    assert kept["loss"].mean == pytest.approx(12.1) and kept["loss"].n == 3
    claim = _claim("binarization_keeps_easy_fashion_mnist")
    assert verdict(claim, kept) == FAILS
    assert verdict(claim, {**kept, "loss": Estimate.of([1.0, 1.5, 2.0])}) == HOLDS
    assert verdict(claim, {**kept, "loss": Estimate.of([0.0, 4.0, 8.0])}) == WITHIN_NOISE


def test_layer_rows_are_headed_by_the_difference_that_decides():
    value = probes.measure(synthetic_results())["transformer_layers_standin"]
    claim = _claim("transformer_layers_standin")
    # first - last_block_1 = 70, first - last_block_2 = 75: the smaller decides
    assert headline(claim, value).startswith("70")
    assert headline(claim.previous[-2], value).startswith("80")  # the first loss alone


def test_randomized_layer_rows_read_null_model_b():
    results = synthetic_results()
    assert probes.measure(results)["transformer_layers_randomized_standin"] is None  # no B probe
    randomized = pd.DataFrame({"seed": [7, 7, 7, 8, 8, 8], "order": [0, 3, 4] * 2,
                               "probe": "B", "level": 0.0, "metric": [20, 85, 88, 15, 74, 77]})
    standin = pd.concat([results["standin"], randomized], ignore_index=True)
    measured = probes.measure({**results, "standin": standin})
    value = measured["transformer_layers_randomized_standin"]
    assert value["first"] == Estimate.of([70, 65])
    assert value["first_minus_last_block_1"] == Estimate.of([65, 59])
    v = verdicts(measured)
    # two models: too few
    assert v["transformer_layers_randomized_standin"] == f"{WITHIN_NOISE}: needs n ≈ 5 models"
    assert v["transformer_layers_randomized_distilbert"] == NOT_RUN
    untrained = verdicts({"transformer_layers_randomized_standin": {**value, "float": 30.0}})
    assert untrained["transformer_layers_randomized_standin"].startswith(
        "precondition failed: the stand-in learned its task")
    claim = {c.id: c for c in probes.CLAIMS}["transformer_layers_randomized_standin"]
    # added after the layer rows' first rule was replaced: the one-model rule is kept, and
    # the paired rule as registered (headed by the first loss, then by the difference)
    assert [old.rule for old in claim.previous] == [probes.claims._ONE_MODEL_RULE,
                                                    probes.claims._PAIRED_RULE,
                                                    probes.claims._PAIRED_RULE]
    assert claim.previous[-1].scope == "paper" and claim.scope == "ours"


def test_pairs_of_the_bundled_subset_take_the_full_sets_steps():
    assert probes.pair_epochs("fashion_mnist", 10, None) == 10
    assert probes.pair_epochs("mnist", 10, None) == 10
    assert probes.pair_epochs("mnist-5k", 10, None) == 150  # 6,000 vs 400 images per class
    assert probes.pair_epochs("mnist-5k", 5, 2000) == 25
    assert probes.pair_epochs("mnist-5k", 2, 200) == 2  # a smaller request: no scaling


def test_every_run_enters_and_a_run_at_chance_fails_the_precondition():
    measured = probes.measure(synthetic_results(runs=4, dead_hard_run=1))
    sep = measured["binarization_separates_fashion_mnist"]
    assert sep["at_chance_hard"] == 1 and sep["at_chance_easy"] == 0
    assert sep["hard"] == Estimate.of([50.0, 51.0, 52.0, 53.0]) and sep["gap"].n == 4
    assert sep["float_hard"] == pytest.approx((98.0 + 50.0 + 98.2 + 98.3) / 4)
    assert measured["hard_needs_magnitudes_fashion_mnist"]["B"].n == 4
    v = verdicts(measured)
    assert v["binarization_separates_fashion_mnist"].startswith("precondition failed: hard")
    assert v["phase_transition_fashion_mnist"].startswith("precondition failed: hard")


def test_the_bundled_subset_answers_the_mnist_claims():
    measured = probes.measure(synthetic_results("mnist-5k"))
    assert probes.claim_dataset("mnist-5k") == "mnist"
    assert measured["binarization_separates_mnist"]["data"] == "mnist-5k"
    assert "binarization_separates_fashion_mnist" not in measured
    row = evaluate(probes.CLAIMS, measured).set_index("id").loc["binarization_separates_mnist"]
    assert row["ours"].startswith("data=mnist-5k, gap=35 ± ")
    assert "mnist-5k/easy" in measured["stochastic_resonance"]


def test_config_coercion_and_bad_values():
    config = tiny_config(probes.Config, {"datasets": "[mnist]", "prune_levels": "[0.0, 0.5]",
                                   "lr": "1e-2", "train_per_class": "null", "seeds": "[7, 9]",
                                   "heatmap_runs": 2})
    assert config.datasets == (data.resolve("mnist"),) and config.prune_levels == (0.0, 0.5)
    assert config.lr == 0.01 and config.train_per_class is None
    assert config.seeds == (7, 9) and config.runs == 2 and config.seed == 7
    with pytest.raises(ConfigError, match="fashion_mnist"):
        tiny_config(probes.Config, {"datasets": ["cifar10"]})
    with pytest.raises(ConfigError, match="prune_levels"):
        tiny_config(probes.Config, {"prune_levels": [0.0, 1.0]})
    with pytest.raises(ConfigError, match="authors"):
        tiny_config(probes.Config, {"pair_choice": "random"})
    with pytest.raises(ConfigError, match="unknown parameter"):
        tiny_config(probes.Config, {"width_": 3})
    with pytest.raises(ConfigError, match="include 0.0"):
        tiny_config(probes.Config, {"flip_levels": [0.1]})
    with pytest.raises(ConfigError, match="repeat"):
        tiny_config(probes.Config, {"seeds": [1, 1]})
    with pytest.raises(ConfigError, match="heatmap_runs"):
        tiny_config(probes.Config, {"seeds": [1, 2], "heatmap_runs": 3})
    with pytest.raises(ConfigError, match="seeds and standin_seeds both hold 6, 9: the stand-in"):
        tiny_config(probes.Config, {"seeds": [0, 6, 9], "heatmap_runs": 1,
                              "standin_seeds": [9, 6, 12]})
    with pytest.raises(ConfigError, match="repeat"):
        tiny_config(probes.Config, {"standin_seeds": [12, 12]})
    assert confirmatory_seeds(tiny_config(probes.Config, {"seeds": [1, 2], "heatmap_runs": 1,
                                                    "standin_seeds": [3]})) == (1, 2, 3)


def test_distilbert_offline_message():
    table, status = probes.distilbert_case_study(tiny_config(probes.Config))
    assert table is None and "stand-in" in status


# --- the DistilBERT NER case study on a tiny model and CoNLL file in the real formats --------

# dslim/distilbert-NER's label order (IOB2), which differs from the datasets' ClassLabel order
NER_LABELS = ("O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC")
# Six sentences, tags in IOB2. "Ladki" and "Emirates" are not in the vocabulary as words: the
# tokenizer splits each into two sub-tokens.
NER_SENTENCES = (
    ("SOCCER - JAPAN GET LUCKY WIN , CHINA IN SURPRISE DEFEAT .",
     "O O B-LOC O O O O B-PER O O O O"),
    ("Nadim Ladki", "B-PER I-PER"),
    ("AL-AIN , United Arab Emirates 1996-12-06", "B-LOC O B-LOC I-LOC I-LOC O"),
    ("Japan began the defence of their Asian Cup title .", "B-LOC O O O O O B-MISC I-MISC O O"),
    ("But China saw their luck desert them .", "O B-LOC O O O O O O"),
    ("Germany Japan played in Ladki .", "B-LOC B-LOC O O B-LOC O"),
)
SPLIT_WORDS = {"Ladki": ("Lad", "##ki"), "Emirates": ("Emir", "##ates")}


def iob1(tags: list[str]) -> list[str]:
    """IOB2 -> IOB1 as in the shared task's files: B-X only right after an X entity."""
    return [f"I-{t[2:]}" if t.startswith("B-") and (i == 0 or tags[i - 1][2:] != t[2:]) else t
            for i, t in enumerate(tags)]


def write_conll_test(path, sentences=NER_SENTENCES) -> None:
    """A CoNLL-2003 file as distributed: "word POS chunk NER" lines, IOB1 tags, a blank line
    after every sentence, -DOCSTART- lines between documents (POS and chunk are dummies)."""
    lines = ["-DOCSTART- -X- -X- O", ""]
    for number, (words, tags) in enumerate(sentences):
        if number == 3:
            lines += ["-DOCSTART- -X- -X- O", ""]
        lines += [f"{w} NNP B-NP {t}" for w, t in zip(words.split(), iob1(tags.split()))] + [""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def tiny_ner_model(folder, layers: int = 2, steps: int = 80):
    """A DistilBertForTokenClassification (dim 32) with a WordPiece tokenizer, fitted for a
    few steps on NER_SENTENCES (first sub-tokens labelled) and saved with save_pretrained."""
    from transformers import (
        DistilBertConfig,
        DistilBertForTokenClassification,
        DistilBertTokenizerFast,
    )

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "-"]
    for words, _ in NER_SENTENCES:
        for word in words.split():
            pieces = SPLIT_WORDS.get(word) or word.replace("-", " - ").split()
            vocab += [p for p in pieces if p not in vocab]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = DistilBertTokenizerFast.from_pretrained(folder, do_lower_case=False,
                                                        model_max_length=64)
    labels = dict(enumerate(NER_LABELS))
    torch.manual_seed(0)
    model = DistilBertForTokenClassification(DistilBertConfig(
        vocab_size=len(vocab), dim=32, n_layers=layers, n_heads=2, hidden_dim=37,
        max_position_embeddings=64, id2label=labels,
        label2id={v: k for k, v in labels.items()}))
    words = [w.split() for w, _ in NER_SENTENCES]
    encoded = tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")
    targets = torch.full(encoded["input_ids"].shape, -100)
    for i, (_, tags) in enumerate(NER_SENTENCES):
        positions = probes.first_subtoken_positions(encoded.word_ids(i), len(words[i]))
        for p, tag in zip(positions, tags.split()):
            targets[i, p] = NER_LABELS.index(tag)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(**encoded, labels=targets).loss.backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def write_tiny_ner(root, layers: int = 2):
    """The case study's local files under a MEMLIB_DATA root; returns (model, tokenizer)."""
    write_conll_test(root / "conll2003" / "test.txt")
    return tiny_ner_model(root / "models" / "distilbert-NER", layers)


def test_parse_conll_reads_the_real_format_and_converts_iob1():
    text = ["-DOCSTART- -X- -X- O", "", "Nadim NNP B-NP I-PER", "Ladki NNP I-NP I-PER", "",
            "", "Japan NNP B-NP I-LOC", "China NNP I-NP B-LOC  ", "won VBD B-VP O",
            "Asian JJ B-NP I-MISC", "-DOCSTART- -X- -X- O", "", "AL-AIN NNP B-NP I-LOC"]
    assert probes.parse_conll(text) == [
        (["Nadim", "Ladki"], ["B-PER", "I-PER"]),
        (["Japan", "China", "won", "Asian"], ["B-LOC", "B-LOC", "O", "B-MISC"]),
        (["AL-AIN"], ["B-LOC"])]
    with pytest.raises(ValueError, match="line 2 is not 'word POS chunk NER'"):
        probes.parse_conll(["Japan NNP B-NP I-LOC", "China NNP"])


def test_iob2_keeps_iob2_and_fixes_iob1():
    iob2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "I-LOC", "B-MISC"]
    assert probes.iob2(iob2) == iob2
    assert probes.iob2(iob1(iob2)) == iob2
    assert iob1(iob2) == ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-LOC", "I-MISC"]
    assert probes.iob2(["I-LOC", "I-PER", "O", "I-PER"]) == ["B-LOC", "B-PER", "O", "B-PER"]


def test_first_subtoken_alignment(tmp_path):
    _, tokenizer = tiny_ner_model(tmp_path / "ner", steps=0)
    encoded = tokenizer([["Nadim", "Ladki", "won"]], is_split_into_words=True)
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"][0]) == [
        "[CLS]", "Nadim", "Lad", "##ki", "[UNK]", "[SEP]"]
    positions = probes.first_subtoken_positions(encoded.word_ids(0), 3)
    assert positions == [1, 2, 4]  # "##ki" (position 3) is never scored
    # predictions per position: B-PER on "Lad", I-PER on "##ki", B-LOC on "won"
    predicted = [0, 3, 4, 4, 7, 0]
    labels = dict(enumerate(NER_LABELS))
    assert probes.word_labels(predicted, positions, labels) == ["B-PER", "I-PER", "B-LOC"]
    predicted[3] = 1  # only the second sub-token of "Ladki" changes: nothing changes
    assert probes.word_labels(predicted, positions, labels) == ["B-PER", "I-PER", "B-LOC"]
    predicted[2] = 0
    assert probes.word_labels(predicted, positions, labels)[1] == "O"
    assert probes.word_labels(predicted, [1, None], labels) == ["B-PER", "O"]  # truncated


def test_distilbert_source_prefers_local_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    assert probes.distilbert_source(probes.DISTILBERT) == probes.DISTILBERT
    (tmp_path / "models" / "distilbert-NER").mkdir(parents=True)
    assert probes.distilbert_source(probes.DISTILBERT) == str(tmp_path / "models/distilbert-NER")
    with pytest.raises(FileNotFoundError, match="no model folder"):
        probes.distilbert_source(str(tmp_path / "x"))
    (tmp_path / "x").mkdir()
    assert probes.distilbert_source(str(tmp_path / "x")) == str(tmp_path / "x")


def test_distilbert_case_study_from_local_files(tmp_path, monkeypatch):
    from seqeval.metrics import f1_score

    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    torch.set_num_threads(1)
    model, tokenizer = write_tiny_ner(tmp_path, layers=3)
    config = tiny_config(probes.Config, distilbert=True, standin_prune_levels=(0.5,),
                           standin_noise_levels=(1.0,), standin_flip_levels=(0.1,))
    table, status = probes.distilbert_case_study(config)
    assert table is not None, status
    assert "run" in status and "not run" not in status and "\n" not in status
    assert "6 CoNLL-2003 test sentences" in status and "test.txt" in status
    matrices = probes.distilbert_matrices(model)
    assert matrices[3] == "distilbert.transformer.layer.2.ffn.lin1.weight"
    assert list(dict.fromkeys(table["matrix"])) == matrices
    assert len(table) == len(matrices) * len(probes.matrix_probes(config))
    assert table["metric"].between(0, 1).all()

    # the unperturbed model's F1, computed here without functional_call
    words = [w.split() for w, _ in NER_SENTENCES]
    encoded = tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        argmax = model(**encoded).logits.argmax(-1)
    predicted = [[NER_LABELS[argmax[i, p]] for p in
                  probes.first_subtoken_positions(encoded.word_ids(i), len(words[i]))]
                 for i in range(len(words))]
    baseline = f1_score([t.split() for _, t in NER_SENTENCES], predicted)
    assert baseline > 0.5  # the fitted tiny model finds most entities
    floats = table[table["probe"] == "float"]["metric"]
    assert len(floats) == len(matrices) and (floats == baseline).all()
    assert (table["metric"] != baseline).any()  # some probe changes some prediction
    drops = probes.layer_drops(table)
    assert set(drops) == {"float", "first", "last_block_1", "last_block_2"}

    # fewer sentences; a missing model folder and the hub offline: one line, not run
    table, status = probes.distilbert_case_study(
        tiny_config(probes.Config, distilbert=True, distilbert_sentences=2,
                    standin_prune_levels=(0.5,), standin_noise_levels=(1.0,),
                    standin_flip_levels=(0.1,)))
    assert "on 2 CoNLL-2003" in status
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    table, status = probes.distilbert_case_study(
        tiny_config(probes.Config, distilbert=True, distilbert_model=str(tmp_path / "absent")))
    assert table is None and "not run" in status and "\n" not in status
    assert "no model folder" in status
    # a local CoNLL file in another format: one line naming the file and the line
    (tmp_path / "conll2003" / "test.txt").write_text("Japan NNP B-NP\nChina NNP B-NP\n")
    table, status = probes.distilbert_case_study(config)
    assert table is None and "\n" not in status and "test.txt: line 1 is not" in status


TINY_RUN = {
    "width": 8, "epochs": 1, "seeds": [0, 1], "eval_batch_size": 100,
    "prune_levels": [0.0, 0.5], "noise_log2_levels": [0], "flip_levels": [0.0, 0.2],
    "null_draws": 1, "null_prune_levels": [0.0, 0.5], "curveball_trades": 2, "ssim_pairs": 5,
    "heatmap_classes": 3, "heatmap_runs": 1, "heatmap_epochs": 1, "heatmap_null_draws": 1,
    "standin_seeds": [2, 3], "standin_train": 60, "standin_test": 20, "standin_epochs": 1,
    "standin_prune_levels": [0.5], "standin_noise_levels": [1.0],
    "standin_flip_levels": [0.1]}


@pytest.fixture
def tiny_data(tmp_path, monkeypatch):
    """Tiny random Fashion-MNIST files in MEMLIB_DATA."""
    from test_data import write_mnist_like

    from memlib import data

    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path / "data"))
    write_mnist_like(tmp_path / "data" / "fashion_mnist", 300, 100, gz=False, seed=2)
    data.clear_cache()
    yield
    data.clear_cache()


def test_parallel_runs_compute_what_run_loads_with_the_same_results(tmp_path, monkeypatch,
                                                                     tiny_data):
    from parallel_runs_check import check_parallel_runs

    config = tiny_config(probes.Config, {**TINY_RUN, "datasets": ["fashion_mnist"]})
    check_parallel_runs(probes, config, tmp_path, monkeypatch)


@pytest.fixture
def one_thread():
    """One torch thread, as below full scale."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_pairs_chosen_by_ssim_prefetch_the_distances_first(monkeypatch, tiny_data, one_thread):
    from memlib import cache, parallel

    phases = []

    def in_this_process(calls, processes, desc="runs"):
        phases.append([f.__name__ for f, _ in calls])
        for f, a in calls:
            f(a)

    monkeypatch.setattr(parallel, "prefetch", in_this_process)
    config = tiny_config(probes.Config, {**TINY_RUN, "datasets": ["fashion_mnist"],
                                   "pair_choice": "ssim", "parallel_runs": 2})
    probes.prefetch_runs(config)
    assert phases == [["cached_difficulty"],
                      ["cached_standin", "cached_standin", "cached_task", "cached_task",
                       "cached_heatmap"]]
    computed = cache.activity["computed"]
    probes.run(config)
    assert cache.activity["computed"] == computed and phases[2:] == [[], []]


def test_each_standin_seed_trains_its_own_model(tiny_data, one_thread):
    config = tiny_config(probes.Config, {**TINY_RUN, "datasets": ["fashion_mnist"]})
    first, second = (probes.standin_model(config, seed) for seed in config.standin_seeds)
    assert not torch.equal(first.head.weight, second.head.weight)
    assert torch.equal(probes.standin_model(config, 2).head.weight, first.head.weight)
    tables = probes.standin_tables(config)
    assert tables["seed"].unique().tolist() == [2, 3]
    unprobed = tables.query("probe == 'float'").groupby("seed")["metric"]
    assert unprobed.nunique().tolist() == [1, 1]  # one model each, probed one matrix at a time
    assert probes.layer_estimates(tables)["models"] == 2
