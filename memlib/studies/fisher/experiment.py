"""Study 3's experiment: the runs a Config asks for, the order worker processes compute
them in, and the tables `run` assembles from them. The attribution arm's seeds
(`attribution_seeds`) run only the clean level and attribution_corruption; `run` keeps their
runs out of every table but the difficulty control's clean rows and `arm_summary`, which
only the first_order and difficulty_control claims read."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from memlib.runs import compute_missing
from memlib.studies.fisher.config import Config
from memlib.studies.fisher.method import onset_epoch, ranking_metrics
from memlib.studies.fisher.runs import cached_checks, cached_run, measures_of, run_result

# `runs` is left out: the package's `runs` is its runs part
__all__ = ["SIGNALS", "TIMING", "run", "arm_corruptions", "difficulty_control", "arm_difficulty",
           "planned_runs", "planned_stages", "prefetch_runs", "training_runs"]


def training_runs(config: Config) -> list[tuple[str, str, float, int, int]]:
    """(model, noise, corruption, seed, epochs) of every training run the config asks for."""
    grid = [(config.model, "symmetric", c, s, config.epochs)
            for c in config.corruptions for s in config.seeds]
    arch = [(m, "symmetric", config.attribution_corruption, s, config.arch_epochs)
            for m in config.arch_models if m != config.model
            for s in config.seeds[:config.arch_seeds]]
    human = [(config.model, name, math.nan, s, config.epochs)
             for name in config.human_label_sets for s in config.seeds[:config.human_seeds]]
    arm = [(config.model, "symmetric", c, s, config.epochs)
           for c in arm_corruptions(config) for s in config.attribution_seeds]
    return grid + arch + human + arm


def arm_corruptions(config: Config) -> tuple[float, ...]:
    """The corruptions the attribution arm's seeds run: of `corruptions`, the clean level
    (difficulty_control) and attribution_corruption (first_order)."""
    return tuple(c for c in config.corruptions if c in (0.0, config.attribution_corruption))


SIGNALS = {  # name -> (column, sign): a higher sign * value means "more likely corrupted"
    "LOO er attribution (exact)": ("delta_exact", 1),
    "LOO er attribution (first order)": ("delta_first", 1),
    "loss at peak epoch": ("loss_peak", 1),
    "loss at early epoch": ("loss_early", 1),
    "gradient norm ||g_i||": ("grad_norm", 1),
    "area under the margin (AUM)": ("aum", -1),
}
TIMING = {"delta_exact": "loo_exact", "delta_first": "loo_first_order", "grad_norm": "grad_norm"}


def run(config: Config) -> dict:
    """Every experiment of the study; each training run, and each measure of what it stored,
    is cached on its own."""
    from scipy.stats import spearmanr

    prefetch_runs(config)
    checks = cached_checks(config)
    results = []
    for model_name, noise, corruption, seed, epochs in training_runs(config):
        result = run_result((config, model_name, noise, corruption, seed, epochs))
        results.append(((model_name, noise, corruption, seed), result))
    curves, summary, signals, examples = [], [], [], []
    for (model_name, noise, corruption, seed), result in results:
        label = dict(model=model_name, noise=noise, corruption=corruption, seed=seed)
        hist = result["history"].assign(**label)
        curves.append(hist)
        er = hist["er"].to_numpy()
        peak = result["peak_epoch"]
        ex = result["examples"].assign(**label)
        examples.append(ex)
        test_peak = int(hist["test_acc"].to_numpy()[1:].argmax()) + 1
        rho = spearmanr(ex["delta_exact"], ex["delta_first"]).statistic
        last = ranking_metrics(ex["delta_last"].to_numpy(), ex["flipped"].to_numpy(),
                               config.top_k)
        summary.append({**label, "peak_epoch": peak, "fit_epoch": result["fit_epoch"],
                        "epochs_trained": result["epochs_trained"],
                        "er_epoch1": er[1], "er_peak": er[peak],
                        "er_last": er[-1], "rank_at_peak": result["rank"],
                        "rank_bound": result["rank_bound"], "onset_epoch": onset_epoch(er, peak),
                        "test_peak_epoch": test_peak,
                        "test_acc_best": hist["test_acc"].iloc[1:].max(),
                        "test_acc_last": hist["test_acc"].iloc[-1],
                        "spearman_exact_first": rho, "auroc_last": last["auroc"],
                        "precision_at_100_last": last["precision_at_100"],
                        "direct_max_abs_error":
                        result["direct_error"], "train_seconds": result["train_seconds"],
                        "er_seconds_per_epoch": hist["er_seconds"].mean()})
        flipped = ex["flipped"].to_numpy()
        rng = np.random.default_rng(seed)
        scores = {name: sign * ex[col].to_numpy() for name, (col, sign) in SIGNALS.items()}
        scores["random"] = rng.random(len(ex))
        for name, score in scores.items():
            col = SIGNALS.get(name, ("", 0))[0]
            seconds = result["timings"].get(TIMING.get(col, ""), 0.0)
            signals.append({**label, "signal": name, "seconds": seconds,
                            **ranking_metrics(score, flipped, config.top_k)})
    summary = pd.DataFrame(summary)
    signals = pd.DataFrame(signals)
    examples = pd.concat(examples, ignore_index=True)
    difficulty = pd.concat([difficulty_control(examples, config),
                            arm_difficulty(examples, config)], ignore_index=True)
    tables = {"curves": pd.concat(curves, ignore_index=True), "summary": summary,
              "signals": signals, "examples": examples}
    split = {name: _split_arm(frame, config) for name, frame in tables.items()}
    return {"checks": checks, **{name: main for name, (main, _) in split.items()},
            "difficulty": difficulty, "arm_summary": split["summary"][1]}


def _split_arm(frame: pd.DataFrame, config: Config) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the rows of the main runs, the rows of the attribution arm's runs): every table but
    the rules that read the arm sees the main runs alone, as if the arm had not run."""
    in_arm = frame["seed"].isin(config.attribution_seeds)
    return frame[~in_arm].reset_index(drop=True), frame[in_arm].reset_index(drop=True)


def difficulty_control(examples: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Delta by difficulty decile, difficulty = loss under the clean-label run (same seed).

    One row per (corruption, seed, decile, flipped): mean exact Delta and count, the clean
    run's share of its top-k Delta in each decile (clean_top_share), and the share of this
    run's own top-k Delta that the group's examples hold (top_share: in a noisy run, how much
    of the top of the attribution clean examples of a difficulty decile take).
    """
    if 0.0 not in config.corruptions:
        return pd.DataFrame()
    main = examples[(examples["model"] == config.model) & (examples["noise"] == "symmetric")]
    rows = []
    for seed in config.seeds:
        clean = main[(main["corruption"] == 0.0) & (main["seed"] == seed)]
        difficulty = clean.set_index("index")["final_loss_true"]
        deciles = pd.qcut(difficulty.rank(method="first"), 10, labels=False)
        top = clean.nlargest(config.top_k, "delta_exact")["index"]
        top_share = deciles.loc[top].value_counts(normalize=True)
        for corruption in config.corruptions:
            run_ex = main[(main["corruption"] == corruption) & (main["seed"] == seed)]
            run_ex = run_ex.assign(decile=deciles.loc[run_ex["index"]].to_numpy())
            run_top = set(run_ex.nlargest(config.top_k, "delta_exact")["index"])
            for (decile, flipped), group in run_ex.groupby(["decile", "flipped"]):
                rows.append({"corruption": corruption, "seed": seed, "decile": int(decile) + 1,
                             "flipped": bool(flipped), "mean_delta": group["delta_exact"].mean(),
                             "count": len(group),
                             "clean_top_share": float(top_share.get(decile, 0.0)),
                             "top_share": group["index"].isin(run_top).sum() / len(run_top)})
    return pd.DataFrame(rows)


def arm_difficulty(examples: pd.DataFrame, config: Config) -> pd.DataFrame:
    """The difficulty control's rows of the attribution arm's seeds: their clean runs only
    (the arm runs no other level the table reads); empty without an arm."""
    if not config.attribution_seeds or 0.0 not in config.corruptions:
        return pd.DataFrame()
    arm = dataclasses.replace(config, seeds=config.attribution_seeds, attribution_seeds=())
    table = difficulty_control(examples, arm)
    return table[table["corruption"] == 0.0].reset_index(drop=True)


def planned_stages(config: Config) -> list[list[tuple]]:
    """(cached computation, argument) of every cached result of `run`, in stages that each
    read only the ones before: the training runs, longest first as far as known in advance
    (the other models' runs, then the noisier runs first: a run stops `epochs_after_fit`
    epochs after it fits its labels, and noisier labels take longer to fit; human label sets
    count as clean); the measures over what they stored and the math checks (2 s); the direct
    checks of exact LOO, which read it."""
    def longest_first(r: tuple) -> tuple:
        model, _, corruption, _, _ = r
        return model == config.model, 0.0 if math.isnan(corruption) else -corruption

    items = [(config, *r) for r in sorted(training_runs(config), key=longest_first)]
    measures = [measures_of(item) for item in items]
    return [[(cached_run, item) for item in items],
            [m for first, _ in measures for m in first] + [(cached_checks, config)],
            [m for _, checks in measures for m in checks]]


def planned_runs(config: Config) -> list[tuple]:
    """Every cached result of `run`, each call once, stage after stage (`planned_stages`)."""
    return [call for stage in planned_stages(config) for call in stage]


def prefetch_runs(config: Config) -> None:
    """Compute the planned results missing from the cache `config.parallel_runs` at a time, in
    worker processes (one CPU thread each; nothing under torchrun), for `run` to load: a stage
    once the one before it is done, so that no measure trains its run a second time."""
    for stage in planned_stages(config):
        compute_missing(stage, config.parallel_runs, "fisher runs")
