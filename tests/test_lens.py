"""memlib.studies.lens: per-example scores on hand-built margins, the study modules' own
scores, the layer probes, the claim measures, the config, and one tiny watched run."""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from tiny import tiny
from torch.func import functional_call

from memlib import data
from memlib.config import ConfigError, confirmatory_seeds, to_dict
from memlib.models import MLP, SmallCNN, WideResNet
from memlib.presets import preset_of
from memlib.seed import generator
from memlib.studies import fisher, lens, probes, rlp

TESTS = str(Path(__file__).resolve().parent)

# --- per-example scores from the margins over training -------------------------------------

# each list: one example's margins at epochs 0..4 (T = 4); HAND: rows epochs, columns examples
HAND = torch.tensor([
    [-1.0, 1.0, 2.0, 3.0, 4.0],  # A: correct from epoch 1 on
    [-1.0, 2.0, -1.0, 1.0, 2.0],  # B: correct -> wrong -> correct
    [3.0, -1.0, -2.0, 0.0, -1.0],  # C: correct only at initialisation (margin 0: not correct)
    [1.0, 1.0, 1.0, 1.0, 1.0],  # D: correct at every epoch, epoch 0 included
    [-1.0, 1.0, -1.0, 1.0, -0.5],  # E: forgotten twice, wrong at the end
    [1.0, -1.0, 1.0, 1.0, 1.0],  # F: right by chance at initialisation, then wrong, then learned
]).T
T = len(HAND) - 1


def test_hand_built_margins():
    assert HAND.shape == (5, 6)
    assert lens.aum(HAND).tolist() == [2.5, 1.0, -1.0, 1.0, 0.125, 0.5]
    # C never predicted after epoch 0: T + 1 forgetting events (Toneva's convention), and
    # learned "after the end"; F's correct guess at initialisation is no learning event
    assert lens.forgetting_counts(HAND).tolist() == [0, 1, T + 1, 0, 2, 0]
    assert lens.learned_epoch(HAND).tolist() == [1, 3, T + 1, 0, T + 1, 2]
    for score in (lens.aum, lens.forgetting_counts, lens.learned_epoch):
        assert score(HAND).dtype == torch.float64 and score(HAND).shape == (6,)


def reference_forgetting(m: torch.Tensor) -> list[float]:
    out = []
    for column in m.T.tolist():
        correct = [v > 0 for v in column[1:]]  # epochs 1..T
        if not any(correct):
            out.append(float(len(column)))
        else:
            out.append(float(sum(a and not b for a, b in zip(correct, correct[1:]))))
    return out


def reference_learned(m: torch.Tensor) -> list[float]:
    return [float(max((e + 1 for e, v in enumerate(column) if v <= 0), default=0))
            for column in m.T.tolist()]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(0, 10_000))
def test_margin_scores_properties(epochs, n, seed):
    g = torch.Generator().manual_seed(seed)
    # small integers: zero margins (not correct) and long runs of either sign are common
    m = torch.randint(-2, 3, (epochs + 1, n), generator=g).float()
    forgetting, learned = lens.forgetting_counts(m), lens.learned_epoch(m)
    assert forgetting.tolist() == reference_forgetting(m)
    assert learned.tolist() == reference_learned(m)
    assert (forgetting >= 0).all() and (forgetting <= epochs + 1).all()
    assert (learned >= 0).all() and (learned <= epochs + 1).all()
    # AUM as study 3 accumulates it: margins of epochs 1..T summed, over T
    num_classes = 3
    labels = torch.randint(0, num_classes, (n,), generator=g)
    logits = 3 * torch.randn(epochs + 1, n, num_classes, generator=g)
    margins = torch.stack([fisher.margins(z, labels) for z in logits])
    margin_sum = torch.zeros(n, dtype=torch.float64)
    for e in range(1, epochs + 1):
        margin_sum += fisher.margins(logits[e], labels)
    torch.testing.assert_close(lens.aum(margins), margin_sum / epochs, rtol=1e-12, atol=1e-12)


# --- every per-example score is the study module's own ---------------------------------------


def tiny_watched(n=40, width=5, num_classes=3, epochs=3, seed=0):
    """What `lens_run` stores of its scatter examples, drawn at random."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    logits = [2 * torch.randn(n, num_classes, generator=g) for _ in range(epochs + 1)]
    return {"margins": torch.stack([fisher.margins(z, labels).float() for z in logits]),
            "h": torch.randn(n, width, generator=g), "z": logits[2],
            "final_logits": logits[-1], "head_logits": torch.randn(n, 3, 4, generator=g),
            "random": torch.randint(0, 4, (n, 3), generator=g), "labels": labels,
            "flipped": torch.rand(n, generator=g) < 0.3,
            "position": torch.arange(100, 100 + 2 * n, 2)}


def test_example_scores_are_the_study_modules_own():
    watched = tiny_watched()
    labels = watched["labels"]
    table = lens.example_scores(watched, exact=True)
    assert len(table) == 40
    assert {col for col, _ in lens.SCORES.values()} <= set(table.columns)
    lam, z = fisher.decompose(watched["h"], watched["z"], labels)
    np.testing.assert_allclose(table["delta_exact"], fisher.loo_exact(lam, z).numpy(),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(table["delta_first"], fisher.loo_first_order(lam, z).numpy(),
                               rtol=0, atol=1e-12)
    # the attribution is of the er peak's features and logits, not of the final ones
    final_lam, final_z = fisher.decompose(watched["h"], watched["final_logits"], labels)
    assert not np.allclose(table["delta_first"], fisher.loo_first_order(final_lam, final_z))
    nll = -watched["final_logits"].double().log_softmax(1).gather(1, labels[:, None])[:, 0]
    np.testing.assert_allclose(table["final_loss"], nll.numpy(), rtol=1e-12)
    m = watched["margins"]
    np.testing.assert_array_equal(table["aum"], lens.aum(m).numpy())
    np.testing.assert_array_equal(table["forgetting"], lens.forgetting_counts(m).numpy())
    np.testing.assert_array_equal(table["learned_epoch"], lens.learned_epoch(m).numpy())
    # the deepest layer's heads' mean probability of each example's own random labels
    own = torch.stack([watched["head_logits"][:, k].softmax(1)[torch.arange(40),
                                                              watched["random"][:, k]]
                       for k in range(3)]).mean(0)
    np.testing.assert_allclose(table["rlp_confidence"], own.numpy(), rtol=1e-6)
    assert table["position"].tolist() == watched["position"].tolist()
    assert table["flipped"].tolist() == watched["flipped"].tolist()


def test_example_scores_without_exact_loo():
    watched = tiny_watched(seed=1)
    fast = lens.example_scores(watched, exact=False)
    full = lens.example_scores(watched, exact=True)
    assert len(fast) == 40 and fast["delta_exact"].isna().all()
    assert full["delta_exact"].notna().all()
    pd.testing.assert_frame_equal(fast.drop(columns="delta_exact"),
                                  full.drop(columns="delta_exact"))


# --- comparing the scores: AUROC and agreement ---------------------------------------------


def scores_frame(base: np.ndarray, flipped: np.ndarray, reverse: bool = False, **extra):
    """Every SCORES column built so that its oriented score is `base` (or -base): AUM, whose
    sign is -1, is then *lower* on the examples with a high base."""
    out = {"flipped": flipped, **extra}
    for col, sign in lens.SCORES.values():
        out[col] = (-1 if reverse else 1) * sign * base
    return pd.DataFrame(out)


def test_corruption_auroc_perfect_reversed_and_without_corruption():
    flipped = np.array([False] * 6 + [True] * 4)
    base = np.arange(10.0)  # higher on every flipped example
    perfect = scores_frame(base, flipped, seed=0)
    assert (perfect.loc[flipped, "aum"].max() < perfect.loc[~flipped, "aum"].min())
    reversed_ = scores_frame(base, flipped, reverse=True, seed=1)
    clean = scores_frame(base, np.zeros(10, bool), seed=2)
    table = lens.corruption_auroc(pd.concat([perfect, reversed_, clean]), ["seed"])
    assert len(table) == 3 * len(lens.SCORES) and set(table["score"]) == set(lens.SCORES)
    auroc = table.pivot(index="score", columns="seed", values="auroc")
    assert (auroc[0] == 1).all() and (auroc[1] == 0).all() and auroc[2].isna().all()
    # an exact attribution that was not computed has no AUROC
    skipped = perfect.assign(delta_exact=math.nan)
    table = lens.corruption_auroc(skipped, ["seed"]).set_index("score")["auroc"]
    assert math.isnan(table["Fisher LOO (exact)"])
    assert table.drop("Fisher LOO (exact)").eq(1).all()


def test_agreement_is_a_spearman_matrix_per_run():
    rng = np.random.default_rng(0)
    frames = []
    for seed in (0, 1):
        n = 30
        frame = pd.DataFrame({"seed": seed, "flipped": rng.random(n) < 0.3,
                              **{col: rng.normal(size=n) for col, _ in lens.SCORES.values()}})
        # AUM (sign -1) a decreasing transform of the final loss: oriented, an increasing one
        frame["aum"] = -frame["final_loss"] ** 3
        frame["forgetting"] = np.exp(frame["delta_first"])
        frame["delta_exact"] = math.nan  # not computed: left out
        frames.append(frame)
    table = lens.agreement(pd.concat(frames, ignore_index=True), ["seed"])
    assert set(table.columns) == {"seed", "a", "b", "rho"}
    names = [n for n in lens.SCORES if n != "Fisher LOO (exact)"]
    for seed, frame in zip((0, 1), frames, strict=True):
        rho = table[table["seed"] == seed].pivot(index="a", columns="b", values="rho")
        assert sorted(rho.index) == sorted(names) == sorted(rho.columns)
        np.testing.assert_allclose(rho.to_numpy(), rho.to_numpy().T, atol=1e-12)
        np.testing.assert_allclose(np.diag(rho.loc[names, names].to_numpy()), 1.0)
        assert rho.loc["final loss", "AUM"] == pytest.approx(1.0)
        assert rho.loc["Fisher LOO (first order)", "forgetting events"] == pytest.approx(1.0)
        expected = spearmanr(frame["final_loss"], frame["rlp_confidence"]).statistic
        assert rho.loc["final loss", "random-label confidence"] == pytest.approx(expected)
        assert abs(rho.loc["final loss", "epoch learned"]) < 0.99


# --- layer probes ----------------------------------------------------------------------------


def test_layer_weights_mlp_smallcnn_and_wrn():
    mlp = MLP(784, (8, 8), 10)
    assert lens.layer_weights(mlp, ("act1", "act2")) == {"act1": ["fc1.weight"],
                                                         "act2": ["fc2.weight"]}
    cnn = SmallCNN(channels=(4, 8, 8))
    assert lens.layer_weights(cnn, ("block1", "block2", "block3")) == {
        f"block{i}": [f"block{i}.0.weight"] for i in (1, 2, 3)}
    # the stem conv computes block1; the pooled features have no weights of their own
    wrn = WideResNet(depth=10, width=1, num_classes=10)
    weights = lens.layer_weights(wrn, ("block1", "block2", "block3", "pool"))
    assert weights["block1"][0] == "conv.weight" and weights["pool"] == []
    assert "block2.0.shortcut.weight" in weights["block2"]
    named = dict(wrn.named_parameters())
    assert all(named[n].ndim == 4 for names in weights.values() for n in names)
    assert not any(n.startswith("fc") or ".bn" in n for names in weights.values() for n in names)


def accuracy(model, params, x, y) -> float:
    with torch.no_grad():
        return 100.0 * (functional_call(model, params, (x,)).argmax(1) == y).double().mean().item()


@pytest.fixture
def trained_mlp():
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 6, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()  # three classes
    torch.manual_seed(0)
    model = MLP(6, (16, 16), 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(model(x[:200]), y[:200]).backward()
        opt.step()
    return model.eval(), x[200:], y[200:]


def test_layer_probes_match_hand_binarization(trained_mlp):
    model, x, y = trained_mlp
    before = {k: v.clone() for k, v in model.state_dict().items()}
    table = lens.layer_probes(model, ("act1", "act2"), x, y, draws=3, seed=5)
    assert table["layer"].tolist() == ["act1", "act2"] and table["depth"].tolist() == [1, 2]
    assert {"sign", "scaled_sign", "null_b", "float", "depth"} <= set(table.columns)
    # the model is untouched
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    params = probes.detached_params(model)
    own = 100.0 * (model(x).argmax(1) == y).double().mean().item()
    assert own > 80 and (table["float"] == own).all()
    for row in table.itertuples():
        name = f"fc{row.depth}.weight"
        signed = probes.apply_probe(params, [name], probes.binarize)
        assert row.sign == pytest.approx(accuracy(model, signed, x, y))
        scaled = probes.apply_probe(params, [name], lambda w: probes.binarize(w, True))
        assert row.scaled_sign == pytest.approx(accuracy(model, scaled, x, y))
        pruned = probes.apply_probe(params, [name], lambda w: probes.prune(w, lens.PRUNED))
        assert row.pruned == pytest.approx(accuracy(model, pruned, x, y))
    # null model B of act1: the median of the first three draws of the seed's generator
    gen = generator(5)
    draws = [accuracy(model, probes.apply_probe(params, ["fc1.weight"],
                                                lambda w: probes.null_model(w, "B", gen)), x, y)
             for _ in range(3)]
    assert table.loc[0, "null_b"] == pytest.approx(sorted(draws)[1])
    assert table["sign"].tolist() != [own, own]  # binarizing changes something
    again = lens.layer_probes(model, ("act1", "act2"), x, y, draws=3, seed=5)
    pd.testing.assert_frame_equal(table, again)


# --- claim measures ------------------------------------------------------------------------


def test_breaks_first_picks_the_memorizing_layer_and_its_rival():
    rows = []
    excess = {"a": 1.0, "b": 2.0, "c": 9.0, "d": 0.5}
    drop = {"a": 5.0, "b": 3.0, "c": 4.0, "d": 1.0}
    for seed in (0, 1, 2):
        for layer in excess:
            rows.append({"seed": seed, "layer": layer, "excess": excess[layer] + seed,
                         "drop_sign": drop[layer] + (0.5 * seed if layer == "c" else 0)})
    out = lens.breaks_first(pd.DataFrame(rows))
    assert out["layer"] == "c" and out["rival"] == "b"  # others by drop: a (5), b (3), d (1)
    assert out["excess"].mean == pytest.approx(10.0) and out["excess"].n == 3
    assert out["margin"].mean == pytest.approx(1.5)  # 4 + 0.5 seed - 3, seeds 0..2
    assert out["margin"].n == 3
    assert lens.breaks_first(pd.DataFrame(rows)[lambda f: f["layer"].isin(["a", "c"])]) is None


def test_er_peak_epoch_ignores_epoch_zero_and_missing_er():
    curve = pd.DataFrame({"epoch": [0, 1, 2, 3, 4, 5],
                          "er": [99.0, 5.0, math.nan, 7.0, math.nan, 6.0]})
    assert lens.er_peak_epoch(curve) == 3
    assert lens.er_peak_epoch(curve.iloc[::-1]) == 3
    assert lens.er_peak_epoch(curve.assign(er=[99.0, 8.0, 50.0, 7.0, 1.0, 6.0])) == 2


def test_fall_after_peak_tells_a_peak_from_a_curve_still_rising():
    curve = pd.DataFrame({"epoch": [0, 2, 4, 6], "er": [99.0, 50.0, 80.0, 60.0]})
    assert lens.fall_after_peak(curve) == pytest.approx(0.25)  # epoch 0 is not the peak
    assert lens.fall_after_peak(curve.iloc[::-1]) == pytest.approx(0.25)
    assert lens.fall_after_peak(curve.assign(er=[99.0, 10.0, 20.0, math.nan])) == 0.0


def test_rlp_half_epoch_is_study_1s_onset_of_the_trained_minus_frozen_excess():
    epochs, values = [0, 2, 4, 6, 8], [0.1, 0.12, 0.35, 0.4, 0.5]
    frozen = [0.1, 0.1, 0.3, 0.3, 0.3]  # the head learns a little by itself
    curve = pd.DataFrame({"epoch": epochs, "rlp_deepest": values, "frozen_deepest": frozen})
    excess = [v - f for v, f in zip(values, frozen, strict=True)]
    expected = rlp.onset_epoch(excess, 0.0, epochs=epochs)
    assert expected == 6  # over chance alone it would be epoch 4
    assert lens.rlp_half_epoch(curve) == expected
    assert lens.rlp_half_epoch(curve.sample(frac=1, random_state=0)) == expected  # order
    assert lens.rlp_half_epoch(curve.assign(frozen_deepest=0.6)) is None  # no excess


# --- config --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    {"datasets": ("imagenet",)}, {"noise_rates": (1.5,)}, {"datasets": ()},
    {"scatter_samples": 5}, {"study1_sets": ("epochs",)}, {"study1_sets": ("epochs=-1",)},
    {"study1_sets": ("no_such_knob=1",)}, {"extra_seeds": (1, 1)}, {"extra_seeds": (2,)},
    {"model": "wrn"},
])
def test_config_rejects_bad_values_with_one_line(bad):
    with pytest.raises(ConfigError) as err:
        tiny(lens.Config, **bad)
    assert "\n" not in str(err.value)
    if "study1_sets" in bad:
        assert "study1_sets" in str(err.value)
    if bad == {"extra_seeds": (2,)}:  # tiny study 1 runs seeds 0, 1, 2 already
        assert "repeats study 1's seed 2" in str(err.value)


def test_the_seeds_are_study_1s_then_the_lenss_own():
    config = tiny(lens.Config, setting="smoke", study1_sets=("seeds=[7, 3]",),
                  extra_seeds=(40, 41))
    assert config.study1.seeds == (7, 3) and config.seeds == (7, 3, 40, 41)
    # derived, never a parameter: a manifest records study 1's changes and the extra seeds
    assert "seeds" not in to_dict(config) and to_dict(config)["extra_seeds"] == [40, 41]
    assert config.seeds == confirmatory_seeds(config)
    # the small preset: study 1's registered confirmatory seeds first, read from its preset
    small = preset_of(lens.Config, "lens", "small")
    assert small.seeds[:len(small.study1.seeds)] == small.study1.seeds
    assert small.study1.seeds == preset_of(rlp.Config, "rlp", "small").seeds


@pytest.mark.parametrize("setting", ["smoke", "small"])
def test_study_1s_runs_of_the_model_are_the_lenss_own(setting):
    """At each preset the lens's clean runs on study 1's dataset and seeds are runs study 1's
    plan trains (the same RunSpec, hence the same cache entry), and its frozen baselines are
    study 1's."""
    config = preset_of(lens.Config, "lens", setting)
    study1 = config.study1
    runs = lens.lens_runs(config)
    shared = lens.shared_runs(config, runs)
    assert [(r.run.dataset, r.run.noise, r.run.seed) for r in shared] == [
        (study1.dataset, study1.noise, seed) for seed in study1.seeds]
    assert shared == lens.study1_runs(config)
    # study 1's layer-wise run of the lens's model, as its plan makes it
    assert {r.run for r in shared} == {rlp.spec(study1, model=config.model, seed=seed)
                                       for seed in study1.seeds}
    plan = rlp.planned_runs(study1)
    frozen = {s for f, s in plan if f is rlp.cached_frozen}
    assert {lens.frozen_spec(r.run, study1) for r in shared} <= frozen
    # the lens computes study 1's training of them itself when study 1 has not
    assert {s for f, s in lens.planned_runs(config) if f is rlp.cached_run} == {
        r.run for r in shared}
    # every noisy run is study 1's recipe at another noise rate
    for r in runs:
        assert r.run == dataclasses.replace(rlp.spec(study1, model=config.model,
                                                     seed=r.run.seed, dataset=r.run.dataset),
                                            noise=r.run.noise)


def test_runs_cover_the_grid_and_share_the_frozen_baseline():
    config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.0, 0.4),
                  study1_sets=("seeds=[0, 1]",), measure_every=3)
    planned = lens.lens_runs(config)
    assert [(r.run.dataset, r.run.noise, r.run.seed) for r in planned] == [
        ("digits", n, s) for n in (0.0, 0.4) for s in (0, 1)]
    assert all(r.measure_every == 3 and r.run.model == config.model for r in planned)
    # study 1 runs fashion_mnist, which this lens does not: none of study 1's own runs
    assert lens.study1_runs(config) == []
    study1 = lens.study1_config(config)
    frozen = {lens.frozen_spec(r.run, study1) for r in planned}
    assert len(frozen) == 2  # one per seed, whatever the noise
    assert {f.noise for f in frozen} == {study1.noise}


def test_study1_sets_change_the_watched_runs():
    config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                  study1_sets=("epochs=3", "widths=[8, 8]", "seeds=[0]"))
    (r,) = lens.lens_runs(config)
    assert r.run.epochs == 3 and r.run.widths == (8, 8) and r.run.noise == 0.4
    plain = lens.lens_runs(dataclasses.replace(config, study1_sets=("seeds=[0]",)))[0].run
    assert dataclasses.replace(r.run, epochs=plain.epochs, widths=plain.widths) == plain


# --- one tiny watched run ---------------------------------------------------------------------


@pytest.fixture
def tiny_fashion(tmp_path, monkeypatch):
    """Random images in Fashion-MNIST's IDX files under $MEMLIB_DATA: 100 train, 50 test."""
    from test_data import write_mnist_like

    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path / "data"))
    write_mnist_like(tmp_path / "data" / "fashion_mnist", 100, 50, gz=False)
    torch.set_num_threads(1)
    data.clear_cache()
    yield
    data.clear_cache()


# the second run has dropout: training then draws from the global RNG and depends on the
# model's train/eval mode, so an observer that drew or left the mode changed would show
@pytest.mark.parametrize("scatter, exact_max, dropout", [(None, 1000, 0.0), (30, 10, 0.2)])
def test_lens_run_watches_without_changing_training(tiny_fashion, scatter, exact_max, dropout):
    # three heads per layer: the lens's curve reads the deepest layer's heads as study 1's
    # history does (the mean over the layer's heads)
    config = tiny(rlp.Config, dataset="fashion_mnist", train_samples=60, test_samples=40,
                        validation_samples=20, widths=(16, 16), epochs=2, batch_size=32,
                        head_project=0, long_tail_ratio=1.0, heads=3,
                        layer_models=("mlp",))
    s = rlp.spec(config, noise=0.4, dropout=dropout)
    r = lens.LensRun(run=s, scatter_samples=scatter, measure_every=1)
    out = lens.lens_run(r)
    scores = lens.measure_run(lens.LensMeasures(r, exact_loo_max=exact_max, null_draws=1), out)
    d = rlp.load_data(s)
    flipped = (d["y"] != d["clean_y"]).cpu()

    examples = scores["examples"]
    positions = (torch.arange(60) if scatter is None else
                 data.stratified_subset(d["clean_y"], count=scatter, seed=s.data_seed + 4))
    assert examples["position"].tolist() == positions.tolist()
    assert examples["flipped"].tolist() == flipped[positions].tolist()
    assert examples["flipped"].any()
    assert examples["delta_exact"].notna().all() == (scatter is None)
    assert examples["delta_exact"].isna().all() == (scatter is not None)
    assert examples.drop(columns="delta_exact").notna().all().all()
    assert examples["forgetting"].between(0, 3).all()
    assert examples["learned_epoch"].between(0, 3).all()

    curves = out["curves"]
    assert curves["epoch"].tolist() == [0, 1, 2] and curves["er"].notna().all()
    assert out["peak_epoch"] == lens.er_peak_epoch(curves) and out["peak_epoch"] in (1, 2)
    assert out["chance"] == pytest.approx(0.1)
    assert scores["layers"]["layer"].tolist() == ["act1", "act2"] == out["layers"]

    # the observer only evaluates: the same training as study 1's plain run, every field of
    # what study 1 stores of it the same bits
    plain_run = rlp.train_run(s)
    assert out["study1_bits"] == lens.field_digests(plain_run)
    assert set(out["study1_bits"]) >= {"history", "test_pred", "features", "collapse"}
    plain = plain_run["history"]
    watched = out["history"]
    last, plain_last = watched.iloc[-1], plain.iloc[-1]
    columns = ["train_acc", "test_acc", *[c for c in plain.columns if c.startswith("rlp_")]]
    assert columns[2:] == ["rlp_act1", "rlp_act2"]
    for column in columns:
        assert last[column] == plain_last[column], column
    pd.testing.assert_frame_equal(watched, plain)
    assert scores["layers"]["rlp_acc"].tolist() == [plain_last["rlp_act1"],
                                                    plain_last["rlp_act2"]]
    assert curves["test_acc"].tolist() == plain["test_acc"].tolist()
    if scatter is None:  # the curves see what the history measures, on the same examples
        np.testing.assert_allclose(curves["rlp_deepest"], plain["rlp_act2"], atol=1e-6)
        share = flipped.double().mean().item()
        fit = (1 - share) * curves["clean_fit"] + share * curves["noisy_fit"]
        np.testing.assert_allclose(fit, plain["train_acc"], atol=1e-6)
        assert curves["noisy_fit"].iloc[-1] == pytest.approx(out["noisy_fit"])


def test_scatter_smaller_than_the_classes_is_one_clear_error():
    spec = lens.lens_runs(tiny(lens.Config, setting="smoke", datasets=("digits",)))[0].run
    clean = torch.arange(100) % 10
    assert lens.scatter_positions(spec, clean, 20).tolist() == sorted(
        lens.scatter_positions(spec, clean, 20).tolist())
    assert torch.bincount(clean[lens.scatter_positions(spec, clean, 20)]).tolist() == [2] * 10
    with pytest.raises(ConfigError, match="fewer than the 10 classes"):
        lens.scatter_positions(spec, clean, 9)


def test_lens_runs_are_study_1s_and_share_study_1s_frozen_runs():
    config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                  study1_sets=("seeds=[0]",))
    (r,) = lens.lens_runs(config)
    study1 = lens.study1_config(config)
    # study 1's own recipe, its test set, stored features and measurements included
    assert r.run == rlp.spec(study1, dataset="digits", noise=0.4, seed=0)
    assert (r.run.test_samples, r.run.feature_grid) == (study1.test_samples,
                                                        study1.feature_grid)
    frozen = lens.frozen_spec(r.run, study1)
    assert frozen == rlp.spec(study1, dataset="digits", seed=0)  # study 1's own entry


# --- the identity check: the lens's training against what study 1 stored, bit for bit -------


def tiny_shared_config():
    """A lens whose clean runs on digits are study 1's own (study 1 runs digits here)."""
    return tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                study1_sets=("dataset=digits", "epochs=2", "widths=[8, 8]",
                             "train_samples=200", "test_samples=100",
                             "validation_samples=100", "seeds=[0]"), null_draws=1)


def tampered(path: Path, change) -> None:
    """Study 1's entry at `path`, one stored value changed by `change`, stored again as an
    intact entry (its own digest recomputed): what a training that differed would leave."""
    from memlib import cache

    value = cache.load(path)
    change(value)
    cache.save(path, value)
    assert cache.intact(path)


def test_the_identity_check_compares_the_stored_bits_and_fails_on_a_differing_entry():
    torch.set_num_threads(1)
    config = tiny_shared_config()
    results = lens.run(config)
    # study 1's clean run, and its unregularized noise-arm run: at two epochs measured at
    # the last alone, as the lens's measured every other epoch
    noisy, shared = lens.shared_runs(config, lens.lens_runs(config))
    assert [(r.run.dataset, r.run.noise, r.run.seed) for r in (noisy, shared)] == [
        ("digits", 0.4, 0), ("digits", 0.0, 0)]
    table = results["identity"]
    assert table[["dataset", "noise", "seed", "differing"]].values.tolist() == [
        ["digits", 0.4, 0, ""], ["digits", 0.0, 0, ""]]
    assert table["fields"].iloc[1] == len(rlp.cached_run(shared.run)) >= 10
    sentence = lens.identity_sentence(table, len(results["specs"]))
    assert sentence.startswith("Study 1 trains two of the lens's two runs (digits, 40% noise "
                               "and clean labels, seed 0).") and "unchanged" in sentence
    path = rlp.cached_run.path(shared.run)

    def one_feature(v):  # one bit of one stored tensor deep inside the entry
        first = v["features"][0]
        name = next(iter(first))
        first[name] = first[name].clone()
        first[name].view(torch.int16).view(-1)[0] ^= 1

    def one_prediction(v):
        v["test_pred"] = v["test_pred"].clone()
        v["test_pred"][0] += 1

    def one_history_value(v):  # a table's value one ulp off, which a tolerance would pass
        v["history"] = v["history"].copy()
        first = v["history"].loc[0, "train_acc"]
        v["history"].loc[0, "train_acc"] = np.nextafter(first, 2.0)

    def a_field_more(v):
        v["extra"] = 1

    original = path.read_bytes()
    for change, field in [(one_feature, "features"), (one_prediction, "test_pred"),
                          (one_history_value, "history"), (a_field_more, "extra")]:
        tampered(path, change)
        table = lens.identity([shared])
        assert table["differing"].tolist() == [field]
        sentence = lens.identity_sentence(table, 2)
        assert sentence.startswith("The identity check failed")
        assert f"clean labels, seed 0 (`{field}`)" in sentence
        assert "\n" not in sentence and "{" not in sentence
        path.write_bytes(original)
    assert lens.identity([shared])["differing"].tolist() == [""]


def test_without_a_shared_run_the_check_says_so_in_one_sentence():
    config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                  study1_sets=("seeds=[0]",))
    assert lens.shared_runs(config, lens.lens_runs(config)) == []
    sentence = lens.identity_sentence(lens.identity([]), 1)
    assert sentence.startswith("None of the lens's runs (one in all)") and "not checked" in sentence


NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "05_memorization_lens.py"


@pytest.mark.notebook
def test_the_smoke_notebook_checks_and_passes_the_identity_with_study_1(smoke_runs):
    """In the pipeline's smoke run (study 1 and the lens in parallel), the lens's runs that
    study 1 also trains store the same bits as study 1's entries, and the executed notebook
    says so in words."""
    out = smoke_runs.run(NOTEBOOK)
    table = pd.read_csv(out / "identity.csv", keep_default_na=False)
    assert len(table) == 2 and (table["differing"] == "").all(), table
    published = (out / f"{NOTEBOOK.stem}.ipynb").read_text(encoding="utf-8")
    assert "the lens watched study 1's own training, unchanged" in published
    assert "identity check failed" not in published and "not checked" not in published


# --- the measures: a computation over what the training run stored ----------------------------


def test_the_measures_are_keyed_by_the_run_their_settings_and_the_fisher_kernel(monkeypatch):
    config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                  study1_sets=("seeds=[0]",))
    (m,) = lens.lens_measures(config)
    spec = lens.cached_measures.spec(m)
    assert spec["run"] == lens.cached_lens.key(m.watched) and spec["device"] == "cpu"
    more = lens.lens_measures(dataclasses.replace(config, null_draws=5))[0]
    # the measures' settings re-key the measures, never the training run
    assert lens.cached_measures.key(more) != lens.cached_measures.key(m)
    assert more.watched == m.watched
    fisher.method._kernel.cache_clear()
    try:
        with_c = lens.cached_measures.key(m)
        monkeypatch.setenv("MEMLIB_NO_CC", "1")
        fisher.method._kernel.cache_clear()
        assert lens.cached_measures.spec(m)["fisher_kernel"] == "torch"
        assert lens.cached_measures.key(m) != with_c or shutil.which("cc") is None
    finally:
        fisher.method._kernel.cache_clear()


# computes the tiny lens's plan into $MEMLIB_CACHE with the memlib on PYTHONPATH
PLAN = """
from tiny import tiny
from memlib.studies import lens
config = tiny(lens.Config, setting="smoke", datasets=("digits",), noise_rates=(0.4,),
              study1_sets=("epochs=2", "widths=[8, 8]", "train_samples=200",
                           "test_samples=100", "validation_samples=100", "seeds=[0]"),
              null_draws=1)
for function, argument in lens.planned_runs(config):
    function(argument)
"""


def computed_entries(package, cache_dir) -> collections.Counter:
    """The entries (by computation) a fresh process importing memlib from `package`'s parent
    adds to `cache_dir` as it computes the tiny lens's plan."""
    before = set(cache_dir.glob("*.pt"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package.parent), TESTS]),
           "MEMLIB_CACHE": str(cache_dir), "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", PLAN], env=env, check=True, capture_output=True,
                   cwd=package.parent, timeout=600)
    return collections.Counter(p.name.rsplit("-", 1)[0]
                               for p in set(cache_dir.glob("*.pt")) - before)


@pytest.mark.parametrize("module, function, trains", [
    ("studies.lens.method", "forgetting_counts", 0),  # a measure: the measures alone
    ("studies.lens.runs", "observer", 1),  # what the run stores: the run and its measures
])
def test_editing_a_measure_recomputes_the_measures_alone(tmp_path, module, function, trains):
    from test_runs import PACKAGE, copy_of_memlib, with_statement_in

    cache_dir = tmp_path / "cache"
    first = computed_entries(PACKAGE, cache_dir)
    assert first == {"lens_run": 1, "rlp_frozen": 1, "lens_measures": 1}
    edited = copy_of_memlib(tmp_path, with_statement_in(module, function))
    assert computed_entries(edited, cache_dir) == (
        {"lens_run": 1, "lens_measures": 1} if trains else {"lens_measures": 1})
