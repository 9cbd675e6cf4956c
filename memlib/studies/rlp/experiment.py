"""The six experiments assembled from cached runs: the plan of runs (`planned_runs`), `run`
(tidy tables over seeds) and the choice of the best λ."""

from __future__ import annotations

import math

import pandas as pd

from memlib.runs import compute_missing
from memlib.studies.rlp.config import (
    REGULARIZED,
    STANDARD_REGULARIZERS,
    Config,
    RunSpec,
    probe_spec,
    spec,
)
from memlib.studies.rlp.runs import (
    cached_frozen,
    cached_probes,
    cached_run,
    final_row,
    layer_rows,
    probe_curve,
)

__all__ = [
    "regularizer_grid", "lambda_grid", "swept", "sampling_spec", "noise_spec",
    "retraining_spec", "planned_runs",
    "run", "sampling", "best_lambda", "with_probes", "probed"
]


def regularizer_grid(config: Config) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """(RunSpec field, strengths) of each standard regularizer, swept one at a time."""
    return tuple(zip(STANDARD_REGULARIZERS, (config.dropouts, config.weight_decays,
                                             config.label_smoothings), strict=True))


def lambda_grid(config: Config, where: str = "last") -> tuple[float, ...]:
    """λ values of the sweep for last-layer or all-layer regularization (each judged at its
    own largest λ that still trains)."""
    values = config.all_lambdas if where == "all" and config.all_lambdas else config.lambdas
    return (0.0, *values)


def swept(config: Config, **overrides) -> RunSpec:
    """A regularized run of a sweep: the claims and tables read only its last epoch, so it is
    measured there alone (each measurement costs about one training epoch; the unregularized
    runs keep their curves and fit epochs, which the claims read). A run that stops a set
    number of epochs after its fit keeps measuring, since the fit is seen only when measured."""
    if config.epochs_after_fit is not None:
        return spec(config, **overrides)
    return spec(config, measure_every=config.epochs, **overrides)


def sampling_spec(config: Config, **overrides) -> RunSpec:
    """A run of the sampling experiment: the default setting at `sampling_noise`."""
    return spec(config, noise=config.sampling_noise, **overrides)


def noise_spec(config: Config, rate: float, lam: float, seed: int) -> RunSpec:
    """A run of the label-noise experiment: at the default noise the unregularized runs are
    the sweeps' base runs (with their curves); every other run is measured at its last epoch
    (the noise claims read its final accuracies and whether it fitted)."""
    make = spec if lam == 0 and rate == config.noise else swept
    return make(config, noise=rate, lam=lam, seed=seed)


def retraining_spec(config: Config, seed: int) -> RunSpec:
    """The default run of `seed` (its model, training subset and recipe) trained from scratch
    on random labels (`RunSpec.labels`), measured at its last epoch: the `retraining` row
    reads its post-hoc probes and whether it fitted its random labels."""
    return swept(config, labels="random", seed=seed)


def planned_runs(config: Config, best: float | None = None) -> list[tuple]:
    """The (cached computation, spec) pairs `run` asks for: those that do not depend on the
    λ sweep's results, or (given its best λ) those that do. Longest first, so that two
    workers finish together (small scale, cold: a penalized SmallCNN run 68-78 s, an
    unpenalized one 53 s, an MLP run 28 s, a frozen baseline 5-17 s)."""
    seeds = config.seeds
    if best is not None:
        if not config.sampling_experiment:
            return []
        sampled = ([(cached_run, sampling_spec(config, fraction=f, lam=lam, seed=seed))
                    for f in config.fractions for lam in (0.0, best) for seed in seeds]
                   + [(cached_run, sampling_spec(config, long_tail_ratio=config.long_tail_ratio,
                                                 lam=lam, seed=seed))
                      for lam in (0.0, best) for seed in seeds])
        return sampled  # the sampling tables read no probes
    layer = [(cached_run, spec(config, model=name, seed=seed)) for name in config.layer_models
             for seed in seeds]
    frozen = [(cached_frozen, s) for _, s in layer]
    regs = [(cached_run, swept(config, seed=seed, **{field: v}))
            for field, values in regularizer_grid(config) for v in values for seed in seeds]
    lams = [(cached_run, swept(config, lam=lam, regularize=where, seed=seed))
            for where in REGULARIZED for lam in lambda_grid(config, where)[1:]
            for seed in seeds]
    noise = [(cached_run, noise_spec(config, rate, lam, seed))
             for rate in config.noise_rates for lam in (0.0, *config.noise_lambdas)
             for seed in seeds]
    retrain = [(cached_run, retraining_spec(config, seed)) for seed in seeds]
    # noise reuses runs
    runs = list(dict.fromkeys(lams + noise + regs + retrain + layer + frozen))
    return with_probes(config, runs, read=set(lams + regs + retrain + layer))


def with_probes(config: Config, plan: list[tuple], read: set[tuple]) -> list[tuple]:
    """`plan` followed by the post-hoc probes of each of its training runs that `run` reads
    them of, the calls in `read` (computed after them: a probe reads its run's stored
    features); the label-noise and sampling tables read none."""
    return plan + [(cached_probes, probe_spec(config, s)) for f, s in plan
                   if f is cached_run and (f, s) in read]


def probed(config: Config, s: RunSpec) -> tuple[dict, dict]:
    """A run and its post-hoc probes."""
    return cached_run(s), cached_probes(probe_spec(config, s))


def run(config: Config) -> dict:
    """All six experiments, every condition over `config.seeds`; every training run is
    cached, `config.parallel_runs` computed at once. Returns tidy DataFrames with a `seed`
    column."""
    seeds = config.seeds
    compute_missing(planned_runs(config), config.parallel_runs, "rlp runs")
    base = {seed: cached_run(spec(config, seed=seed)) for seed in seeds}
    first = base[seeds[0]]
    layers = first["layers"]
    out = {"chance": 1 / first["n_random"], "layers": layers, "last_layer": layers[-1],
           "dataset": spec(config).dataset, "model": config.model,
           "sampling_noise": config.sampling_noise}

    # 1. layer-wise RLP accuracy vs depth, with the frozen-initialisation baseline, and how
    # well each model fitted its (noisy) labels
    rows, fit = [], []
    for name in config.layer_models:
        for seed in seeds:
            s = spec(config, model=name, seed=seed)
            (result, probes), frozen = probed(config, s), cached_frozen(s)
            fit.append({"model": name, "seed": seed,
                        "train_acc": result["history"]["train_acc"].iloc[-1],
                        "clean_train_acc": result["history"]["clean_train_acc"].iloc[-1],
                        "noisy_fit": result["noisy_fit"], "fit_epoch": result["fit_epoch"],
                        "epochs_trained": result["epochs_trained"]})
            # the heads on frozen features after as many epochs as the run trained
            last = frozen["history"].set_index("epoch").loc[result["epochs_trained"]]
            for row in layer_rows(result, probes, model=name, seed=seed):
                n = row["layer"]
                rows.append({**row, "frozen_acc": last[f"rlp_{n}"],
                             "frozen_proj_acc": last.get(f"rlpproj_{n}", math.nan),
                             "frozen_collapse": (frozen["collapse"] or {}).get(n, math.nan)})
    out["layerwise"], out["fit"] = pd.DataFrame(rows), pd.DataFrame(fit)

    # 1b. the default model trained from scratch on random labels: the same online heads and
    # post-hoc probes of each layer, beside the clean network's (the `retraining` and
    # `positive_control` rows). Its frozen control is the clean run's: the same
    # initialisation and head draws, and the frozen heads never see the training labels
    rows = []
    for seed in seeds:
        result, probes = probed(config, retraining_spec(config, seed))
        frozen = cached_frozen(spec(config, seed=seed))["history"].set_index("epoch")
        last = frozen.loc[result["epochs_trained"]]
        for row in layer_rows(result, probes, model=config.model, seed=seed):
            rows.append({**row, "frozen_acc": last[f"rlp_{row['layer']}"],
                         "fit_epoch": result["fit_epoch"],
                         "epochs_trained": result["epochs_trained"],
                         "noisy_fit": result["noisy_fit"]})
    out["retraining"] = pd.DataFrame(rows)

    # 2. temporal evolution of the default model, beside the frozen heads' own progress
    out["history"] = first["history"]
    out["frozen_history"] = cached_frozen(spec(config))["history"]
    out["frozen_histories"] = pd.concat(
        [cached_frozen(spec(config, seed=seed))["history"].assign(seed=seed) for seed in seeds],
        ignore_index=True)
    # the post-hoc probes' time course of the deepest layer (trained minus frozen, per probe)
    out["probe_curves"] = pd.concat(
        [probe_curve(probed(config, spec(config, seed=seed))[1], layers[-1]).assign(seed=seed)
         for seed in seeds], ignore_index=True)

    # 3. standard regularizers, one at a time
    rows = [final_row(*probed(config, spec(config, seed=seed)), regularizer="none",
                      strength=0.0, seed=seed) for seed in seeds]
    for kind, values in regularizer_grid(config):
        for v in values:
            for seed in seeds:
                rows.append(final_row(*probed(config, swept(config, seed=seed, **{kind: v})),
                                      regularizer=kind, strength=v, seed=seed))
    out["regularizers"] = pd.DataFrame(rows)

    # 4. the RLP regularizer: λ sweep, last layer only vs all probed layers
    # (and every run's history: the claims read each seed's curves)
    rows, lrows, histories = [], [], []
    for where in REGULARIZED:
        for lam in lambda_grid(config, where):
            for seed in seeds:
                result, probes = probed(config, spec(config, seed=seed) if lam == 0 else
                                        swept(config, lam=lam, regularize=where, seed=seed))
                rows.append(final_row(result, probes, regularize=where, lam=lam, seed=seed))
                lrows += layer_rows(result, probes, regularize=where, lam=lam, seed=seed)
                histories.append(result["history"].assign(regularize=where, lam=lam,
                                                          seed=seed))
    out["lambda_sweep"], out["lambda_layers"] = pd.DataFrame(rows), pd.DataFrame(lrows)
    out["histories"] = pd.concat(histories, ignore_index=True)
    best = best_lambda(out["lambda_sweep"])
    out["best_lambda"] = best
    compute_missing(planned_runs(config, best), config.parallel_runs, "rlp sampling runs")

    # 5. sampling, at `sampling_noise`: dataset fraction x {0, best λ}; long tail x {0, best λ}
    out["fractions"] = out["long_tail"] = None
    if config.sampling_experiment:
        out["fractions"], out["long_tail"] = sampling(config, best)

    # 6. label noise x λ, over seeds
    rows = []
    for rate in config.noise_rates:
        for lam in (0.0, *config.noise_lambdas):
            for seed in seeds:
                result = cached_run(noise_spec(config, rate, lam, seed))
                rows.append(final_row(result, noise=rate, lam=lam, seed=seed,
                                      noisy_fit=result["noisy_fit"],
                                      clean_train_acc=result["history"]["clean_train_acc"].iloc[-1]))
    out["noise"] = pd.DataFrame(rows)
    return out


def sampling(config: Config, best: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sampling experiment's tables: test accuracy per training-set fraction and λ, and
    per class of the long-tailed subset and λ."""
    rows = []
    seeds = config.seeds
    for fraction in config.fractions:
        for lam in (0.0, best):
            for seed in seeds:
                result = cached_run(sampling_spec(config, fraction=fraction, lam=lam,
                                                  seed=seed))
                rows.append(final_row(result, fraction=fraction, lam=lam, seed=seed,
                                      n_train=sum(result["class_counts"])))
    fractions = pd.DataFrame(rows)
    rows = []
    for lam in (0.0, best):
        for seed in seeds:
            result = cached_run(sampling_spec(config, long_tail_ratio=config.long_tail_ratio,
                                              lam=lam, seed=seed))
            for c, (acc, count) in enumerate(zip(result["class_acc"], result["class_counts"],
                                                 strict=True)):
                rows.append({"lam": lam, "seed": seed, "class": c, "train_count": count,
                             "test_acc": acc})
    return fractions, pd.DataFrame(rows)


def best_lambda(sweep: pd.DataFrame) -> float:
    """The λ > 0 with the highest mean validation accuracy over seeds (held-out training-split
    samples, never the test set), last-layer regularization."""
    last = sweep[(sweep["regularize"] == "last") & (sweep["lam"] > 0)]
    return float(last.groupby("lam")["val_acc"].mean().idxmax())

