"""The lens's experiment: the plan of its cached runs (the watched runs, study 1's
frozen-initialisation baselines, study 1's own training of the runs it shares with the lens
and the measures over the watched runs), `run(config)`, tidy tables over datasets, noise
rates and seeds, and the identity check: every lens run whose spec study 1's plan also
computes (with its registered computation, `rlp.cached_run`: the same key, hence the same
entry, whichever notebook computed it first) is compared with that entry, field by field and
bit for bit. The lens stores, per field, the digest of what study 1's computation would
have stored of its training (`runs.lens_run`); the check digests study 1's entry the same
way."""

from __future__ import annotations

import pandas as pd

from memlib.claims.register import seed_span
from memlib.prose import count_word, listing
from memlib.runs import compute_missing
from memlib.studies import rlp
from memlib.studies.lens.config import (
    Config,
    LensMeasures,
    LensRun,
    frozen_spec,
    lens_measures,
    study1_config,
)
from memlib.studies.lens.method import agreement, corruption_auroc
from memlib.studies.lens.runs import cached_lens, cached_measures, field_digests

__all__ = ["planned_runs", "run", "watch", "shared_runs", "differing_field", "identity",
           "identity_sentence"]


def _trainings(measures: list[LensMeasures], study1: rlp.Config) -> list[tuple]:
    """The watched runs, then the frozen-initialisation baselines they are compared with
    (study 1's)."""
    planned = [m.watched for m in measures]
    frozen = dict.fromkeys((rlp.cached_frozen, frozen_spec(r.run, study1)) for r in planned)
    return [(cached_lens, r) for r in planned] + list(frozen)


def _study1_trainings(shared: list[LensRun]) -> list[tuple]:
    """Study 1's own training of every watched run its plan shares with the lens: computed
    here when study 1 has not computed it yet (the same entry study 1 reads)."""
    return [(rlp.cached_run, r.run) for r in shared]


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) of every cached result of `run`: the trainings (study
    1's own of the runs it shares with the lens among them), then the measures over the
    watched runs (which read what the runs stored)."""
    measures = lens_measures(config)
    shared = shared_runs(config, [m.watched for m in measures])
    return (_trainings(measures, study1_config(config)) + _study1_trainings(shared)
            + [(cached_measures, m) for m in measures])


def run(config: Config) -> dict:
    """Every (dataset, noise, seed) run and its measures, cached; `parallel_runs` computed
    at once. Tidy tables with dataset, noise and seed columns, and the identity check of
    the runs study 1 shares ("identity": `identity`)."""
    measures = lens_measures(config)
    shared = shared_runs(config, [m.watched for m in measures])
    out = watch(measures, study1_config(config), config.parallel_runs,
                also=_study1_trainings(shared))
    return {**out, "identity": identity(shared)}


def watch(measures: list[LensMeasures], study1: rlp.Config, parallel_runs: int,
          also: list[tuple] = ()) -> dict:
    """The watched runs of `measures` and their measures, cached, `parallel_runs` computed at
    once, each compared with the frozen-initialisation baseline of `study1`'s settings
    (`frozen_spec`), and the calls in `also` computed with the trainings: tidy tables with
    dataset, noise and seed columns. The lens and `python -m memlib measure` (any model, any
    layers) both call it."""
    # the measures after every training: a worker would otherwise train a run a second time
    # for its measures while another worker still trains it
    compute_missing([*_trainings(measures, study1), *also], parallel_runs, "lens runs")
    compute_missing([(cached_measures, m) for m in measures], parallel_runs, "lens measures")
    planned, examples, layers, curves, summary = [], [], [], [], []
    for m in measures:
        r = m.watched
        s = r.run
        planned.append(r)
        label = {"dataset": s.dataset, "noise": s.noise, "seed": s.seed}
        result, scores = cached_lens(r), cached_measures(m)
        frozen_history = rlp.cached_frozen(frozen_spec(s, study1))["history"].set_index("epoch")
        # the heads on frozen features after as many epochs as the run trained
        baseline = frozen_history.loc[result["epochs_trained"]]
        examples.append(scores["examples"].assign(**label))
        layer = scores["layers"].assign(**label)
        layer["frozen_acc"] = [baseline[f"rlp_{n}"] for n in layer["layer"]]
        layer["excess"] = 100 * (layer["rlp_acc"] - layer["frozen_acc"])  # points
        layers.append(layer)
        curve = result["curves"].assign(**label)
        # the deepest head on frozen features at each epoch: what it learns by itself
        deepest = f"rlp_{result['layers'][-1]}"
        curve["frozen_deepest"] = frozen_history[deepest].reindex(curve["epoch"]).to_numpy()
        curves.append(curve)
        last = result["history"].iloc[-1]
        summary.append({**label, "train_acc": last["train_acc"], "test_acc": last["test_acc"],
                        "noisy_fit": result["noisy_fit"], "peak_epoch": result["peak_epoch"],
                        "epochs": result["epochs_trained"], "fit_epoch": result["fit_epoch"],
                        "chance": result["chance"]})
    examples = pd.concat(examples, ignore_index=True)
    by = ["dataset", "noise", "seed"]
    layers = pd.concat(layers, ignore_index=True)
    layers["drop_sign"] = layers["float"] - layers["sign"]
    layers["drop_scaled_sign"] = layers["float"] - layers["scaled_sign"]
    layers["gap_null_b"] = layers["float"] - layers["null_b"]
    layers["drop_pruned"] = layers["float"] - layers["pruned"]
    return {"runs": pd.DataFrame(summary), "examples": examples, "layers": layers,
            "curves": pd.concat(curves, ignore_index=True),
            "agreement": agreement(examples, by), "auroc": corruption_auroc(examples, by),
            "specs": planned}


def shared_runs(config: Config, runs: list[LensRun]) -> list[LensRun]:
    """The runs of `runs` that study 1's plan (`rlp.planned_runs` of the lens's `study1`)
    trains with its registered computation."""
    planned = {s for f, s in rlp.planned_runs(config.study1) if f is rlp.cached_run}
    return [r for r in runs if r.run in planned]


def differing_field(ours: dict[str, str], stored: dict) -> str | None:
    """The first field (in name order) whose digest in `ours` differs from that of the same
    field of study 1's stored result `stored`, or that only one of them holds; None when
    every field holds the same bits."""
    theirs = field_digests(stored)
    return next((name for name in sorted({*ours, *theirs})
                 if ours.get(name) != theirs.get(name)), None)


def identity(runs: list[LensRun]) -> pd.DataFrame:
    """Per shared run (dataset, noise, seed): how many fields study 1's entry stores, and the
    first that differs from the lens's training of it ("" when none does)."""
    rows = []
    for r in runs:
        stored = rlp.cached_run(r.run)
        differing = differing_field(cached_lens(r)["study1_bits"], stored)
        rows.append({"dataset": r.run.dataset, "noise": r.run.noise, "seed": r.run.seed,
                     "fields": len(stored), "differing": differing or ""})
    return pd.DataFrame(rows, columns=["dataset", "noise", "seed", "fields", "differing"])


def identity_sentence(table: pd.DataFrame, runs: int) -> str:
    """The identity check (`identity`'s table) in one or two sentences: how many of the
    lens's `runs` runs study 1 also trains, and whether each stores the same bits in every
    field, or which field of which run does not."""
    if table.empty:
        return (f"None of the lens's runs ({count_word(runs)} in all) is one that study 1 "
                "trains (their settings differ from every run of study 1's plan), so whether "
                "the lens watched study 1's own training is not checked in this run.")
    labels = listing(map(_labels, dict.fromkeys(table["noise"])))
    data = listing(dict.fromkeys(table["dataset"]))
    seeds = sorted({int(s) for s in table["seed"]})
    which = (f"{count_word(len(table))} of the lens's {count_word(runs)} runs ({data}, "
             f"{labels}, seed{'s' if len(seeds) > 1 else ''} {seed_span(seeds)})")
    bad = table[table["differing"] != ""]
    if bad.empty:
        return (f"Study 1 trains {which}. For each of them, every one of the "
                f"{count_word(int(table['fields'].min()))} fields study 1's stored result "
                "holds (its per-epoch history among them) has the same bits as the lens's "
                "training of that run: the lens watched study 1's own training, unchanged.")
    where = listing(f"{_labels(row.noise)}, seed {row.seed} (`{row.differing}`)"
                    for row in bad.itertuples())
    return (f"The identity check failed: study 1 trains {which}, and "
            f"{count_word(len(bad))} of them stored other bits than the lens's training of "
            f"them ({where}), so there the lens did not watch study 1's training unchanged.")


def _labels(noise: float) -> str:
    return "clean labels" if noise == 0 else f"{noise:.0%} noise"
