"""The lens's run: study 1's training run, watched every epoch by an observer that records
the margins, er, the fits and the deepest head, storing what the per-example scores and the
layer probes read (`lens_run`); and the measures over what it stored (`measure_run`): two
computations the cache keeps, so that editing a measure re-computes the measures alone."""

from __future__ import annotations

import hashlib
import math
import struct

import pandas as pd
import torch
from torch import nn

from memlib import data as datasets
from memlib.config import check
from memlib.runs import computation
from memlib.studies import fisher, rlp
from memlib.studies.lens.config import LensMeasures, LensRun
from memlib.studies.lens.method import example_scores, layer_probes

__all__ = ["scatter_positions", "observer", "OBSERVED", "study1_part", "field_digests",
           "stored_bits", "lens_run", "cached_lens", "trained_model", "measure_run",
           "cached_measures"]


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
    and test accuracy; at the last, the logits and the deepest head's logits. Everything is
    evaluated in eval mode without random draws: the training is study 1's, unchanged."""
    s = r.run

    def observe(model: nn.Module, heads: rlp.RLPHeads, d: dict, memo: dict):
        x, y = d["train"]
        pick = scatter_positions(s, d["clean_y"], r.scatter_samples).to(y.device)
        xs, ys = x[pick], y[pick].cpu()
        flipped, true = (y != d["clean_y"])[pick].cpu(), d["clean_y"][pick].cpu()
        random = d["randoms"][pick]  # (B, K): one column per head of the layer
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
            with torch.no_grad():  # (B, K, n_random): every head of the layer, as study 1 reads it
                head = heads.heads_of(deepest)(feats)
            row = {"epoch": state.epoch,
                   "clean_fit": _mean(predicted[~flipped] == ys[~flipped]),
                   "noisy_fit": _mean(predicted[flipped] == ys[flipped]),
                   "noisy_true": _mean(predicted[flipped] == true[flipped]),
                   "rlp_deepest": _mean(head.argmax(-1) == random),  # over heads and examples
                   # study 1's curve test set (its `curve_test_samples`), at every epoch
                   "test_acc": rlp.measure(model, None, d["test_curve"])["acc"],
                   "er": fisher.scatter_effective_rank(h, z, ys)}
            if state.epoch >= 1 and row["er"] > memo["best"]:  # epoch 0: inflated by the init
                memo.update(best=row["er"], peak_epoch=state.epoch, h=h, z=z)
            memo["rows"].append(row)
            if last:
                memo.update(final_logits=z, head_logits=head.cpu())

        return [track]

    return observe


def _mean(hits: torch.Tensor) -> float:
    return hits.float().mean().item() if hits.numel() else math.nan


# what `rlp.train_run` hands an observer besides its result, which study 1 does not store
OBSERVED = ("model", "heads", "data", "memo")


def study1_part(result: dict) -> dict:
    """What study 1's computation (`rlp.cached_run`) stores of a training run: `train_run`'s
    result without what it hands an observer."""
    return {k: v for k, v in result.items() if k not in OBSERVED}


def field_digests(stored: dict) -> dict[str, str]:
    """Per field, the SHA-256 of its bits (`stored_bits`): the same for a result computed
    here and for that result loaded from its cache entry."""
    return {k: hashlib.sha256(stored_bits(v)).hexdigest() for k, v in stored.items()}


def stored_bits(value) -> bytes:
    """Every leaf of `value` as its bits, in order: a tensor's dtype, shape and memory, a
    float's IEEE bytes (NaN's sign and payload included), any other leaf its type and repr;
    a table as its columns of plain values, read back as the cache reads a stored table (a
    table computed here and the same table loaded from an entry give the same bits). Not
    torch's serialisation itself: pickle shares one object met twice, and which objects are
    one depends on how the process built them, not on what they hold."""
    if isinstance(value, pd.DataFrame):
        loaded = pd.DataFrame({c: value[c].tolist() for c in value.columns})
        return b"P" + stored_bits({c: loaded[c].tolist() for c in loaded.columns})
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        return (f"T{t.dtype}{tuple(t.shape)}".encode()
                + t.reshape(-1).view(torch.uint8).numpy().tobytes())
    if isinstance(value, float):
        return b"F" + struct.pack("<d", value)
    if isinstance(value, dict):
        return b"D" + b"".join(stored_bits(k) + stored_bits(v) for k, v in value.items()) + b"E"
    if isinstance(value, (list, tuple)):
        return type(value).__name__[0].encode() + b"".join(map(stored_bits, value)) + b"E"
    return f"{type(value).__name__}:{value!r}".encode()


def lens_run(r: LensRun) -> dict:
    """Study 1's training run `r.run`, watched (see `observer`): its per-epoch tables, and
    what the measures read ("watched": per scatter example its position, label, whether the
    label was corrupted, random label, margin at every epoch, last-layer features and logits
    at the er peak, final logits and the deepest head's final logits; "weights": the trained
    model's state, for the layer probes), and per field the digest of what study 1's
    computation would store of this training ("study1_bits", the identity check's): about
    4 MB at the small scale (1,000 examples, a 6x256 MLP, 150 epochs), 26 MB at the full one
    (5,000 of CIFAR-100, a WRN-16-4, 200)."""
    result = rlp.train_run(r.run, observe=observer(r))
    memo, model, d = result["memo"], result["model"], result["data"]
    pick = memo["pick"]
    watched = {"position": pick, "labels": d["y"].cpu()[pick],
               "flipped": (d["y"] != d["clean_y"]).cpu()[pick],
               "random": d["randoms"].cpu()[pick], "margins": torch.stack(memo["margins"]),
               **{k: memo[k] for k in ("h", "z", "final_logits", "head_logits")}}
    return {"history": result["history"], "curves": pd.DataFrame(memo["rows"]),
            "layers": result["layers"], "watched": watched,
            "weights": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            "peak_epoch": memo["peak_epoch"], "noisy_fit": result["noisy_fit"],
            "chance": 1 / result["n_random"], "fit_epoch": result["fit_epoch"],
            "epochs_trained": result["epochs_trained"],
            "study1_bits": field_digests(study1_part(result))}


@computation("lens_run", 1)
def cached_lens(r: LensRun) -> dict:
    return lens_run(r)


def trained_model(s: rlp.RunSpec, result: dict, d: dict) -> nn.Module:
    """The model `lens_run` trained, built as study 1 builds it and given its stored state,
    on the run's device."""
    model, _ = rlp.make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.load_state_dict(result["weights"])
    return model.to(d["device"])


def measure_run(m: LensMeasures, result: dict) -> dict:
    """The measures of a watched run from what `lens_run` stored: per example every score
    ("examples"; the exact LOO up to `exact_loo_max` examples), per probed layer the
    binarization and null-model probes on the run's curve test set (study 1's
    `curve_test_samples`: each probe is a pass over it) and the random-label head's final
    accuracy ("layers")."""
    s = m.watched.run
    watched = result["watched"]
    examples = example_scores(watched, len(watched["position"]) <= m.exact_loo_max, s.device)
    d = rlp.load_data(s)
    x_test, y_test = d["test_curve"]
    layers = layer_probes(trained_model(s, result, d), result["layers"], x_test, y_test,
                          m.null_draws, s.seed)
    last = result["history"].iloc[-1]
    layers["rlp_acc"] = [last[f"rlp_{n}"] for n in result["layers"]]
    return {"examples": examples, "layers": layers}


def _measures_key(m: LensMeasures) -> dict:
    """The measures' key: the watched run's own key (what stored their inputs), their
    settings, the device and the Fisher kernel's backend there (the exact LOO's solver)."""
    device = m.watched.run.device
    return {"run": cached_lens.key(m.watched), "exact_loo_max": m.exact_loo_max,
            "null_draws": m.null_draws, "device": device,
            "fisher_kernel": fisher.kernel_backend(device)}


@computation("lens_measures", 1, spec=_measures_key)
def cached_measures(m: LensMeasures) -> dict:
    return measure_run(m, cached_lens(m.watched))
