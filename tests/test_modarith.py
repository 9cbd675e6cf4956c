"""Unit and property tests of memlib.studies.modarith on tiny tensors."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import tiny

from memlib.claims import HOLDS, NOT_RUN, VERDICTS, Estimate, evaluate
from memlib.config import ConfigError
from memlib.studies import modarith as ma
from memlib.train import TrainSpec


def random_weights(p=11, m=6, runs=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {"U": torch.randn(runs, m, p, generator=gen),
            "V": torch.randn(runs, m, p, generator=gen),
            "W": torch.randn(runs, p, m, generator=gen),
            "mu": torch.randn(runs, p, generator=gen)}


def clone(weights):
    return {k: v.clone() for k, v in weights.items()}


def assert_same(a, b):
    for k in a:
        assert torch.equal(a[k], b[k]), k


# ----------------------------------------------------------------------------- data and noise
@pytest.mark.parametrize("operation", ["add", "sub"])
def test_task_labels_and_split(operation):
    task = ma.make_task(7, operation, 0.8, seed=1)
    a, b = task.pairs[:, 0], task.pairs[:, 1]
    expected = (a + b) % 7 if operation == "add" else (a - b) % 7
    assert torch.equal(task.labels, expected)
    assert len(task.train_idx) == round(0.8 * 49) and len(task.test_idx) == 49 - len(task.train_idx)
    assert set(task.train_idx.tolist()).isdisjoint(task.test_idx.tolist())
    assert torch.equal(ma.make_task(7, operation, 0.8, seed=1).train_idx, task.train_idx)


def test_true_labels_rejects_unknown_operation():
    with pytest.raises(ValueError, match="add, sub"):
        ma.true_labels(torch.tensor([1]), torch.tensor([2]), 5, "div")


@settings(max_examples=25, deadline=None)
@given(alpha=st.floats(0, 0.95), seed=st.integers(0, 10_000), p=st.sampled_from([5, 7, 11]))
def test_wrong_noise_never_hits_true_label_and_has_exact_rate(alpha, seed, p):
    task = ma.make_task(p)
    y, pairs = task.labels[task.train_idx], task.pairs[task.train_idx]
    noisy, mask = ma.label_noise(y, pairs, alpha, p, "wrong", seed)
    assert mask.sum().item() == round(alpha * len(y))
    assert (noisy[mask] != y[mask]).all() and torch.equal(noisy[~mask], y[~mask])
    assert noisy.min() >= 0 and noisy.max() < p
    again, _ = ma.label_noise(y, pairs, alpha, p, "wrong", seed)
    assert torch.equal(noisy, again)


def test_uniform_noise_may_hit_true_label():
    task = ma.make_task(5)
    y, pairs = task.labels, task.pairs
    noisy, mask = ma.label_noise(y, pairs, 0.9, 5, "uniform", seed=0)
    assert mask.sum() == round(0.9 * len(y))
    hits = (noisy[mask] == y[mask]).float().mean().item()
    assert 0 < hits < 0.5  # about 1/P of the redrawn labels are right by chance


def test_symmetric_noise_is_the_same_for_swapped_pairs():
    p = 11
    task = ma.make_task(p)
    noisy, mask = ma.label_noise(task.labels, task.pairs, 0.5, p, "symmetric", seed=3)
    table, flipped = noisy.view(p, p), mask.view(p, p)
    assert torch.equal(table, table.T) and torch.equal(flipped, flipped.T)
    assert (noisy[mask] != task.labels[mask]).all()


def test_noise_rejects_bad_arguments():
    y, pairs = torch.zeros(4, dtype=torch.long), torch.zeros(4, 2, dtype=torch.long)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        ma.label_noise(y, pairs, 1.0, 5)
    with pytest.raises(ValueError, match="wrong, uniform, symmetric"):
        ma.label_noise(y, pairs, 0.1, 5, "flip")


# ----------------------------------------------------------------------------- model
def test_activations():
    x = torch.tensor([-2.0, -0.5, 0.0, 1.5])
    assert torch.equal(ma.ACTIVATIONS["relu"](x), torch.tensor([0.0, 0.0, 0.0, 1.5]))
    assert torch.equal(ma.ACTIVATIONS["reverse_relu"](x), torch.tensor([2.0, 0.5, 0.0, 0.0]))
    assert torch.equal(ma.ACTIVATIONS["quadratic"](x), x * x)
    assert torch.equal(ma.ACTIVATIONS["abs"](x), x.abs())
    assert torch.allclose(ma.ACTIVATIONS["leaky_relu"](x), torch.where(x > 0, x, 0.01 * x))


def test_forward_matches_one_hot_formula():
    p, w = 7, random_weights(p=7, m=5, runs=3)
    pairs = torch.tensor([[0, 1], [3, 6], [5, 5]])
    logits = ma.forward(w, pairs, "relu")
    assert logits.shape == (3, 3, p)
    eye = torch.eye(p)
    for r in range(3):
        for n, (a, b) in enumerate(pairs.tolist()):
            hidden = torch.relu(w["U"][r] @ eye[a] + w["V"][r] @ eye[b])
            assert torch.allclose(logits[r, n], w["W"][r] @ hidden + w["mu"][r], atol=1e-5)


@pytest.mark.parametrize("activation", list(ma.ACTIVATIONS))
def test_activate_in_place_gives_the_same_values_and_gradients(activation):
    x = torch.tensor([-2.0, -0.5, 0.0, 0.25, 1.5])
    plain = x.clone().requires_grad_()
    expected = ma.ACTIVATIONS[activation](plain * 1.0)
    expected.sum().backward()
    leaf = x.clone().requires_grad_()
    got = ma.activate(leaf * 1.0, activation)  # a fresh non-leaf, as the hidden layer is
    got.sum().backward()
    assert torch.equal(got.detach(), expected.detach())
    assert torch.equal(leaf.grad, plain.grad)
    with torch.no_grad():
        hidden = x.clone()
        assert torch.equal(ma.activate(hidden, activation), ma.ACTIVATIONS[activation](x))


def test_predictions_share_the_hidden_layer_without_changing_it():
    w, pairs = random_weights(p=7, m=5, runs=3), ma.make_task(7).pairs
    acts = tuple(ma.ACTIVATIONS)
    predicted = ma.predictions(w, pairs, acts)
    for act in acts:
        assert torch.equal(predicted[act], ma.forward(w, pairs, act).argmax(-1))


def test_batched_runs_have_independent_gradients():
    p, pairs = 7, ma.make_task(7).pairs
    labels = torch.randint(0, p, (2, len(pairs)), generator=torch.Generator().manual_seed(0))
    both = ma.ModularNet(p, 6, seeds=[3, 4])
    ma.per_run_cross_entropy(both(pairs), labels).backward()
    solo = ma.ModularNet(p, 6, seeds=[4])
    ma.per_run_cross_entropy(solo(pairs), labels[1:]).backward()
    assert torch.allclose(both.U[1].grad, solo.U[0].grad, atol=1e-6)
    assert torch.allclose(both.W[1].grad, solo.W[0].grad, atol=1e-6)


# ----------------------------------------------------------------------------- Fourier tools
def test_keep_frequency_returns_pure_cosine_and_drops_dc():
    p = 13
    i = torch.arange(p, dtype=torch.float32)
    cosine = 2 * torch.cos(2 * math.pi * 3 * i / p + 0.7)
    x = (cosine + 5.0 + 0.3 * torch.cos(2 * math.pi * 5 * i / p))[None]
    kept = ma.keep_frequency(x, torch.tensor([3]))
    assert torch.allclose(kept[0], cosine, atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_frequency_filter_is_idempotent_shared_and_dc_free(seed):
    w = random_weights(p=11, m=6, seed=seed)
    g, residual = ma.frequency_filter(w)
    for name in ("U", "V", "W", "mu"):
        assert torch.allclose(g[name] + residual[name], w[name], atol=1e-5)
    g2, _ = ma.frequency_filter(g)
    for name in g:
        assert torch.allclose(g2[name], g[name], atol=1e-4)
    k = ma.dominant_frequencies(w)
    for x in (g["U"], g["V"], g["W"].transpose(1, 2)):
        power = torch.fft.rfft(x, dim=-1).abs().square()
        assert (power[..., 0] < 1e-6).all()  # DC removed
        others = power.clone()
        others.scatter_(-1, k[..., None], 0.0)
        assert (others < 1e-6).all()  # only the shared frequency k_m survives
    assert (k >= 1).all()


def test_shared_frequency_is_chosen_jointly_not_per_vector():
    p = 11
    i = torch.arange(p, dtype=torch.float32)

    def cos(k, amp):
        return amp * torch.cos(2 * math.pi * k * i / p)

    # u peaks alone at k=1, but v and w together make k=2 the dominant shared frequency.
    w = {"U": (cos(1, 2.0) + cos(2, 1.5))[None, None], "V": cos(2, 1.5)[None, None],
         "W": cos(2, 1.5)[None, :, None], "mu": torch.zeros(1, p)}
    assert ma.dominant_frequencies(w).item() == 2
    g, _ = ma.frequency_filter(w)
    assert torch.allclose(g["U"][0, 0], cos(2, 1.5), atol=1e-5)


@pytest.mark.parametrize("operation", ["add", "sub"])
def test_analytic_solution_is_exact_and_a_fixed_point_of_ff(operation):
    p = 11
    w = ma.analytic_quadratic_solution(p, operation)
    task = ma.make_task(p, operation)
    predicted = ma.forward(w, task.pairs, "quadratic").argmax(-1)[0]
    assert torch.equal(predicted, task.labels)
    g, _ = ma.frequency_filter(w)
    for name in ("U", "V", "W"):
        assert torch.allclose(g[name], w[name], atol=1e-4)
    assert ma.phase_error(w, operation).max() < 1e-4
    assert torch.allclose(ma.ipr(w), torch.ones(1, w["U"].shape[1]), atol=1e-5)


def test_wrap_angle():
    x = torch.tensor([0.0, 2 * math.pi, -0.5, math.pi + 0.5, 4 * math.pi - 0.1])
    assert torch.allclose(ma.wrap_angle(x), torch.tensor([0.0, 0.0, 0.5, math.pi - 0.5, 0.1]),
                          atol=1e-5)


# ----------------------------------------------------------------------------- neuron scores
def test_ipr_on_hand_made_neurons():
    p = 11
    i = torch.arange(p, dtype=torch.float32)
    one = torch.cos(2 * math.pi * i / p)
    two = one + torch.cos(2 * math.pi * 3 * i / p)
    w = {"U": torch.stack([one, two])[None], "V": torch.stack([one, two])[None],
         "W": torch.stack([one, two]).T[None], "mu": torch.zeros(1, p)}
    assert torch.allclose(ma.ipr(w), torch.tensor([[1.0, 0.5]]), atol=1e-5)


def test_strength_on_hand_made_neurons():
    w = {"U": torch.tensor([[[1.0, -3.0], [0.5, 0.0]]]), "V": torch.tensor([[[2.0, 0.0],
                                                                           [0.0, -0.5]]]),
         "W": torch.tensor([[[4.0, 1.0], [-5.0, 0.0]]]), "mu": torch.zeros(1, 2)}
    # neuron 0: ||w||=5, ||u||+||v|| = 3+2; neuron 1: ||w||=1, 0.5+0.5
    assert torch.allclose(ma.strength(w), torch.tensor([[25.0, 1.0]]))
    assert torch.allclose(ma.strength(w, "reverse_relu"), torch.zeros(1, 2))


def test_top_fraction_and_select_neurons():
    score = torch.tensor([[0.1, 0.9, 0.5, 0.3]])
    assert ma.top_fraction(score, 0.5).tolist() == [[False, True, True, False]]
    assert ma.top_fraction(score, 0.5, largest=False).tolist() == [[True, False, False, True]]
    assert ma.top_fraction(score, 1.0).all()
    w = random_weights(p=5, m=4, runs=1)
    before = clone(w)
    kept = ma.select_neurons(w, ma.top_fraction(score, 0.25))
    assert_same(w, before)
    assert (kept["U"][0, [0, 2, 3]] == 0).all() and torch.equal(kept["U"][0, 1], w["U"][0, 1])
    assert (kept["W"][0, :, [0, 2, 3]] == 0).all()


def test_analyses_never_modify_the_trained_weights():
    p = 7
    task = ma.make_task(p)
    w = random_weights(p=p, m=8, runs=2)
    before = clone(w)
    y = task.labels[task.train_idx]
    noisy, mask = ma.label_noise(y, task.pairs[task.train_idx], 0.5, p, seed=0)
    noisy, mask = torch.stack([noisy, noisy]), torch.stack([mask, mask])
    ma.evaluate_parts(w, task, noisy, mask, ["relu", "quadratic"])
    ma.partition_curves(w, task, noisy, mask, [0.25, 1.0], ["relu"])
    ma.spectra_table(w, run=1, neurons=4)
    ma.phase_error(w)
    assert_same(w, before)


def test_subset_accuracies_score_the_right_labels():
    p = 5
    task = ma.make_task(p, train_fraction=0.6)
    w = ma.analytic_quadratic_solution(p)
    y = task.labels[task.train_idx]
    noisy, mask = ma.label_noise(y, task.pairs[task.train_idx], 0.4, p, seed=0)
    acc = ma.subset_accuracies(w, task, noisy[None], mask[None], "quadratic")
    acc = acc.set_index("subset")["acc"]
    assert acc["clean_train"] == acc["noisy_true"] == acc["test"] == 1.0
    assert acc["noisy_memorized"] == 0.0  # wrong noise: the rule never predicts a noisy label


def test_noisy_first_reads_the_first_epoch_past_the_threshold():
    rows = []
    for epoch, clean, noisy in [(0, 0.0, 0.0), (1, 0.1, 0.2), (2, 0.2, 0.4), (3, 0.9, 0.9)]:
        rows += [{"epoch": epoch, "subset": "clean_train", "acc": clean},
                 {"epoch": epoch, "subset": "noisy_memorized", "acc": noisy}]
    first = ma.noisy_first(pd.DataFrame(rows), alpha=0.5)
    assert first == {"epoch": 2, "noisy": 0.4, "clean": 0.2}


def early_history(seed, curve, alpha=0.5):
    rows = []
    for epoch, (clean, noisy) in enumerate(curve):
        rows += [{"seed": seed, "epoch": epoch, "subset": "clean_train", "acc": clean},
                 {"seed": seed, "epoch": epoch, "subset": "noisy_memorized", "acc": noisy}]
    return pd.DataFrame(rows).assign(alpha=alpha)


def test_noisy_lead_is_measured_per_seed():
    history = pd.concat([early_history(0, [(0, 0), (0.1, 0.4), (0.9, 0.9)]),
                         early_history(1, [(0, 0), (0.2, 0.35), (0.9, 0.9)])])
    lead = ma.noisy_lead(history, 0.5)
    assert lead.n == 2 and lead.mean == pytest.approx(0.225)
    never = pd.concat([history, early_history(2, [(0, 0), (0.1, 0.1)])])
    assert math.isnan(ma.noisy_lead(never, 0.5).mean)


def test_image_order_is_read_in_the_first_epochs(monkeypatch):
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    # noisy labels lead at the 20% point (epoch 1), clean ones reach half their labels
    # first (epoch 2 against 3): the first epochs decide, the half-fit reading stays beside
    history = pd.concat([early_history(0, [(0, 0), (0.1, 0.4), (0.6, 0.45), (0.9, 0.6)]),
                         early_history(1, [(0, 0), (0.1, 0.38), (0.6, 0.4), (0.9, 0.55),
                                           (1.0, 0.7)])])
    assert ma.epochs_to_fit(history[history["seed"] == 0]) == {"clean": 2, "noisy": 3}
    images = pd.concat([history.assign(dataset="digits"), history.assign(dataset="mnist-5k")])
    value = ma.image_lead(images)
    assert value["data"] == "mnist-5k" and value["epoch_at_20pct"] == {"0.5": 1.0}
    assert value["lead_at_20pct"]["0.5"].mean == pytest.approx(0.29)
    assert value["epochs_lead"]["0.5"] == Estimate(-1.0, 0.0, 2)
    assert value["noisy_fit"] == pytest.approx(0.6) and value["epochs"] == 4
    assert ma.image_lead(history.assign(dataset="digits")) is None
    claim = {c.id: c for c in ma.CLAIMS}["noisy-first-images"]
    table = evaluate([claim], {claim.id: {**value, "data": "fashion_mnist"}})
    assert table["verdict"].item().startswith(
        "precondition failed: the data is MNIST (full or mnist-5k) (the rule alone would read")
    assert evaluate([claim], {claim.id: value})["verdict"].item() == HOLDS
    # the earlier version, at half fit, reads the clean labels first on the same runs
    assert "does not hold" in evaluate([claim], {claim.id: value})["previous"].item()
    # clean labels ahead in the first epochs: the rule does not hold
    clean = ma.image_lead(pd.concat([early_history(s, [(0, 0), (0.5, 0.1), (0.9, 0.6)])
                                     for s in (0, 1)]).assign(dataset="mnist"))
    assert evaluate([claim], {claim.id: clean})["verdict"].item() == "does not hold"
    # runs that never memorize half of their noisy labels: a failed manipulation check,
    # whatever the first epochs read
    young = ma.image_lead(pd.concat([early_history(s, [(0, 0), (0.1, 0.3), (0.2, 0.35)])
                                     for s in (0, 1)]).assign(dataset="mnist"))
    assert evaluate([claim], {claim.id: young})["verdict"].item().startswith(
        f"precondition failed: {ma.NOISE_FITTED[0]} (the rule alone would read")
    # a run that never passes 20% train accuracy has no first-epochs reading
    stuck = ma.image_lead(pd.concat([history, early_history(2, [(0, 0), (0.1, 0.1)])])
                          .assign(dataset="mnist"))
    assert math.isnan(stuck["epoch_at_20pct"]["0.5"])
    assert evaluate([claim], {claim.id: stuck})["verdict"].item().startswith(
        f"precondition failed: {ma.EARLY_PASSES[0]}")


def test_multiplication_task_is_addition_of_discrete_logs():
    p = 11
    g = ma.primitive_root(p)
    assert sorted(pow(g, i, p) for i in range(p - 1)) == list(range(1, p))
    task = ma.multiplication_task(p)
    assert task.p == p - 1 and task.operation == "mul"
    for (i, j), c in zip(task.pairs.tolist(), task.labels.tolist()):
        assert pow(g, c, p) == pow(g, i, p) * pow(g, j, p) % p


def test_swap_is_judged_when_the_relu_net_sits_at_chance(monkeypatch):
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    claim = {c.id: c for c in ma.CLAIMS}["swap-helps"]
    # the paper's "improves" case: a ReLU net at chance, both swaps far above it
    value = {"quadratic_minus_relu": Estimate(0.13, 0.004, 3),
             "reverse_relu_minus_relu": Estimate(0.29, 0.01, 3),
             "relu_minus_chance": Estimate(-0.006, 0.0007, 3), "train_fit": 1.0}
    table = evaluate([claim], {claim.id: value})
    assert table["verdict"].item() == HOLDS
    assert "precondition failed: the ReLU net generalizes" in table["previous"].item()
    worse = {**value, "quadratic_minus_relu": Estimate(-0.05, 0.004, 3)}
    assert evaluate([claim], {claim.id: worse})["verdict"].item() == "does not hold"
    unfitted = {**value, "train_fit": 0.5}
    assert evaluate([claim], {claim.id: unfitted})["verdict"].item().startswith(
        "precondition failed: the net fitted its training labels")


def sweep_rows(train_acc: dict, test_acc: dict, alpha=0.5, activation="relu",
               weight_decay=0.1):
    rows = []
    for width, train in train_acc.items():
        for seed in (0, 1):
            for subset, acc in (("clean_train", train), ("noisy_memorized", train),
                                ("test", test_acc[width] + 0.01 * seed)):
                rows.append({"activation": activation, "part": "raw",
                             "weight_decay": weight_decay, "alpha": alpha, "width": width,
                             "seed": seed, "subset": subset, "acc": acc})
    return pd.DataFrame(rows)


def test_larger_is_better_needs_a_width_curve(monkeypatch):
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(ma.Config, {"sweep_alphas": [0.5], "sweep_activations": ["relu"],
                               "sweep_weight_decays": [0.1], "weight_decay": 0.1,
                               "seeds": [0, 1, 2, 3, 4]})
    claim = {c.id: c for c in ma.CLAIMS}["larger-is-better"]
    none_fit = ma.larger_is_better(sweep_rows({8: 0.3, 32: 0.6, 128: 0.9},
                                              {8: 0.01, 32: 0.01, 128: 0.01}), config)
    assert none_fit["fitted_widths"] == {"0.5": []} and none_fit["widest_train"]["0.5"] == 0.9
    verdict = evaluate([claim], {claim.id: {**none_fit, "sweep_seeds": 5}})["verdict"].item()
    assert verdict.startswith("precondition failed: a width curve exists")
    grows = ma.larger_is_better(sweep_rows({8: 0.3, 32: 1.0, 128: 1.0},
                                           {8: 0.01, 32: 0.3, 128: 0.6}), config)
    assert grows["fitted_widths"] == {"0.5": [32, 128]}
    assert grows["steps"]["0.5"][0].mean == pytest.approx(0.3)
    assert evaluate([claim], {claim.id: {**grows, "sweep_seeds": 5}})["verdict"].item() == HOLDS


SWEEP_CONFIG = {"sweep_alphas": [0.5], "sweep_activations": ["relu"],
                "sweep_weight_decays": [0.1, 1.0], "weight_decay": 0.1, "seeds": [0, 1, 2, 3, 4]}
FLAT_TEST = {8: 0.01, 32: 0.3, 128: 0.6}


def claim_verdict(claim_id: str, value) -> pd.Series:
    """The row of a claim on `value`; a width row's value as from a sweep of five seeds."""
    claim = {c.id: c for c in ma.CLAIMS}[claim_id]
    if claim_id in ma.WIDTH_ROWS and value is not None:
        value = {**value, "sweep_seeds": 5}
    return evaluate([claim], {claim.id: value}).iloc[0]


def test_stronger_weight_decay_delays_interpolation(monkeypatch):
    config = tiny(ma.Config, SWEEP_CONFIG)
    early = sweep_rows({8: 0.3, 32: 1.0, 128: 1.0}, FLAT_TEST)
    late = sweep_rows({8: 0.3, 32: 0.6, 128: 1.0}, FLAT_TEST, weight_decay=1.0)
    train = ma.train_accuracies(late, 1.0)[0.5]
    assert list(train.index) == [8, 32, 128] and list(train.columns) == [0, 1]
    assert ma.interpolation_widths(train).tolist() == [128.0, 128.0]
    delayed = ma.regularization_delay(pd.concat([early, late]), config)
    assert delayed["weight_decays"] == [0.1, 1.0] and delayed["unfitted"] == []
    assert delayed["delay"]["0.5"] == Estimate(2.0, 0.0, 2)  # 32 -> 128: two octaves
    # two seeds, the small scale's sweep: within noise, with the replicates it needs
    row = claim_verdict("regularization-delays-descent", delayed)
    assert row["verdict"] == "within noise: needs n ≈ 5 seeds" and \
        "fewer than the registered minimum (5)" in row["note"]
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    assert claim_verdict("regularization-delays-descent", delayed)["verdict"] == HOLDS
    earlier = ma.regularization_delay(pd.concat([
        sweep_rows({8: 0.3, 32: 0.6, 128: 1.0}, FLAT_TEST),
        sweep_rows({8: 0.3, 32: 1.0, 128: 1.0}, FLAT_TEST, weight_decay=1.0)]), config)
    assert claim_verdict("regularization-delays-descent", earlier)["verdict"] == "does not hold"
    # the stronger weight decay interpolates nowhere: the row says where and how far off
    never = ma.regularization_delay(pd.concat([
        early, sweep_rows({8: 0.3, 32: 0.6, 128: 0.9}, FLAT_TEST, weight_decay=1.0)]), config)
    assert never["delay"] == {}
    assert never["unfitted"] == ["wd=1, α=0.5: 2 of 2 seeds (widest net's train accuracy 0.90)"]
    assert claim_verdict("regularization-delays-descent", never)["verdict"].startswith(
        "precondition failed: every seed's ReLU net interpolates")
    assert ma.regularization_delay(early, tiny(ma.Config, {
        **SWEEP_CONFIG, "sweep_weight_decays": [0.1]})) is None  # no stronger decay swept


def test_second_descent_is_the_rise_past_the_interpolation_threshold(monkeypatch):
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(ma.Config, SWEEP_CONFIG)
    rises = ma.descent_past_threshold(sweep_rows({8: 0.3, 32: 1.0, 128: 1.0}, FLAT_TEST), config)
    assert rises["fitted_widths"] == {"0.5": [32, 128]}
    assert rises["descent"]["0.5"].mean == pytest.approx(0.3)
    assert claim_verdict("second-descent", rises)["verdict"] == HOLDS
    falls = ma.descent_past_threshold(sweep_rows({8: 0.3, 32: 1.0, 128: 1.0},
                                                 {8: 0.01, 32: 0.6, 128: 0.3}), config)
    assert claim_verdict("second-descent", falls)["verdict"] == "does not hold"
    none_fit = ma.descent_past_threshold(sweep_rows({8: 0.3, 32: 0.6, 128: 0.9}, FLAT_TEST),
                                         config)
    assert none_fit["descent"] == {} and none_fit["widest_train"]["0.5"] == 0.9
    assert claim_verdict("second-descent", none_fit)["verdict"].startswith(
        "precondition failed: a width curve exists")


def test_activation_peaks_need_a_fall_past_the_best_width(monkeypatch):
    # two or three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(ma.Config, {**SWEEP_CONFIG, "sweep_activations": ["quadratic", "gelu"]})
    fitted = {8: 1.0, 32: 1.0, 128: 1.0}

    def both(train, test):
        return pd.concat([sweep_rows(train, test, activation=a) for a in ("quadratic", "gelu")])

    def peaks(sweep):  # as measure gives it: the maxima beside the peaks
        return {**ma.activation_maxima(sweep, config), **ma.activation_peaks(sweep, config)}

    peaked = peaks(both(fitted, {8: 0.3, 32: 0.8, 128: 0.5}))
    assert peaked["peak_width"] == {"quadratic, α=0.5": 32, "gelu, α=0.5": 32}
    assert peaked["fall"]["gelu, α=0.5"].mean == pytest.approx(0.3)
    assert claim_verdict("activation-peaks", peaked)["verdict"] == HOLDS
    rising = peaks(both(fitted, {8: 0.3, 32: 0.5, 128: 0.8}))
    assert claim_verdict("activation-peaks", rising)["verdict"] == "does not hold"
    widest_only = peaks(both({8: 0.3, 32: 0.6, 128: 1.0}, FLAT_TEST))
    assert widest_only["fall"] == {}
    assert claim_verdict("activation-peaks", widest_only)["verdict"].startswith(
        "precondition failed: every x^2 and GeLU net has a width curve")


# ----------------------------------------------------------------------------- training
def test_train_runs_batched_equals_single_run():
    task = ma.make_task(7)
    spec = TrainSpec(epochs=5, batch_size=None, optimizer="adamw", lr=1e-2, weight_decay=0.1)
    both = ma.train_runs(task, [0.2, 0.5], [0, 1], 8, spec, log_every=5)
    solo = ma.train_runs(task, [0.5], [1], 8, spec, log_every=5)
    assert torch.equal(both["noisy"][1], solo["noisy"][0])
    assert torch.allclose(both["weights"]["U"][1], solo["weights"]["U"][0], atol=1e-5)
    history = both["history"]
    assert set(history["epoch"]) == {0, 5} and set(history["alpha"]) == {0.2, 0.5}
    assert set(history["subset"]) == set(ma.SUBSETS)


def test_each_replicate_draws_its_own_split_of_the_pairs():
    """Runs of two seeds train and are tested on different splits, the same seed on the same
    split again (at every alpha); the batched runs end as each would alone on its split."""
    config = tiny(ma.Config, p=7)
    task = ma.runs._task(config, [0, 1, 0])
    again = ma.runs._task(config, [0])
    assert task.train_idx.shape == (3, round(0.8 * 49))
    assert torch.equal(task.train_idx[0], task.train_idx[2])
    assert torch.equal(task.train_idx[0], again.train_idx[0])
    assert not torch.equal(task.train_idx[0], task.train_idx[1])
    for r in range(3):  # each run's split: disjoint halves of the whole table
        assert set(task.train_idx[r].tolist()).isdisjoint(task.test_idx[r].tolist())
        assert len(task.train_idx[r]) + len(task.test_idx[r]) == 49
    spec = TrainSpec(epochs=5, batch_size=None, optimizer="adamw", lr=1e-2, weight_decay=0.1)
    both = ma.train_runs(task, [0.5, 0.5, 0.2], [0, 1, 0], 8, spec, log_every=5)
    solo = ma.train_runs(ma.runs._task(config, [1]), [0.5], [1], 8, spec, log_every=5)
    shared = ma.train_runs(ma.make_task(7, seed=ma.split_seed(0)), [0.5], [1], 8, spec,
                           log_every=5)
    assert torch.equal(both["noisy"][1], solo["noisy"][0])
    assert torch.allclose(both["weights"]["U"][1], solo["weights"]["U"][0], atol=1e-5)
    assert not torch.allclose(shared["weights"]["U"][0], solo["weights"]["U"][0], atol=1e-3)
    last = both["history"][both["history"]["epoch"] == 5].set_index(["run", "subset"])["acc"]
    alone = solo["history"][solo["history"]["epoch"] == 5].set_index("subset")["acc"]
    assert last[1].to_dict() == pytest.approx(alone.to_dict(), nan_ok=True)


def test_each_replicate_learns_the_image_order_on_images_of_its_own(monkeypatch):
    seen = []

    def record(x, y, *args, seed, **kwargs):
        seen.append((seed, x.clone()))
        return pd.DataFrame({"epoch": [0], "subset": ["clean_train"], "acc": [0.0], "alpha": 0.2})

    monkeypatch.setattr(ma.runs, "image_learning_order", record)
    monkeypatch.setattr(ma.runs.IMAGES, "get", lambda key, compute: compute())
    config = tiny(ma.Config, seeds=(0, 1), image_dataset="mnist-5k", image_samples=200,
                  image_epochs=1, digits_epochs=1)
    ma.image_order(config)
    ma.image_order(config)  # again: the same images
    images = [x for _, x in seen if len(x) == 200]  # digits: every image, for every seed
    assert len(images) == 4 and len(seen) == 8
    assert torch.equal(images[0], images[2]) and torch.equal(images[1], images[3])
    assert not torch.equal(images[0], images[1])


def test_image_samples_larger_than_the_images_is_refused_naming_both_numbers():
    from memlib import data

    with pytest.raises(ConfigError, match="image_samples=5000 asks for more than the 4000 "
                                          "training images of mnist-5k"):
        tiny(ma.Config, image_dataset="mnist-5k", image_samples=5000)
    whole = tiny(ma.Config, image_dataset="mnist-5k", image_samples=None)  # all, as asked
    assert whole.image_samples is None
    with pytest.raises(data.DataRequestError, match="image_samples=4001 asks for more than"):
        data.sized_subset(data.load("mnist-5k").y, 4001, 0, "image_samples", "images")


def test_minibatch_runs_train_on_their_own_batches_as_they_would_alone():
    task = ma.make_task(7, seed=[3, 4])
    spec = TrainSpec(epochs=3, batch_size=8, optimizer="adamw", lr=1e-2, weight_decay=0.1)
    both = ma.train_runs(task, [0.5, 0.5], [0, 1], 8, spec, log_every=3)
    solo = ma.train_runs(ma.make_task(7, seed=[4]), [0.5], [1], 8, spec, log_every=3)
    full = ma.train_runs(ma.make_task(7, seed=[4]), [0.5], [1], 8,
                         TrainSpec(**{**spec.__dict__, "batch_size": None}), log_every=3)
    assert torch.allclose(both["weights"]["U"][1], solo["weights"]["U"][0], atol=1e-5)
    assert not torch.allclose(full["weights"]["U"][0], solo["weights"]["U"][0], atol=1e-3)
    batches = ma.PairBatches(torch.zeros(2, 20, 2, dtype=torch.long),
                             torch.arange(40).view(2, 20), 8, [0, 1])
    assert len(batches) == 3 and [b[1].shape for b in batches][-1] == (2, 4)
    epoch = torch.cat([b[1] for b in batches], 1)
    assert sorted(epoch[1].tolist()) == list(range(20, 40))  # each run its own pairs, once


def test_train_runs_with_muon_and_sgd():
    task = ma.make_task(5)
    for opt in ("muon", "sgd"):
        spec = TrainSpec(epochs=2, batch_size=None, optimizer=opt, lr=1e-2)
        out = ma.train_runs(task, [0.3, 0.3], [0, 1], 4, spec, log_every=1)
        assert torch.isfinite(out["weights"]["U"]).all()


# ----------------------------------------------------------------------------- config, run
def test_config_coerces_strings_and_lists():
    config = tiny(ma.Config, {"lr": "1e-3", "alphas": "[0.1, 0.8]", "p": "23",
                               "order_optimizers": "[adam]", "order_lrs": "[1e-3]",
                               "order_weight_decays": "[0]"})
    assert config.lr == 1e-3 and config.alphas == (0.1, 0.8) and config.p == 23
    assert config.order_optimizers == ("adam",)


@pytest.mark.parametrize("params, message", [
    ({"p": 21}, "prime"),
    ({"alphas": [0.2, 1.0]}, r"\[0, 1\)"),
    ({"activation": "swish"}, "relu"),
    ({"noise": "random"}, "wrong"),
    ({"width": 0}, "width"),
    ({"order_lrs": [1e-3]}, "same length"),
    ({"bogus": 1}, "unknown parameter"),
])
def test_config_rejects_bad_values(params, message):
    with pytest.raises(ConfigError, match=message):
        tiny(ma.Config, params)


def test_run_end_to_end_tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path))
    config = tiny(ma.Config, dict(
        p=7, width=9, alphas=[0.0, 0.2, 0.8], epochs=4, log_every=2, partition_fractions=[0.5, 1],
        spectra_neurons=4, order_epochs=3, order_log_every=1, sweep_widths=[2, 4],
        sweep_alphas=[0.5], sweep_activations=["relu"], sweep_weight_decays=[0.1],
        sweep_epochs=2, digits_alphas=[0.2], digits_width=8, digits_epochs=2,
        image_dataset="none"))
    results = ma.run(config)
    measured = ma.measure(results, config)
    assert set(measured) == {c.id for c in ma.CLAIMS}
    verdicts = evaluate(ma.CLAIMS, measured).set_index("id")["verdict"]
    assert set(verdicts.str.split(":").str[0]) <= set(VERDICTS)
    assert verdicts["noisy-first-images"] == "not run at this scale"  # image_dataset none
    assert measured["ff-recovers-rule"] is not None and measured["swap-helps"] is not None
    assert set(measured["noisy-first"]) == {f"{o}, α={a:g}" for o in config.order_optimizers
                                            for a in config.order_alphas}
    assert measured["ff-recovers-rule-mul"]["chance"] == pytest.approx(1 / 6)  # p - 1 classes
    assert measured["ff-recovers-rule-leaky_relu"] is not None
    assert measured["partition-weaker"]["held_out"]["best_partition_test"].n == 1
    assert measured["ff-recovers-rule-quadratic"] is measured["ff-recovers-rule"]
    assert set(measured["ff-recovers-rule-mul"]["ff_by_activation"]) == {"relu", "quadratic"}
    phase = measured["phase-error-grows"]  # each seed's rho, for an exact p
    assert len(phase["rho_by_seed"]) == 1 and phase["alpha_levels"] == 3
    assert results["analytic"]["test_acc"].tolist() == [1.0, 1.0]
    lead = measured["full-batch-lead"]  # the mini-batch runs: the first optimizer, alpha 0.5
    assert (lead["optimizer"], lead["alpha"], lead["batch_size"]) == ("adamw", 0.5, 64)
    assert set(results["minibatch"]["alpha"]) == {0.5}
    assert ma.full_batch_lead(results["order"], pd.DataFrame(), config) is None  # not run
    again = ma.run(config)  # from the cache
    pd.testing.assert_frame_equal(again["parts"], results["parts"])


def test_parallel_runs_compute_what_run_loads_with_the_same_results(tmp_path, monkeypatch):
    from parallel_runs_check import check_parallel_runs

    config = tiny(ma.Config, dict(
        p=7, width=9, alphas=[0.0, 0.8], epochs=4, log_every=2, partition_fractions=[0.5, 1],
        spectra_neurons=4, order_epochs=3, order_log_every=1, order_optimizers=["adamw", "sgd"],
        order_lrs=[1e-3, 1.0], order_weight_decays=[0.1, 0.0], sweep_widths=[2, 4],
        sweep_alphas=[0.5], sweep_activations=["relu"], sweep_weight_decays=[0.1],
        sweep_epochs=2, digits_alphas=[0.2], digits_width=8, digits_epochs=2,
        image_dataset="none"))
    # the main runs with their analysis (one unit, the longest) first
    assert [f for f, _ in ma.planned_runs(config)][:2] == [ma.main_analysis, ma.image_order]
    check_parallel_runs(ma, config, tmp_path, monkeypatch)


def test_a_sweep_on_fewer_seeds_than_a_decided_rule_needs_is_not_judged():
    few = tiny(ma.Config, {**SWEEP_CONFIG, "sweep_seeds": 2})
    assert not ma.sweep_judged(few) and ma.sweep_judged(tiny(ma.Config, SWEEP_CONFIG))
    claims = {c.id: c for c in ma.CLAIMS}
    # every width row is a claim, but activation-maxima, kept as activation-peaks' earlier one
    assert set(ma.WIDTH_ROWS) - {"activation-maxima"} <= set(claims)
    value = ma.larger_is_better(sweep_rows({8: 0.3, 32: 1.0, 128: 1.0}, FLAT_TEST),
                                tiny(ma.Config, SWEEP_CONFIG))
    claim = claims["larger-is-better"]
    judged = evaluate([claim], {claim.id: {**value, "sweep_seeds": 5}}).iloc[0]
    drawn = evaluate([claim], {claim.id: {**value, "sweep_seeds": 2}}).iloc[0]
    assert judged["verdict"] != NOT_RUN and drawn["verdict"] == NOT_RUN
    # the earlier version, judged on any number of sweep seeds, is shown beside it
    assert drawn["previous"].split("; ")[0].endswith("=" + judged["verdict"])


# ------------------------------------------------------- a sub-network chosen on held-out data
def test_test_pairs_split_into_disjoint_halves_per_seed():
    task = ma.make_task(11)
    (a, b), (c, d) = ma.split_test_pairs(task, [3, 4])
    assert set(a.tolist()).isdisjoint(b.tolist()) and abs(len(a) - len(b)) <= 1
    assert sorted(a.tolist() + b.tolist()) == task.test_idx.tolist()
    assert not torch.equal(a, c)  # each run's seed draws its own halves
    assert torch.equal(ma.split_test_pairs(task, [3])[0][0], a)  # the same seed, the same halves


def test_partition_curves_score_each_runs_halves():
    p = 7
    task = ma.make_task(p)
    w = random_weights(p=p, m=8, runs=2)
    y = task.labels[task.train_idx]
    noisy, mask = ma.label_noise(y, task.pairs[task.train_idx], 0.5, p, seed=0)
    noisy, mask = torch.stack([noisy, noisy]), torch.stack([mask, mask])
    halves = ma.split_test_pairs(task, [0, 1])
    table = ma.partition_curves(w, task, noisy, mask, [1.0], ["relu"], halves)
    assert {"test_select", "test_score"} <= set(table["subset"])
    whole = table[(table["variant"] == "top") & (table["score"] == "ipr")]
    predicted = ma.predictions(w, task.pairs, ["relu"])["relu"]
    idx = halves[1][1]
    expected = (predicted[1, idx] == task.labels[idx]).float().mean().item()
    got = whole[(whole["run"] == 1) & (whole["subset"] == "test_score")]["acc"].item()
    assert got == pytest.approx(expected)
    plain = ma.partition_curves(w, task, noisy, mask, [1.0], ["relu"])
    assert "test_score" not in set(plain["subset"])


def partition_rows(select, score, seeds=(0, 1, 2, 3, 4)):
    """A partition table at alpha 0.8: each (score, gamma, variant, activation) -> accuracy on
    the selection half and on the scoring half (the full test set: their mean), per seed
    with a small spread."""
    rows = []
    for key, on_select in select.items():
        name, gamma, variant, act = key
        for s in seeds:
            for subset, acc in (("test_select", on_select), ("test_score", score[key]),
                                ("test", (on_select + score[key]) / 2)):
                rows.append({"alpha": 0.8, "seed": s, "score": name, "gamma": gamma,
                             "variant": variant, "activation": act, "subset": subset,
                             "acc": acc + 0.002 * s})
    return pd.DataFrame(rows)


def test_the_best_sub_network_is_chosen_on_one_half_and_scored_on_the_other(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 5)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    select = {("ipr", 0.5, "top", "relu"): 0.60, ("strength", 0.5, "top", "relu"): 0.30,
              ("ipr", 1.0, "top", "relu"): 0.10, ("ipr", 1.0, "top + FF", "relu"): 0.90,
              ("ipr", 1.0, "top + FF", "quadratic"): 0.95}
    # the sub-network that looks best on the selection half is no better than the raw net on
    # the half it is scored on
    score = {**select, ("ipr", 0.5, "top", "relu"): 0.10, ("strength", 0.5, "top", "relu"): 0.28}
    held = ma.held_out_partition(partition_rows(select, score), 0.8, "relu", 0.02)
    assert held["best_at"] == "ipr γ=0.5 relu" and held["ff_activation"] == "quadratic"
    assert held["best_partition_test"].mean == pytest.approx(0.104)
    assert held["best_minus_baseline"].mean == pytest.approx(0.0)
    assert held["ff_minus_best"].mean == pytest.approx(0.85)
    claim = next(c for c in ma.CLAIMS if c.id == "partition-weaker")
    value = {"best_minus_baseline": Estimate(0.2, 0.01, 5), "ff_minus_best": Estimate(0.5, 0.01, 5),
             "train_fit": 1.0, "held_out": held}
    assert evaluate([claim], {claim.id: value})["verdict"].item() == "within noise"
    assert evaluate([claim.previous[0]], {claim.id: value})["verdict"].item() == HOLDS
    kept = {**score, ("ipr", 0.5, "top", "relu"): 0.50}  # the choice holds up on the other half
    value["held_out"] = ma.held_out_partition(partition_rows(select, kept), 0.8, "relu", 0.02)
    assert evaluate([claim], {claim.id: value})["verdict"].item() == HOLDS
    no_halves = partition_rows(select, score).query("subset == 'test'")
    assert ma.held_out_partition(no_halves, 0.8, "relu", 0.02) is None


def test_the_sub_network_is_compared_with_the_raw_net_itself(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 5)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    # a raw net below chance (0.02): the sub-network beats it by a point and stays below
    # chance, which the earlier comparator (the better of the raw net and chance) hid
    select = {("ipr", 0.5, "top", "relu"): 0.02, ("ipr", 1.0, "top", "relu"): 0.005,
              ("ipr", 1.0, "top + FF", "relu"): 0.90}
    score = {**select, ("ipr", 0.5, "top", "relu"): 0.015}
    held = ma.held_out_partition(partition_rows(select, score), 0.8, "relu", 0.02)
    assert held["best_minus_raw"].mean == pytest.approx(0.01)
    assert held["best_minus_baseline"].mean == pytest.approx(-0.001)  # against chance
    claim = next(c for c in ma.CLAIMS if c.id == "partition-weaker")
    value = {"best_minus_baseline": Estimate(0.2, 0.01, 5), "ff_minus_best": Estimate(0.5, 0.01, 5),
             "train_fit": 1.0, "held_out": held}
    table = evaluate([claim], {claim.id: value})
    assert table["verdict"].item() == HOLDS
    assert table["headline"].item().startswith("1 ± ")  # points over the raw net
    assert evaluate([claim.previous[-1]], {claim.id: value})["verdict"].item() != HOLDS


def test_ff_reads_each_activation_without_a_choice(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 2)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    rows = [{"alpha": 0.8, "part": "G", "subset": "test", "activation": act, "seed": seed,
             "acc": acc + 0.001 * seed}
            for act, acc in (("relu", 0.70), ("quadratic", 0.999), ("abs", 0.9))
            for seed in (0, 1, 2)]
    tests = ma.ff_tests(pd.DataFrame(rows), 0.8, "relu")
    assert tests["trained_with"] == "relu" and set(tests["ff_by_activation"]) == {"relu",
                                                                               "quadratic"}
    assert tests["ff_by_activation"]["relu"].mean == pytest.approx(0.701)
    assert set(ma.ff_tests(pd.DataFrame(rows), 0.8, "quadratic")["ff_by_activation"]) == {
        "quadratic"}
    value = {**tests, "raw_test": Estimate(0.01, 0.001, 3), "train_fit": 1.0,
             "ff_test": tests["ff_by_activation"]["quadratic"], "ff_activation": "quadratic"}
    by_id = {c.id: c for c in ma.CLAIMS}
    for key in ("ff-recovers-rule", "ff-recovers-rule-leaky_relu", "ff-recovers-rule-mul"):
        relu, x2 = by_id[key], by_id[f"{key}{ma.QUADRATIC}"]
        table = evaluate([relu, x2], {key: value, f"{key}{ma.QUADRATIC}": value})
        assert table["verdict"].tolist() == ["does not hold", HOLDS]
        assert "holds" in table["previous"].iloc[0]  # the earlier rule chose x^2 on these seeds
        assert not x2.previous


def test_activation_maxima_is_kept_as_an_earlier_version_of_activation_peaks():
    assert "activation-maxima" not in {c.id for c in ma.CLAIMS}
    peaks = next(c for c in ma.CLAIMS if c.id == "activation-peaks")
    earlier = [old for old in peaks.previous if old.id == "activation-maxima"]
    assert len(earlier) == 2  # judged on enough seeds, and the version before it
    value = {"fall": {"quadratic, α=0.5": Estimate(0.2, 0.01, 5)},
             "peak_width": {"quadratic, α=0.5": 32},
             "fitted_widths": {"quadratic, α=0.5": [32, 128]},
             "maxima": {"quadratic, α=0.5": Estimate(0.02, 0.001, 5)}, "chance": 0.017,
             "sweep_seeds": 5}
    table = evaluate([peaks], {"activation-peaks": value})
    assert table["verdict"].item() == HOLDS
    assert "does not hold" in table["previous"].item()  # the invented "high maximum"
