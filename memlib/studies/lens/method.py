"""The lens's method: the classic per-example scores from the margins over training (AUM,
forgetting events, the epoch learned), every score of an example in one table, each probed
layer's binarization and null-model probes, and how the oriented scores agree and find the
corrupted labels."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from memlib.seed import generator
from memlib.studies import fisher, probes

__all__ = ["SCORES", "AGREEMENT_SCORES", "aum", "forgetting_counts", "learned_epoch",
           "example_scores", "layer_weights", "layer_probes", "oriented", "agreement",
           "corruption_auroc", "PRUNED"]


# name -> (column of the per-example table, sign): a higher sign * value means "looks
# memorized", i.e. more likely a corrupted label
SCORES = {
    "Fisher LOO (exact)": ("delta_exact", 1),
    "Fisher LOO (first order)": ("delta_first", 1),
    "final loss": ("final_loss", 1),
    "AUM": ("aum", -1),
    "forgetting events": ("forgetting", 1),
    "epoch learned": ("learned_epoch", 1),
    "random-label confidence": ("rlp_confidence", 1),
}
# one score per lens for the agreement claim (the first-order attribution approximates the
# exact one and would count study 3 twice)
AGREEMENT_SCORES = ("Fisher LOO (exact)", "final loss", "AUM", "forgetting events",
                    "epoch learned", "random-label confidence")


PRUNED = 0.5  # the fraction of a layer's weights the pruning probe sets to zero


def aum(margins: torch.Tensor) -> torch.Tensor:
    """Area under the margin: each example's margin (rows: epochs 0..T) averaged over epochs
    1..T, as study 3 computes it (Pleiss et al. 2020)."""
    return margins[1:].double().mean(0)


def forgetting_counts(margins: torch.Tensor) -> torch.Tensor:
    """Forgetting events (Toneva et al. 2019): epochs t >= 2 at which an example predicted
    correctly (margin > 0) at epoch t - 1 is not any more (the untrained network's guesses at
    epoch 0 are not learning). An example never predicted correctly after epoch 0 counts as
    forgotten more often than any other (T + 1), as in the paper."""
    correct = margins[1:] > 0
    events = (correct[:-1] & ~correct[1:]).sum(0).double()
    return torch.where(correct.any(0), events, float(len(margins)))


def learned_epoch(margins: torch.Tensor) -> torch.Tensor:
    """The epoch from which each example's label stays predicted to the end of training
    (T + 1 if it is not predicted at the end): study 2's learning order, per example."""
    correct = margins > 0
    epochs = len(margins)
    wrong = torch.where(~correct, torch.arange(epochs)[:, None], -1)  # epochs it was wrong
    return (wrong.amax(0) + 1).double()


def example_scores(watched: dict, exact: bool, device: str = "cpu") -> pd.DataFrame:
    """Every scatter example's scores (columns of SCORES) from what `lens_run` stored of it
    ("watched"); the exact LOO (if `exact`) and the head's softmax computed on `device`,
    the run's, where the head's logits were computed."""
    labels, m = watched["labels"], watched["margins"]
    lam, z = fisher.decompose(watched["h"], watched["z"], labels)
    # the heads' mean probability of their own random label ((B, K) labels, (B, K, n) logits)
    random = watched["random"].to(device)[..., None]
    confidence = (watched["head_logits"].to(device).softmax(-1).gather(-1, random)[..., 0]
                  .mean(-1).cpu())
    return pd.DataFrame({
        "position": watched["position"].numpy(), "flipped": watched["flipped"].numpy(),
        "delta_exact": fisher.loo_exact(lam, z, device=device).numpy() if exact else math.nan,
        "delta_first": fisher.loo_first_order(lam, z).numpy(),
        "final_loss": F.cross_entropy(watched["final_logits"].double(), labels,
                                      reduction="none").numpy(),
        "aum": aum(m).numpy(), "forgetting": forgetting_counts(m).numpy(),
        "learned_epoch": learned_epoch(m).numpy(),
        "rlp_confidence": confidence.double().numpy()})


def layer_weights(model: nn.Module, layers: Sequence[str]) -> dict[str, list[str]]:
    """The weight tensors (2-D and more; no biases or norms) that compute each probed layer:
    those of the modules after the previous probed layer, up to and inside this one. The
    model's own parameters (a ViT's class token and position embedding) belong to none."""
    order = {name: i for i, (name, _) in enumerate(model.named_modules())}
    ends = [max(order[n] for n in order if n == layer or n.startswith(layer + "."))
            for layer in layers]
    out: dict[str, list[str]] = {layer: [] for layer in layers}
    for name, p in model.named_parameters():
        owner = order[name.rpartition(".")[0]]
        layer = next((lay for lay, end in zip(layers, ends, strict=True) if owner <= end), None)
        if layer is not None and p.ndim >= 2 and owner > 0:
            out[layer].append(name)
    return out


def layer_probes(model: nn.Module, layers: Sequence[str], x: torch.Tensor, y: torch.Tensor,
                 draws: int, seed: int) -> pd.DataFrame:
    """Test accuracy (%) with one probed layer's weights binarized (the paper's sign(W), and
    alpha sign(W)), half of them pruned (the smallest magnitudes, "pruned") or shuffled
    within sign (null model B, median over `draws`), per layer (NaN for a layer without
    weights of its own, e.g. a pooling layer)."""
    gen = generator(seed)  # a CPU generator: probe CPU copies, evaluate on the model's device
    params = {k: v.cpu() for k, v in probes.detached_params(model).items()}
    weights = layer_weights(model, layers)
    variants, keys = [params], [("-", "float")]
    for layer in (lay for lay in layers if weights[lay]):
        names = weights[layer]
        variants += [probes.apply_probe(params, names, probes.binarize),
                     probes.apply_probe(params, names, lambda w: probes.binarize(w, True))]
        keys += [(layer, "sign"), (layer, "scaled_sign")]
        variants.append(probes.apply_probe(params, names, lambda w: probes.prune(w, PRUNED)))
        keys.append((layer, "pruned"))
        for _ in range(draws):
            variants.append(probes.apply_probe(params, names,
                                               lambda w: probes.null_model(w, "B", gen)))
            keys.append((layer, "null_b"))
    device = next(model.parameters()).device
    acc = probes.accuracy_of_variants(model, [{k: v.to(device) for k, v in p.items()}
                                              for p in variants], x, y).tolist()
    frame = pd.DataFrame(keys, columns=["layer", "probe"]).assign(acc=acc)
    table = frame[frame["layer"] != "-"].groupby(["layer", "probe"], sort=False)["acc"] \
        .median().unstack()
    table = table.reindex(list(layers)).reset_index()
    return table.assign(depth=range(1, len(layers) + 1), float=acc[0])


def oriented(examples: pd.DataFrame) -> pd.DataFrame:
    """The per-example scores, each signed so that higher means "looks memorized"."""
    return pd.DataFrame({name: sign * examples[col] for name, (col, sign) in SCORES.items()})


def agreement(examples: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Spearman correlation of every pair of oriented scores within each group of `by`
    (one run), in long form: by..., a, b, rho."""
    rows = []
    for key, group in examples.groupby(list(by)):
        scores = oriented(group).dropna(axis=1, how="all")
        rho = scores.corr(method="spearman")
        rows += [{**dict(zip(by, key, strict=True)), "a": a, "b": b, "rho": rho.loc[a, b]}
                 for a in rho.index for b in rho.columns]
    return pd.DataFrame(rows)


def corruption_auroc(examples: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Each oriented score's AUROC for "this label was corrupted" (nan without corruption)."""
    rows = []
    for key, group in examples.groupby(list(by)):
        flipped = group["flipped"].to_numpy(dtype=bool)
        for name, score in oriented(group).items():
            auroc = (math.nan if score.isna().all()
                     else fisher.ranking_metrics(score.to_numpy(), flipped)["auroc"])
            rows.append({**dict(zip(by, key, strict=True)), "score": name, "auroc": auroc})
    return pd.DataFrame(rows)
