"""Study 4's experiment: every run it plans, and the tables of every run assembled."""

from __future__ import annotations

import pandas as pd

from memlib.runs import compute_missing
from memlib.studies.probes.config import TASKS, UNTRAINED, Config
from memlib.studies.probes.distilbert import distilbert_case_study
from memlib.studies.probes.method import fold
from memlib.studies.probes.runs import (
    _difficulty,
    _heatmap,
    _task_results,
    cached_difficulty,
    cached_heatmap,
    cached_standin,
    cached_task,
    choose_pairs,
    standin_tables,
)


def run(config: Config) -> dict:
    """Every experiment of the study; tidy DataFrames (accuracies in %).

    Each dataset goes by the name of the data it used (resolved as the config is built:
    "mnist-5k" when the MNIST IDX files are absent), in every table, cache key and figure."""
    prefetch_runs(config)
    datasets = list(config.datasets)
    difficulty, pairs, baseline, sweeps, nulls, heatmaps, heatmap_runs = [], [], [], [], [], [], []
    for dataset in datasets:
        distance = _difficulty(dataset, config)
        difficulty.append(distance)
        matrix = distance.pivot(index="a", columns="b", values="distance").to_numpy()
        chosen = choose_pairs(matrix, dataset, config.pair_choice)
        for task in TASKS:
            pair = chosen[task]
            pairs.append({"dataset": dataset, "task": task, "a": pair[0], "b": pair[1],
                          "distance": matrix[pair]})
            result = _task_results(dataset, task, pair, config)
            baseline.append(result["baseline"])
            sweeps.append(result["sweep"])
            nulls.append(result["nulls"])
        heatmap, per_run = _heatmap(dataset, distance, config)
        heatmaps.append(heatmap)
        heatmap_runs.append(per_run)
    baseline_df = pd.concat(baseline, ignore_index=True)
    baseline_df["trained"] = baseline_df["acc"] > UNTRAINED
    trained = baseline_df[["dataset", "task", "run", "trained"]]
    sweep_df = pd.concat(sweeps, ignore_index=True).merge(trained, how="left")
    null_df = pd.concat(nulls, ignore_index=True).merge(trained, how="left")
    sweep_df["acc"] = fold(sweep_df["acc"].to_numpy(), config.fold_below_chance)
    null_df["acc"] = fold(null_df["acc"].to_numpy(), config.fold_below_chance)

    standin = standin_tables(config)
    distilbert, distilbert_status = distilbert_case_study(config)
    return {"datasets": datasets, "difficulty": pd.concat(difficulty, ignore_index=True),
            "pairs": pd.DataFrame(pairs), "baseline": baseline_df,
            "sweep": sweep_df, "nulls": null_df,
            "heatmap": pd.concat(heatmaps, ignore_index=True),
            "heatmap_runs": pd.concat(heatmap_runs, ignore_index=True),
            "standin": standin, "distilbert": distilbert, "distilbert_status": distilbert_status}


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) calls that together make every cached result of `run`,
    independent of each other, in an order that keeps two workers busy to the end at the
    small scale (cold: a task's training and probes 36-75 s, a dataset's heatmaps 47-56 s,
    each ViT stand-in, one per stand-in seed, 77 s). With pairs chosen by SSIM distance
    the tasks need the distances first: they are computed here when missing."""

    tasks = []
    for dataset in config.datasets:
        matrix = None
        if config.pair_choice != "authors":
            matrix = _difficulty(dataset, config).pivot(index="a", columns="b",
                                                        values="distance").to_numpy()
        chosen = choose_pairs(matrix, dataset, config.pair_choice)
        tasks += [(cached_task, (dataset, task, chosen[task], config)) for task in TASKS]
    standins = [(cached_standin, (seed, config)) for seed in config.standin_seeds]
    return [*standins, *tasks,
            *[(cached_heatmap, (dataset, config)) for dataset in config.datasets]]


def prefetch_runs(config: Config) -> None:
    """Compute the planned runs missing from the cache `config.parallel_runs` at a time, in
    worker processes (one CPU thread each; nothing under torchrun), for `run` to load: the
    SSIM distances first where the pairs are chosen by them."""
    from memlib.parallel import can_prefetch

    if not can_prefetch(config.parallel_runs):
        return
    if config.pair_choice != "authors":
        compute_missing([(cached_difficulty, (name, config))
                         for name in config.datasets], config.parallel_runs, "probes SSIM")
    compute_missing(planned_runs(config), config.parallel_runs, "probes runs")
