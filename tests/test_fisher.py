"""Fisher rank inflation: the method's identities on tiny tensors."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import TINY, tiny

from memlib.claims import HOLDS, NOT_RUN, WITHIN_NOISE, Estimate, evaluate, verdict
from memlib.config import ConfigError
from memlib.studies import fisher


def problem(n=60, width=6, num_classes=4, seed=0, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, width, generator=g, dtype=torch.float64)
    z = scale * torch.randn(n, num_classes, generator=g, dtype=torch.float64)
    y = torch.randint(0, num_classes, (n,), generator=g)
    return h, z, y


def test_closed_form_matches_autograd_per_sample_gradients():
    from torch.func import functional_call, grad, vmap

    h, _, y = problem()
    head = torch.nn.Linear(6, 4).double()
    params = {k: v.detach() for k, v in head.named_parameters()}

    def loss(p, x, t):
        return F.cross_entropy(functional_call(head, p, (x[None],)), t[None])

    auto = vmap(grad(loss), in_dims=(None, 0, 0))(params, h, y)
    auto = torch.cat([auto["weight"], auto["bias"][:, :, None]], 2).flatten(1)
    closed = fisher.per_example_gradients(h, head(h).detach(), y)
    torch.testing.assert_close(closed, auto, rtol=0, atol=1e-12)
    no_bias = fisher.per_example_gradients(h, head(h).detach(), y, bias=False)
    assert no_bias.shape == (60, 4 * 6)


def test_gradient_norms_closed_form():
    h, z, y = problem()
    torch.testing.assert_close(fisher.gradient_norms(h, z, y),
                               fisher.per_example_gradients(h, z, y).norm(dim=1))


def test_effective_rank_of_flat_and_spiked_spectra():
    assert fisher.effective_rank(torch.ones(7)).item() == pytest.approx(7)
    assert fisher.effective_rank(torch.tensor([5.0, 0, 0])).item() == pytest.approx(1)
    # tiny eigenvalues (round-off) are dropped, negative round-off too
    assert fisher.effective_rank(torch.tensor([1.0, 1.0, 1e-14, -1e-15])).item() == \
        pytest.approx(2)
    assert fisher.effective_rank(torch.tensor([4.0, 1.0]), "sv").item() == pytest.approx(
        math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))))


@given(st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=20), st.floats(1e-3, 1e3))
@settings(max_examples=50, deadline=None)
def test_effective_rank_is_scale_invariant_and_bounded(values, scale):
    lam = torch.tensor(values, dtype=torch.float64)
    er = fisher.effective_rank(lam).item()
    assert 1 - 1e-9 <= er <= len(values) + 1e-9
    assert fisher.effective_rank(lam * scale).item() == pytest.approx(er, rel=1e-9)


def test_rank_bound_holds_and_is_reached():
    h, z, y = problem(n=200, width=5, num_classes=4)
    lam, coords = fisher.decompose(h, z, y)
    assert len(lam) == fisher.rank_bound(4, 5) == 18
    assert coords.shape == (200, 18)


def test_gram_and_dspace_spectra_agree():
    h, z, y = problem(n=15, width=6, num_classes=4)  # n < D = 28: Gram form
    gram = fisher.scatter_eigenvalues(h, z, y)
    c = fisher.per_example_gradients(h, z, y)
    c = c - c.mean(0)
    dspace = torch.linalg.eigvalsh(c.T @ c)
    torch.testing.assert_close(gram[-10:], dspace[-10:], rtol=0, atol=1e-10 * dspace.max())
    lam, coords = fisher.decompose(h, z, y)
    # the coordinates reconstruct the centred Gram matrix in either form
    torch.testing.assert_close(coords @ coords.T, c @ c.T, rtol=0, atol=1e-10)


def test_downdate_identity():
    h, z, y = problem()
    g = fisher.per_example_gradients(h, z, y)
    c = g - g.mean(0)
    n, i = len(g), 11
    rest = torch.cat([g[:i], g[i + 1:]])
    rest = rest - rest.mean(0)
    torch.testing.assert_close(rest.T @ rest, c.T @ c - n / (n - 1) * torch.outer(c[i], c[i]))


@pytest.mark.parametrize("n", [80, 20])  # D-space and Gram form
@pytest.mark.parametrize("spectrum", ["eig", "sv"])
@pytest.mark.parametrize("backend", ["auto", "torch"])
def test_fast_exact_loo_matches_direct(n, spectrum, backend):
    h, z, y = problem(n=n)
    lam, coords = fisher.decompose(h, z, y)
    fast = fisher.loo_exact(lam, coords, spectrum, chunk=7, backend=backend)
    direct = fisher.effective_rank(lam, spectrum) - fisher.loo_direct(h, z, y, range(n),
                                                                      spectrum=spectrum)
    torch.testing.assert_close(fast, direct, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [80, 20, 300])  # D-space and Gram form
@pytest.mark.parametrize("spectrum", ["eig", "sv"])
def test_vectorised_loo_matches_the_compiled_kernel(n, spectrum):
    """The torch path (the one a CUDA tensor takes) against the C kernel, to 1e-10."""
    h, z, y = problem(n=n, width=8, num_classes=5)
    lam, coords = fisher.decompose(h, z, y)
    kernel = fisher.loo_exact(lam, coords, spectrum, backend="c")
    vectorised = fisher.loo_exact(lam, coords, spectrum, backend="torch")
    torch.testing.assert_close(vectorised, kernel, rtol=0, atol=1e-10)
    assert not torch.equal(kernel, torch.zeros_like(kernel))


def test_vectorised_roots_in_small_blocks_match_one_block():
    g = torch.Generator().manual_seed(3)
    lam = torch.sort(torch.rand(12, generator=g, dtype=torch.float64)).values + 1e-3
    w = (torch.randn(9, 12, generator=g, dtype=torch.float64) * 0.3) ** 2
    w[2, 4:9] = 0  # deflated poles inside a row: the brackets skip them
    whole = fisher._roots_torch(lam, w)
    torch.testing.assert_close(fisher._roots_torch(lam, w, block=12 * 5), whole, rtol=0,
                               atol=1e-14)
    torch.testing.assert_close(whole, fisher.downdated_eigenvalues(lam, w, "c"), rtol=0,
                               atol=1e-13)


def test_kernel_on_several_threads_gives_the_same_bits():
    h, z, y = problem(n=301, width=8, num_classes=5)
    lam, coords = fisher.decompose(h, z, y)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = fisher.loo_exact(lam, coords, chunk=1000)
        torch.set_num_threads(3)
        three = fisher.loo_exact(lam, coords, chunk=1000)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, three)


def test_loo_is_solved_on_the_device_asked_and_returned_on_z_s():
    h, z, y = problem(n=40)
    lam, coords = fisher.decompose(h, z, y)
    out = fisher.loo_exact(lam, coords, device="cpu", backend="torch")
    assert out.device == coords.device and out.dtype == torch.float64
    with pytest.raises(RuntimeError, match="CPU tensors"):
        fisher.downdated_eigenvalues(lam.to("meta"), coords.to("meta") ** 2, backend="c")


@given(st.integers(0, 10_000), st.integers(2, 30), st.floats(0.01, 10))
@settings(max_examples=30, deadline=None)
def test_secular_roots_are_eigenvalues_of_the_downdate(seed, k, spread):
    g = torch.Generator().manual_seed(seed)
    lam = torch.sort(torch.rand(k, generator=g, dtype=torch.float64) * spread).values + 1e-3
    u = torch.randn(3, k, generator=g, dtype=torch.float64) * 0.3
    u[0, : k // 2] = 0  # deflated components keep their eigenvalue
    for backend in ("auto", "torch"):
        roots = fisher.downdated_eigenvalues(lam, u**2, backend)
        for row, r in zip(u, roots, strict=True):
            expect = torch.linalg.eigvalsh(torch.diag(lam) - torch.outer(row, row))
            torch.testing.assert_close(r.sort().values, expect, rtol=0, atol=1e-11 * spread)


def test_first_order_sums_to_zero_and_tracks_exact():
    h, z, y = problem(n=300, width=8, num_classes=5, scale=1.0)
    lam, coords = fisher.decompose(h, z, y)
    first = fisher.loo_first_order(lam, coords)
    assert abs(first.sum().item()) <= 1e-10 * first.abs().sum().item()
    exact = fisher.loo_exact(lam, coords)
    assert np.corrcoef(first.numpy(), exact.numpy())[0, 1] > 0.5


def test_first_order_weights_are_the_gradient_of_er():
    lam = torch.tensor([0.5, 1.0, 3.0, 7.0], dtype=torch.float64, requires_grad=True)
    for spectrum in ("eig", "sv"):
        (auto,) = torch.autograd.grad(fisher.effective_rank(lam, spectrum), lam)
        torch.testing.assert_close(fisher.first_order_weights(lam.detach(), spectrum), auto)


def test_ranking_metrics():
    score = np.arange(10.0)
    positive = score >= 7
    m = fisher.ranking_metrics(score, positive, k=2)
    assert m["precision_at_100"] == 1 and m["auroc"] == 1 and m["auprc"] == 1
    assert m["enrichment"] == pytest.approx(1 / 0.3)
    assert math.isnan(fisher.ranking_metrics(score, np.zeros(10, bool))["auroc"])


def test_peak_ignores_epoch_zero_and_onset():
    er = np.array([50.0, 10, 11, 20, 30, 25, 12])
    assert fisher.peak_epoch(er) == 4
    assert fisher.onset_epoch(er, 4) == 3


def test_config_coercion_and_bad_values():
    c = tiny(fisher.Config, {"corruptions": "[0, 0.4]", "lr": "1e-3", "seeds": "[1]",
                              "attribution_corruption": "0.4"})
    assert c.corruptions == (0.0, 0.4) and c.lr == 1e-3 and c.seeds == (1,)
    with pytest.raises(ConfigError, match="corruptions"):
        tiny(fisher.Config, {"corruptions": [0, 1.2]})
    with pytest.raises(ConfigError, match="choose one of"):
        tiny(fisher.Config, {"model": "lenet"})
    with pytest.raises(ConfigError, match="spectrum"):
        tiny(fisher.Config, {"spectrum": "trace"})
    with pytest.raises(ConfigError, match="attribution_corruption"):
        tiny(fisher.Config, {"attribution_corruption": 0.3})
    with pytest.raises(ConfigError, match="unknown parameter"):
        tiny(fisher.Config, {"epoch": 3})


def test_math_checks_pass():
    table = fisher.math_checks(n=120, width=5, num_classes=4)
    assert table["passed"].all(), table


def synthetic_results(config, noisy_fit=0.95, auroc=0.7, test_peak=3):
    curves, summary, signals, difficulty = [], [], [], []
    for c in config.corruptions:
        for seed in config.seeds:
            peak = 30 + 40 * c + 0.5 * seed
            er = [50, 10, 20 + 20 * c, peak, 15 + seed, 12]
            run = {"model": "mlp", "noise": "symmetric", "corruption": c, "seed": seed}
            curves += [{**run, "epoch": e, "er": v, "noisy_fit": noisy_fit if e == 5 else 0.1}
                       for e, v in enumerate(er)]
            summary.append({**run, "er_peak": peak, "peak_epoch": 3,
                            "fit_epoch": 4 if noisy_fit >= 0.95 else None,
                            "epochs_trained": min(config.epochs, len(er) - 1),
                            "spearman_exact_first": 0.975 + 0.002 * seed, "onset_epoch": 2,
                            "test_peak_epoch": test_peak, "test_acc_best": 0.8,
                            "test_acc_last": 0.6, "auroc_last": auroc - 0.2 + 0.02 * seed})
            signals.append({**run, "signal": "LOO er attribution (exact)",
                            "precision_at_100": 0.9 + 0.01 * seed, "enrichment": 2 + 0.1 * seed,
                            "auroc": auroc + 0.01 * seed})
            # corrupted examples lead clean ones in every decile, and most in the hardest;
            # in a noisy run the hardest decile's clean examples hold 1-3% of its top-k
            difficulty += [{"corruption": c, "seed": seed, "decile": d, "flipped": flipped,
                            "mean_delta": (1.0 + 0.1 * seed + 0.05 * d) if flipped else 0.2,
                            "clean_top_share": 0.1 + 0.01 * seed if d == 10 else 0.1,
                            "top_share": (0.01 + 0.01 * seed if c > 0 and d == 10 else 0.0)
                            if not flipped else 0.1}
                           for d in range(1, 11) for flipped in (False, True)[:1 + (c > 0)]]
    return {"curves": pd.DataFrame(curves), "summary": pd.DataFrame(summary),
            "signals": pd.DataFrame(signals), "difficulty": pd.DataFrame(difficulty)}


def test_collapse_gap_ignores_epoch_zero():
    assert fisher.collapse_gap([100, 10, 20, 40, 30]) == pytest.approx(0.25)
    assert fisher.collapse_gap([100, 40, 30, 20]) == 0  # er only falls: no inflation


def verdicts(measured):
    table = evaluate(fisher.CLAIMS, measured)
    return dict(zip(table["id"], table["verdict"], strict=True))


def test_measure_per_seed_and_the_verdicts(monkeypatch):
    # three synthetic seeds exercise the rules; the registered minimum has its own test
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5})
    measured = fisher.measure(synthetic_results(config), config)
    assert measured["inflation_collapse"]["0.4"].n == 3
    assert measured["inflation_collapse"]["0.4"].mean == pytest.approx(
        np.mean([(46 + 0.5 * s - 12) / (46 + 0.5 * s) for s in range(3)]))  # er_last = 12
    assert list(measured["monotone_peak"]) == ["0->0.2", "0.2->0.4", "0.4->0.6"]
    assert measured["monotone_peak"]["0->0.2"] == Estimate(8.0, 0.0, 3)
    assert measured["enrichment"]["peak_epochs"] == [3, 3, 3]
    # by epoch 3 the noisy er rose 40 * c more than the clean run's: 16 averaged over c
    assert measured["onset"]["inflation_at_test_peak"].mean == pytest.approx(16)
    assert measured["onset"]["by_corruption"]["0.2"].mean == pytest.approx(8)
    assert measured["enrichment"]["last_epochs"] == [5, 5, 5]
    assert measured["inflation_collapse"]["fit_epochs"] == [4] * 9
    assert measured["inflation_collapse"]["fitted"]
    assert measured["onset"]["test_drop"] == pytest.approx(0.2)
    assert measured["first_order"]["min_over_seeds"] == pytest.approx(0.975)
    assert measured["attribution_weakens"]["peak_minus_last"].mean == pytest.approx(0.19)
    assert measured["inflation_architectures"] is None  # one architecture
    assert measured["difficulty_control"]["by_decile"]["10"].mean == pytest.approx(1.4)
    assert measured["difficulty_control"]["hard_clean_top_share"].mean == pytest.approx(0.02)
    # er peaks at epoch 3 in every run: its rise beyond the clean run's is the onset's
    assert measured["inflation_under_noise"]["inflation_at_peak"].mean == pytest.approx(16)
    assert measured["peak_at_turn"]["after_best_test"] == Estimate(0.0, 0.0, 3)
    assert measured["peak_at_turn"]["before_fit"] == Estimate(1.0, 0.0, 3)
    v = verdicts(measured)
    assert v.pop("first_order").startswith("precondition failed: a CNN ran")  # MLPs only
    assert v.pop("peak_at_turn") == WITHIN_NOISE  # the peak falls on the best test epoch
    assert set(v.values()) == {HOLDS, NOT_RUN}

    measured = fisher.measure(synthetic_results(config, noisy_fit=0.5, auroc=0.89), config)
    v = verdicts(measured)
    assert v["inflation_collapse"].startswith("precondition failed: the noisy labels")
    assert v["attribution_weakens"].startswith("precondition failed: the noisy labels")
    assert v["not_detector"] == WITHIN_NOISE  # 0.89, 0.90, 0.91 straddle the 0.9 bound
    late = tiny(fisher.Config, {"epochs": 3})
    assert verdicts(fisher.measure(synthetic_results(late), late))["enrichment"].startswith(
        "precondition failed: er peaks inside training")
    # test accuracy best at epoch 1: no inflation yet, the onset claim does not hold
    early = fisher.measure(synthetic_results(config, test_peak=1), config)
    assert early["onset"]["inflation_at_test_peak"].mean == 0
    assert verdicts(early)["onset"] == WITHIN_NOISE


def test_inflation_beyond_clean_and_fall_after_peak():
    noisy, clean = [40, 10, 20, 30, 25], [40, 8, 9, 7, 6]
    assert fisher.inflation_beyond_clean(noisy, clean, 3) == pytest.approx(20 - (-1))
    assert fisher.inflation_beyond_clean(noisy, clean, 1) == 0
    assert fisher.fall_after_peak(noisy) == pytest.approx(5 / 30)
    assert fisher.fall_after_peak([40, 10, 20, 30]) == 0  # still rising: no fall


def test_a_still_rising_curve_fails_the_peak_precondition(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    claim = {c.id: c for c in fisher.CLAIMS}["not_detector"]
    rising = {"auroc": Estimate(0.75, 0.01, 5), "peak_epochs": [40, 44, 48], "epochs": 50,
              "last_epochs": [50, 50, 50],
              "fall_after_peak": Estimate(0.04, 0.005, 5)}
    assert verdict(claim, rising).startswith("precondition failed: er peaks inside training")
    assert verdict(claim, {**rising, "fall_after_peak": Estimate(0.3, 0.05, 5)}) == HOLDS


def test_architectures_row_needs_two_seeded_architectures():
    config = tiny(fisher.Config, {"epochs": 5, "arch_models": ["smallcnn"], "arch_seeds": 2})
    results = synthetic_results(config)
    cnn = results["curves"].query("corruption == 0.4 and seed < 2").assign(model="smallcnn")
    assert fisher.measure(results, config)["inflation_architectures"] is None
    results["curves"] = pd.concat([results["curves"], cnn], ignore_index=True)
    value = fisher.measure(results, config)["inflation_architectures"]
    assert set(value["gaps"]) == {"mlp", "smallcnn"} and value["gaps"]["smallcnn"].n == 2
    assert value["noisy_fit"] == pytest.approx(0.95)
    assert fisher.training_runs(config)[-2:] == [("smallcnn", "symmetric", 0.4, 0, 15),
                                        ("smallcnn", "symmetric", 0.4, 1, 15)]


def human_label_results(precision, seeds=(0,), peak_epoch=3):
    """Summary and signals of CIFAR-10N runs (label sets worst and aggre) on `seeds`."""
    summary, signals = [], []
    for name in ("worst", "aggre"):
        for seed in seeds:
            run = {"model": "mlp", "noise": name, "corruption": math.nan, "seed": seed}
            summary.append({**run, "peak_epoch": peak_epoch, "epochs_trained": 5})
            signals.append({**run, "signal": "LOO er attribution (exact)",
                            "precision_at_100": precision + 0.01 * seed,
                            "enrichment": 2 * precision + 0.02 * seed})
    return pd.DataFrame(summary), pd.DataFrame(signals)


def test_cifar10n_row_reads_each_human_label_set():
    config = tiny(fisher.Config, {"epochs": 5, "dataset": "cifar10",
                                   "human_label_sets": ["worst", "aggre"]})
    claim = {c.id: c for c in fisher.CLAIMS}["cifar10n_enrichment"]
    # the full preset's one run per label set: no interval, so never "holds"
    one = fisher._human_labels(*human_label_results(0.95), config)
    assert set(one["precision_at_100"]) == {"worst", "aggre"}
    assert one["precision_at_100"]["worst"].n == 1
    row = evaluate([claim], {claim.id: one}).iloc[0]
    assert row["verdict"].startswith(f"{WITHIN_NOISE}: needs n ≈ 5 ") and \
        row["dataset"] == "cifar10n"
    five = range(5)
    assert verdict(claim, fisher._human_labels(*human_label_results(0.9, five), config)) == HOLDS
    assert verdict(claim, fisher._human_labels(*human_label_results(0.4, five), config)) \
        == "does not hold"
    still_rising = fisher._human_labels(*human_label_results(0.9, five, peak_epoch=5), config)
    assert verdict(claim, still_rising).startswith(
        "precondition failed: er peaks inside training: every CIFAR-10N run")
    small = tiny(fisher.Config, {"epochs": 5})  # no human label set: not run
    assert fisher._human_labels(*human_label_results(0.9), small) is None


def architecture_summary(vit_rho, seeds=range(5)):
    return pd.DataFrame([{"model": model, "noise": "symmetric", "corruption": 0.4, "seed": seed,
                          "spearman_exact_first": rho + 0.002 * seed}
                         for model, rho in (("smallcnn", 0.97), ("vit_tiny", vit_rho),
                                            ("mlp", 0.9))
                         for seed in seeds])


def test_vit_row_pairs_the_vit_with_each_cnn_by_seed(monkeypatch):
    config = tiny(fisher.Config, {"epochs": 5})
    claim = {c.id: c for c in fisher.CLAIMS}["first_order_vit"]
    weaker = fisher._vit_gaps(architecture_summary(0.85), config)
    assert list(weaker["gaps"]) == ["vit_tiny - smallcnn"]  # the MLP is no CNN
    assert weaker["gaps"]["vit_tiny - smallcnn"].mean == pytest.approx(-0.12)
    assert verdict(claim, weaker) == HOLDS
    assert verdict(claim, fisher._vit_gaps(architecture_summary(0.99), config)) == "does not hold"
    # the full preset's three seeds per extra architecture: within noise, and says so
    three = evaluate([claim], {claim.id: fisher._vit_gaps(architecture_summary(0.85, range(3)),
                                                          config)}).iloc[0]
    assert three["verdict"].startswith(f"{WITHIN_NOISE}: needs n ≈ ") and \
        "fewer than the registered minimum" in three["note"]
    no_vit = architecture_summary(0.85).query("model != 'vit_tiny'")
    assert fisher._vit_gaps(no_vit, config) is None


def test_cifar100_row_reads_first_order_only_on_cifar100():
    config = tiny(fisher.Config, {"epochs": 5})
    measured = fisher.measure(synthetic_results(config), config)
    assert measured["first_order_cifar100"] is None
    assert measured["cifar10n_enrichment"] is None and measured["first_order_vit"] is None
    cifar100 = tiny(fisher.Config, {"epochs": 5, "dataset": "cifar100"})
    measured = fisher.measure(synthetic_results(cifar100), cifar100)
    first_order = {k: v for k, v in measured["first_order"].items()
                   if k not in ("cnn", "cnn_seeds")}
    assert measured["first_order_cifar100"] == first_order
    # the per-seed correlations behind the mean, for an exact test on them
    assert measured["first_order_cifar100"]["by_seed"] == {
        s: pytest.approx(0.975 + 0.002 * s) for s in range(3)}
    assert measured["first_order_cifar100"]["data"] == "cifar100"
    claim = {c.id: c for c in fisher.CLAIMS}["first_order_cifar100"]
    # three seeds, fewer than the registered minimum
    assert verdict(claim, measured["first_order_cifar100"]) == f"{WITHIN_NOISE}: needs n ≈ 5 seeds"


def test_parallel_runs_compute_what_run_loads_with_the_same_results(tmp_path, monkeypatch):
    from parallel_runs_check import check_parallel_runs

    config = tiny(fisher.Config, {
        "dataset": "digits", "n_train": 200, "n_test": 100, "n_scatter": 60,
        "mlp_widths": [16], "corruptions": [0.0, 0.4], "seeds": [0], "attribution_seeds": [1],
        "epochs": 2, "early_epoch": 1, "top_k": 10, "direct_checks": 2, "arch_models": [],
        "synthetic_n": 40})
    assert [r[2:4] for _, (_, *r) in fisher.planned_stages(config)[0]] == [
        [0.4, 0], [0.4, 1], [0.0, 0], [0.0, 1]]
    check_parallel_runs(fisher, config, tmp_path, monkeypatch,
                        clocks={"er_seconds", "train_seconds", "er_seconds_per_epoch", "seconds"})
    results = fisher.run(config)  # from the cache the workers filled
    assert set(results["arm_summary"]["seed"]) == {1}
    for table in ("summary", "signals", "curves", "examples"):
        assert set(results[table]["seed"]) == {0}, table
    assert set(results["difficulty"].groupby("seed")["corruption"].unique().map(tuple)) == {
        (0.0, 0.4), (0.0,)}


def test_a_seed_in_both_seeds_and_the_attribution_arm_is_refused():
    with pytest.raises(ConfigError, match=r"seeds \[2\] are in both seeds and attribution_seeds"):
        tiny(fisher.Config, {"seeds": [1, 2], "attribution_seeds": [2, 3]})
    assert tiny(fisher.Config, {"seeds": [1, 2], "attribution_seeds": [3]}).ARM_SEEDS == (
        "attribution_seeds",)


def test_the_arm_runs_the_clean_and_the_attribution_level_only():
    config = tiny(fisher.Config, {"corruptions": [0.0, 0.2, 0.4, 0.6], "seeds": [0, 1],
                                   "attribution_seeds": [7, 8], "arch_models": ["smallcnn"]})
    planned = [r for _, (_, *r) in fisher.planned_stages(config)[0]]
    arm = [r for r in planned if r[3] in (7, 8)]
    assert sorted((r[2], r[3]) for r in arm) == [(0.0, 7), (0.0, 8), (0.4, 7), (0.4, 8)]
    assert all(tuple(r[:2]) == ("mlp", "symmetric") and r[4] == config.epochs for r in arm)
    assert len(planned) == 4 * 2 + 2 + 4  # the grid, a SmallCNN run per seed, the arm
    # longest first: the arm's 40% runs go with the other 40% runs, before the clean ones
    levels = [r[2] for r in planned if r[0] == "mlp"]
    assert levels == sorted(levels, reverse=True)
    # a seed's run is the same cached computation whether it is a main or an arm seed
    main = tiny(fisher.Config, {"seeds": [7]})
    assert fisher.runs._run_key(config, "mlp", "symmetric", 0.4, 7, 50) == \
        fisher.runs._run_key(main, "mlp", "symmetric", 0.4, 7, 50)


def test_only_first_order_and_difficulty_control_read_the_arm(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5})
    alone = synthetic_results(config)
    armed_config = tiny(fisher.Config, {"epochs": 5, "attribution_seeds": [3, 4]})
    armed = synthetic_results(armed_config)
    arm = synthetic_results(tiny(fisher.Config, {"epochs": 5, "seeds": [3, 4]}))
    armed["arm_summary"] = arm["summary"].query("corruption in (0.0, 0.4)")
    armed["difficulty"] = pd.concat([armed["difficulty"],
                                     arm["difficulty"].query("corruption == 0.0")])
    without, with_arm = fisher.measure(alone, config), fisher.measure(armed, armed_config)
    assert with_arm["first_order"]["spearman"].n == 5
    assert with_arm["first_order"]["min_over_seeds"] == pytest.approx(0.975)
    assert with_arm["first_order"]["spearman"] != without["first_order"]["spearman"]
    share = with_arm["difficulty_control"]["share_over_uniform"]
    assert share.n == 5 and share.mean == pytest.approx(np.mean([1 + 0.1 * s for s in range(5)]))
    for key in set(without) - {"first_order", "difficulty_control"}:
        assert with_arm[key] == without[key], key


def test_difficulty_control_reads_the_arm_seeds_clean_run_only():
    config = tiny(fisher.Config, {"corruptions": [0.0, 0.4], "seeds": [0],
                                   "attribution_seeds": [1], "top_k": 5})
    rng = np.random.default_rng(0)
    examples = pd.DataFrame([
        {"model": "mlp", "noise": "symmetric", "corruption": c, "seed": seed, "index": i,
         "flipped": c > 0 and i % 3 == 0, "final_loss_true": rng.random(),
         "delta_exact": rng.normal()}
        for c in (0.0, 0.4) for seed in (0, 1) for i in range(40)])
    table = pd.concat([fisher.difficulty_control(examples, config),
                       fisher.arm_difficulty(examples, config)], ignore_index=True)
    assert set(map(tuple, table[["seed", "corruption"]].drop_duplicates().to_numpy())) == {
        (0, 0.0), (0, 0.4), (1, 0.0)}
    assert fisher.arm_difficulty(examples, dataclasses.replace(config, attribution_seeds=())
                                 ).empty
    assert table.query("seed == 0")["count"].sum() == 80


def test_difficulty_control_compares_corrupted_with_clean_within_each_decile(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    rows = [{"corruption": 0.4, "seed": seed, "decile": d, "flipped": flipped,
             "mean_delta": (2.0 + seed if flipped else 0.5 * d / 10), "count": 4}
            for seed in range(3) for d in range(1, 11) for flipped in (False, True)]
    table = pd.DataFrame(rows + [{**r, "corruption": 0.0, "flipped": False} for r in rows
                                 if not r["flipped"]])
    gaps = fisher.decile_contrast(table, 0.4)
    assert list(gaps) == [str(d) for d in range(1, 11)]
    assert gaps["10"] == Estimate.of([1.5, 2.5, 3.5]) and gaps["1"].mean == pytest.approx(2.95)
    # the version that compared deciles, kept beside the absolute bound that replaced it
    claim = {c.id: c for c in fisher.CLAIMS}["difficulty_control"].previous[-1]
    assert claim.rule.startswith("every decile's difference > 0")
    value = {"share_over_uniform": Estimate(4.0, 0.1, 3), "by_decile": gaps}
    assert verdict(claim, value) == HOLDS
    # the earlier rule read the hardest decile's share of the clean run's top-100 alone
    assert verdict({c.id: c for c in fisher.CLAIMS}["difficulty_control"].previous[0],
                   value) == "does not hold"
    # hard clean examples that outweigh the corrupted ones in the hardest decile
    hard = table.assign(mean_delta=np.where((table["decile"] == 10) & ~table["flipped"],
                                            9.0, table["mean_delta"]))
    assert verdict(claim, {**value, "by_decile": fisher.decile_contrast(hard, 0.4)}) == \
        "does not hold"
    assert fisher.decile_contrast(table, 0.2) == {}
    assert verdict(claim, {**value, "by_decile": {k: gaps[k] for k in list(gaps)[:9]}}) \
        .startswith("precondition failed: every difficulty decile")


def difficulty_examples(hard_in_top: int, seeds=(0, 1, 2)) -> pd.DataFrame:
    """Per seed, a clean run and a 40% run of 100 scatter examples (every third flipped),
    difficulty rising with the index; in the 40% run the clean examples among the hardest
    decile's first 3 * `hard_in_top` lead the attribution, then the corrupted ones, then the
    rest."""
    rows = []
    for seed in seeds:
        for i in range(100):
            flipped = i % 3 == 0
            hard_clean = i >= 90 and not flipped and (i - 90) < 3 * hard_in_top
            rows += [{"model": "mlp", "noise": "symmetric", "corruption": c, "seed": seed,
                      "index": i, "flipped": c > 0 and flipped, "final_loss_true": i / 100,
                      "delta_exact": (10.0 if hard_clean else 5.0 if flipped else 0.01 * i)
                      if c > 0 else 0.01 * i}
                     for c in (0.0, 0.4)]
    return pd.DataFrame(rows)


def test_hard_clean_examples_share_of_the_top_is_an_absolute_bound(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"corruptions": [0.0, 0.4], "top_k": 20})
    claim = {c.id: c for c in fisher.CLAIMS}["difficulty_control"]
    few = fisher.difficulty_control(difficulty_examples(hard_in_top=0), config)
    # every group's share of its run's top-k sums to one over the run
    assert few.groupby(["corruption", "seed"])["top_share"].sum().to_numpy() == \
        pytest.approx(1.0)
    # the clean run's own top-k is all clean: its share is clean_top_share
    clean = few[few["corruption"] == 0.0]
    assert clean["top_share"].to_numpy() == pytest.approx(clean["clean_top_share"].to_numpy())
    assert fisher.hard_clean_share(few, 0.4) == Estimate.of([0.0, 0.0, 0.0])
    many = fisher.difficulty_control(difficulty_examples(hard_in_top=2), config)
    # decile 10 holds indices 90-99: its clean 91, 92, 94 and 95 lead, 4 of the top 20
    assert fisher.hard_clean_share(many, 0.4).mean == pytest.approx(4 / 20)
    assert fisher.hard_clean_share(many, 0.2) is None
    fitted = {"fitted": True, "share_over_uniform": Estimate(1.8, 0.1, 3), "by_decile": {}}
    assert verdict(claim, {**fitted, "hard_clean_top_share": Estimate(0.01, 0.002, 3)}) == HOLDS
    spread = Estimate.of([0.28, 0.30, 0.32])
    assert verdict(claim, {**fitted, "hard_clean_top_share": spread}) == "does not hold"
    # an unfitted clean or noisy run says nothing about difficulty: the precondition says so
    assert verdict(claim, {**fitted, "fitted": False,
                           "hard_clean_top_share": Estimate(0.01, 0.002, 3)}).startswith(
        "precondition failed: the runs met their declared fit")
    # a table without the runs' own top-k shares is not judged by this rule
    assert verdict(claim, {**fitted, "hard_clean_top_share": None}) == NOT_RUN
    assert claim.delta is None and claim.smallest_effect == 0.02 and claim.instrument


def test_first_order_is_judged_on_cnn_runs(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5, "arch_models": ["smallcnn"], "arch_seeds": 3})
    results = synthetic_results(config)
    mlp = results["summary"].query("corruption == 0.4")
    cnn = mlp.assign(model="smallcnn", spearman_exact_first=0.99 + 0.001 * mlp["seed"])
    results["summary"] = pd.concat([results["summary"], cnn], ignore_index=True)
    value = fisher.measure(results, config)["first_order"]
    assert value["cnn"]["spearman"].n == 3 and value["cnn"]["min_over_seeds"] == 0.99
    assert value["spearman"].mean == pytest.approx(0.977)  # the MLP's, beside it
    claim = {c.id: c for c in fisher.CLAIMS}["first_order"]
    assert verdict(claim, value) == HOLDS
    judged_on_runs = claim.previous[-1]  # the version that pooled every CNN run
    poor = {**value, "cnn": {**value["cnn"], "spearman": Estimate(0.9, 0.01, 3)}}
    assert verdict(judged_on_runs, poor) == "does not hold"
    assert verdict(claim.previous[0], poor) == HOLDS  # the earlier rule judged the MLP
    poor = {**value, "cnn_seeds": {**value["cnn_seeds"], "spearman": Estimate(0.9, 0.01, 3)}}
    assert verdict(claim, poor) == "does not hold"


def test_first_order_averages_each_seeds_cnns_and_keeps_every_runs_value(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5, "arch_models": ["smallcnn", "resnet18"],
                                   "arch_seeds": 3})
    results = synthetic_results(config)
    mlp = results["summary"].query("corruption == 0.4")
    cnns = [mlp.assign(model="smallcnn", spearman_exact_first=0.99 + 0.001 * mlp["seed"]),
            mlp.assign(model="resnet18", spearman_exact_first=0.97 + 0.001 * mlp["seed"])]
    results["summary"] = pd.concat([results["summary"], *cnns], ignore_index=True)
    value = fisher.measure(results, config)["first_order"]
    # two CNNs on each of three seeds: three replicates (the runs of a seed share its data)
    seeds = value["cnn_seeds"]
    assert seeds["spearman"].n == 3 and value["cnn"]["spearman"].n == 6
    assert seeds["by_seed"] == {s: pytest.approx(0.98 + 0.001 * s) for s in range(3)}
    assert seeds["by_run"]["resnet18 seed 2"] == pytest.approx(0.972)
    assert len(seeds["by_run"]) == 6 and seeds["min_over_seeds"] == pytest.approx(0.98)
    claim = {c.id: c for c in fisher.CLAIMS}["first_order"]
    assert claim.replicates == "seeds" and claim.smallest_effect == 0.02
    assert verdict(claim, value) == HOLDS
    assert verdict(claim, {**value, "cnn_seeds": None}).startswith("precondition failed: a CNN")


def test_first_order_cifar100_reads_the_papers_direction(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    claim = {c.id: c for c in fisher.CLAIMS}["first_order_cifar100"]
    lower = {"data": "cifar100", "spearman": Estimate(0.9, 0.01, 5), "min_over_seeds": 0.88}
    assert verdict(claim, lower) == HOLDS  # less accurate than CIFAR-10's > 0.96
    assert verdict(claim.previous[0], lower) == "does not hold"
    assert verdict(claim, {**lower, "spearman": Estimate(0.99, 0.002, 5)}) == "does not hold"


def test_each_human_label_set_runs_on_human_seeds():
    config = tiny(fisher.Config, {"dataset": "cifar10", "human_label_sets": ["worst"],
                                   "seeds": [0, 1, 2], "human_seeds": 2, "arch_models": []})
    human = [r for r in fisher.training_runs(config) if r[1] == "worst"]
    assert [r[3] for r in human] == [0, 1]
    with pytest.raises(ConfigError, match="human_seeds=4 exceeds the 3 seeds"):
        tiny(fisher.Config, {"seeds": [0, 1, 2], "human_seeds": 4})
    from memlib import paths
    from memlib.presets import read_params

    full = read_params(paths.repo_root() / "params" / "full" / "03_fisher_rank_inflation.yaml")
    assert full["human_seeds"] >= 5 and len(full["seeds"]) >= full["human_seeds"]


def test_each_replicate_trains_and_tests_on_a_subset_of_its_own():
    """Two seeds draw different training and test subsets; one seed draws the same one again;
    0 is the whole split, the same for every seed."""
    first, again, other = (fisher.run_data("mnist-5k", 200, 100, "unit", s) for s in (0, 0, 1))
    assert torch.equal(first[2], again[2]) and torch.equal(first[1].x, again[1].x)
    assert len(first[2]) == len(other[2]) == 200
    assert not torch.equal(first[2], other[2])
    assert not torch.equal(first[1].x, other[1].x)
    assert torch.bincount(first[0].y).tolist() == [20] * 10  # still class-stratified
    whole = [fisher.run_data("mnist-5k", 0, 0, "unit", s) for s in (0, 1)]
    assert whole[0][2] is None and torch.equal(whole[0][1].x, whole[1][1].x)


def test_a_subset_larger_than_its_split_is_refused_naming_both_numbers():
    from memlib.data import DataRequestError

    with pytest.raises(ConfigError, match="n_train=5000 asks for more than the 4000 training "
                                          "images of mnist-5k"):
        tiny(fisher.Config, dataset="mnist-5k", n_train=5000)
    with pytest.raises(ConfigError, match="n_test=1001 asks for more than the 1000 test images"):
        tiny(fisher.Config, dataset="mnist-5k", n_test=1001)
    with pytest.raises(ConfigError, match="n_scatter=4500 asks for more than the 4000"):
        tiny(fisher.Config, dataset="mnist-5k", n_train=0, n_test=0, n_scatter=4500)
    tiny(fisher.Config, dataset="mnist-5k", n_train=4000, n_test=1000)  # all of it: asked for
    # a copy smaller than the dataset is refused as it loads, never clamped
    with pytest.raises(DataRequestError, match="n_train=4001 asks for more than the 4000"):
        fisher.run_data("mnist-5k", 4001, 0, "unit", 0)


# --- the measures over what a run stored -------------------------------------------------

STORED = dict(dataset="digits", n_train=200, n_test=100, n_scatter=50, mlp_widths=[16],
              epochs=3, early_epoch=2, seeds=[0], corruptions=[0.4], arch_models=[],
              synthetic_n=20, direct_checks=2, top_k=5)


def test_a_run_stores_the_scatter_sets_last_layer_at_its_peak_and_last_epoch():
    config = tiny(fisher.Config, STORED)
    item = (config, *fisher.training_runs(config)[0])
    result = fisher.cached_run(item)
    scatter = result["scatter"]
    assert len(scatter["index"]) == 50 and scatter["flipped"].dtype == torch.bool
    assert bool((scatter["label"] != scatter["true"])[scatter["flipped"]].all())
    for at in fisher.STORED_EPOCHS:
        assert result[at]["h"].shape == (50, 16) and result[at]["z"].shape == (50, 10)
        assert result[at]["h"].dtype == torch.float32
    assert result["early_z"].shape == (50, 10) and result["margin_sum"].dtype == torch.float64
    # the stored peak is where the history's er peaks: the same er from the stored features
    er = result["history"]["er"].to_numpy()
    peak = result["peak"]
    assert fisher.scatter_effective_rank(peak["h"], peak["z"], scatter["label"]) == er[
        result["peak_epoch"]]
    last = result["last"]
    assert fisher.scatter_effective_rank(last["h"], last["z"], scatter["label"]) == er[-1]
    short = tiny(fisher.Config, {**STORED, "early_epoch": 3, "epochs": 3, "arch_epochs": 2,
                                 "arch_models": ["smallcnn"], "cnn_channels": [4, 4, 4]})
    cnn = next(r for r in fisher.training_runs(short) if r[0] == "smallcnn")
    assert fisher.cached_run((short, *cnn))["early_z"] is None  # stopped before early_epoch
    examples = fisher.run_result((short, *cnn))["examples"]  # the peak's loss stands in
    assert examples["loss_early"].equals(examples["loss_peak"])


def test_changing_a_measures_setting_computes_the_measure_only(monkeypatch):
    config = tiny(fisher.Config, STORED)
    item = (config, *fisher.training_runs(config)[0])
    trained = []
    real = fisher.runs.train_run
    monkeypatch.setattr(fisher.runs, "train_run",
                        lambda *spec: trained.append(spec[1:]) or real(*spec))
    first = fisher.run_result(item)
    assert len(trained) == 1 and not math.isnan(first["direct_error"])
    more = dataclasses.replace(config, direct_checks=5)
    again = fisher.run_result((more, *item[1:]))
    assert len(trained) == 1  # the direct check again, no training
    assert fisher.cached_loo_direct.key((more, *item[1:])) != fisher.cached_loo_direct.key(item)
    assert again["examples"].equals(first["examples"])
    unchecked = fisher.run_result((dataclasses.replace(config, direct_checks=0), *item[1:]))
    assert len(trained) == 1 and math.isnan(unchecked["direct_error"])
    fisher.run_result((config, *item[1:4], 1, item[5]))
    assert len(trained) == 2  # another run's measures need that run
    # keyed by the run's own key: whatever re-keys the training re-keys its measures
    for measure in (fisher.cached_first_order, fisher.cached_grad_norms):
        assert measure.spec(item)["run"] == fisher.cached_run.key(item)
    assert fisher.cached_loo_exact.spec((item, "last"))["run"] == fisher.cached_run.key(item)


# fisher.run on STORED in a fresh process, printing how often each computation computed
COUNTED = """
import collections, json, sys
from memlib import runs
from memlib.config import build
from memlib.studies import fisher
computed = collections.Counter()
get = runs.Computation.get
def counting(self, argument, compute, refresh=False):
    return get(self, argument, lambda: computed.update([self.name]) or compute(), refresh)
runs.Computation.get = counting
fisher.run(build(fisher.Config, json.loads(sys.argv[1])))
print(json.dumps(computed))
"""


def computed_by(package, config: dict) -> dict[str, int]:
    """How often each computation computed in a fresh process that imports memlib from
    `package`'s parent and runs study 3 on `config`, with this test's cache."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    out = subprocess.run([sys.executable, "-c", COUNTED, json.dumps(config)], env=env,
                         capture_output=True, text=True, check=True, cwd=package.parent)
    return json.loads(out.stdout.splitlines()[-1])


def test_editing_a_measure_computes_that_measure_and_trains_nothing(tmp_path):
    from test_runs import PACKAGE, copy_of_memlib, with_statement_in

    config = {**TINY["fisher"], **STORED}
    cold = computed_by(PACKAGE, config)
    runs = len(fisher.training_runs(tiny(fisher.Config, STORED)))
    assert cold["fisher-run"] == runs and cold["fisher-loo-exact"] == 2 * runs

    def both(name: str, source: str) -> str:
        edit = with_statement_in("studies.fisher.method", "gradient_norms")
        return edit(name, with_statement_in("studies.fisher.method", "loo_exact")(name, source))

    # exact LOO again, the direct check that reads it (and the math checks), the gradient
    # norms again; no training, and no first-order attribution
    assert computed_by(copy_of_memlib(tmp_path / "measures", both), config) == {
        "fisher-loo-exact": 2 * runs, "fisher-loo-direct": cold["fisher-loo-direct"],
        "fisher-grad-norms": runs, "fisher-math-checks": 1}
    # what the training computes as it trains (the margins) trains again, and so measures again
    margins = copy_of_memlib(tmp_path / "margins", with_statement_in("studies.fisher.method",
                                                                     "margins"))
    again = computed_by(margins, config)
    assert again["fisher-run"] == runs and again["fisher-loo-first-order"] == runs


def test_peak_at_turn_places_the_er_peak_between_the_best_test_epoch_and_the_fit(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5})
    claim = {c.id: c for c in fisher.CLAIMS}["peak_at_turn"]
    results = synthetic_results(config, test_peak=2)
    # the second seed's runs fit at epoch 5, the others at 4: before_fit 1, 2, 1
    results["summary"].loc[results["summary"]["seed"] == 1, "fit_epoch"] = 5
    value = fisher.measure(results, config)["peak_at_turn"]
    assert value["after_best_test"] == Estimate(1.0, 0.0, 3)  # er peaks at 3, test at 2
    assert value["before_fit"] == Estimate.of([1.0, 2.0, 1.0])
    assert value["by_corruption"]["before_fit"]["0.4"] == Estimate.of([1.0, 2.0, 1.0])
    assert value["noisy_fit_at_peak"].mean == pytest.approx(0.1)
    assert verdict(claim, {**value, "before_fit": Estimate(30.0, 1.0, 3)}) == HOLDS
    # er peaking after the noise is fitted (fit at epoch 2, peak at 3) does not hold
    late = synthetic_results(config, test_peak=2)
    late["summary"]["fit_epoch"] = 2
    assert verdict(claim, fisher.measure(late, config)["peak_at_turn"]) == "does not hold"
    # a run that never fits has no fit epoch: the precondition says so
    unfit = fisher.measure(synthetic_results(config, noisy_fit=0.5), config)["peak_at_turn"]
    assert verdict(claim, unfit).startswith("precondition failed: the noisy labels are fitted")


def test_inflation_under_noise_compares_each_rise_with_the_clean_runs(monkeypatch):
    monkeypatch.setattr("memlib.claims.rules.MIN_REPLICATES", 3)
    monkeypatch.setattr("memlib.claims.rules.PLANNED_ABOVE", 10**6)  # no planned n gates
    config = tiny(fisher.Config, {"epochs": 5})
    claim = {c.id: c for c in fisher.CLAIMS}["inflation_under_noise"]
    results = synthetic_results(config)
    value = fisher.measure(results, config)["inflation_under_noise"]
    # by the peak (epoch 3) a noisy run rose 20 + 40 c + 0.5 s - 10 against the clean 20 + 0.5 s
    # - 10: 40 c beyond it, 8 / 16 / 24 per rate
    assert value["by_corruption"]["0.6"].mean == pytest.approx(24)
    assert verdict(claim, value) == HOLDS
    # noisy curves that follow the clean one rise no more than it: no inflation
    clean = results["curves"].query("corruption == 0.0")
    flat = pd.concat([clean.assign(corruption=c) for c in config.corruptions],
                     ignore_index=True)
    results["curves"] = flat
    value = fisher.measure(results, config)["inflation_under_noise"]
    assert value["inflation_at_peak"].mean == 0
    assert verdict(claim, value) == WITHIN_NOISE
    assert claim.delta is None and claim.smallest_effect == 5.7 and claim.scope == "paper"
