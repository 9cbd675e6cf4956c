"""The lens's run: study 1's training run, watched every epoch by an observer that records
the margins, er, the fits and the deepest head, then scored per example and per layer; the
computation the cache keeps."""

from __future__ import annotations

import math

import pandas as pd
import torch
from torch import nn

from memlib import data as datasets
from memlib.config import check
from memlib.runs import computation
from memlib.studies import fisher, rlp
from memlib.studies.lens.config import LensRun
from memlib.studies.lens.method import example_scores, layer_probes

__all__ = ["scatter_positions", "observer", "lens_run", "cached_lens"]


def scatter_positions(s: rlp.RunSpec, clean: torch.Tensor, count: int | None) -> torch.Tensor:
    """Training positions scored and forming the gradient scatter: a class-stratified subset
    fixed by the data seed (the same examples at every noise rate and seed)."""
    if count is None or count >= len(clean):
        return torch.arange(len(clean))
    classes = len(clean.unique())
    check(count >= classes, f"scatter_samples={count} is fewer than the {classes} classes; the "
                            "scored examples are a class-stratified subset")
    return datasets.stratified_subset(clean.cpu(), count=count, seed=s.data_seed + 4)


def observer(r: LensRun):
    """`rlp.train_run`'s observe hook. Every epoch, each scatter example's margin; every
    `measure_every` epochs (and the last) er, keeping the features and logits of its peak,
    the fits of the clean and the corrupted labels, the deepest head's random-label accuracy
    and test accuracy. Everything is evaluated in eval mode without random draws: the
    training is study 1's, unchanged."""
    s = r.run

    def observe(model: nn.Module, heads: rlp.RLPHeads, d: dict, memo: dict):
        x, y = d["train"]
        pick = scatter_positions(s, d["clean_y"], r.scatter_samples).to(y.device)
        xs, ys = x[pick], y[pick].cpu()
        flipped, true = (y != d["clean_y"])[pick].cpu(), d["clean_y"][pick].cpu()
        random = d["random"][pick]
        deepest = heads.layers[-1]
        memo.update(margins=[], rows=[], best=-math.inf, pick=pick.cpu())

        def track(state) -> None:
            h, z = fisher.last_layer(model, s.model, xs)
            memo["margins"].append(fisher.margins(z, ys))
            last = state.stop or state.epoch == s.epochs  # the fit's stop, or the maximum
            if state.epoch % r.measure_every and not last:
                return
            predicted = z.argmax(1)
            feats = rlp.pooled_features(model, (xs, y[pick]), [deepest])[deepest]
            with torch.no_grad():
                head = heads.head(deepest)(feats)
            row = {"epoch": state.epoch,
                   "clean_fit": _mean(predicted[~flipped] == ys[~flipped]),
                   "noisy_fit": _mean(predicted[flipped] == ys[flipped]),
                   "noisy_true": _mean(predicted[flipped] == true[flipped]),
                   "rlp_deepest": _mean(head.argmax(1) == random),
                   "test_acc": rlp.measure(model, None, d["test"])["acc"],
                   "er": fisher.scatter_effective_rank(h, z, ys)}
            if state.epoch >= 1 and row["er"] > memo["best"]:  # epoch 0: inflated by the init
                memo.update(best=row["er"], peak_epoch=state.epoch, h=h, z=z)
            memo["rows"].append(row)
            if last:
                memo.update(final_logits=z, rlp_confidence=head.softmax(1)
                            .gather(1, random[:, None])[:, 0].cpu())

        return [track]

    return observe


def _mean(hits: torch.Tensor) -> float:
    return hits.float().mean().item() if hits.numel() else math.nan


def lens_run(r: LensRun) -> dict:
    """Study 1's training run `r.run`, watched (see `observer`); its per-example, per-layer
    and per-epoch tables."""
    result = rlp.train_run(r.run, observe=observer(r))
    memo, model, d = result["memo"], result["model"], result["data"]
    pick = memo["pick"]
    labels = d["y"].cpu()[pick]
    flipped = (d["y"] != d["clean_y"]).cpu()[pick]
    examples = example_scores(memo, labels, flipped, len(pick) <= r.exact_loo_max,
                              r.run.device)
    x_test, y_test = d["test"]
    layers = layer_probes(model, result["layers"], x_test, y_test, r.null_draws, r.run.seed)
    last = result["history"].iloc[-1]
    layers["rlp_acc"] = [last[f"rlp_{n}"] for n in result["layers"]]
    return {"history": result["history"], "curves": pd.DataFrame(memo["rows"]),
            "examples": examples, "layers": layers, "peak_epoch": memo["peak_epoch"],
            "noisy_fit": result["noisy_fit"], "chance": 1 / result["n_random"],
            "fit_epoch": result["fit_epoch"], "epochs_trained": result["epochs_trained"]}


@computation("lens_run", 1)
def cached_lens(r: LensRun) -> dict:
    return lens_run(r)
