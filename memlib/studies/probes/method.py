"""The paper's five probes as pure functions, and their evaluation on many variants at once.

Every probe here is a pure function of one tensor (plus a generator where it is random).
A model is never modified: probed parameter dicts are evaluated with
`torch.func.functional_call`, many variants at once through `torch.func.vmap`. The task
difficulty of a class pair (mean 1 - SSIM of its images) is here too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from memlib.seed import generator

MODES = ("smallest", "largest", "random")
NULL_MODELS = ("A", "B", "C", "D", "E", "F", "G")


# --- probes on one tensor ----------------------------------------------------------------


def count(fraction: float, n: int) -> int:
    """floor(fraction * n), robust to 0.7 * 10 = 6.9999..."""
    return min(n, int(math.floor(fraction * n + 1e-9)))


def magnitude_order(w: Tensor) -> Tensor:
    """Flat indices of `w` by increasing |w| (stable: ties keep their position order)."""
    return torch.sort(w.detach().abs().flatten(), stable=True).indices


def select(w: Tensor, k: int, mode: str = "smallest", gen: torch.Generator | None = None,
           order: Tensor | None = None) -> Tensor:
    """Boolean mask (shape of `w`) of `k` entries: smallest or largest |w|, or random.
    `order` = magnitude_order(w) may be passed to avoid sorting again in a sweep."""
    n = w.numel()
    if mode == "random":
        chosen = torch.randperm(n, generator=gen)[:k]
    elif mode in ("smallest", "largest"):
        order = magnitude_order(w) if order is None else order
        chosen = order[:k] if mode == "smallest" else order[n - k:]
    else:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    mask = torch.zeros(n, dtype=torch.bool)
    mask[chosen] = True
    return mask.view(w.shape)


def prune(w: Tensor, fraction: float, mode: str = "smallest",
          gen: torch.Generator | None = None, order: Tensor | None = None) -> Tensor:
    """Prune `fraction` p of the entries: keep the floor((1 - p) N) largest |w| ("smallest"
    removes the small ones), or the smallest ("largest"), or random ones; the rest become 0."""
    n = w.numel()
    return w.masked_fill(select(w, n - count(1 - fraction, n), mode, gen, order), 0.0)


def binarize(w: Tensor, scaled: bool = False) -> Tensor:
    """sign(w): the paper's probe, zeros stay zero (ternary after pruning). `scaled`
    (ours, not the paper's) multiplies by alpha = mean |w| over the non-zero entries."""
    signs = torch.sign(w)
    if not scaled:
        return signs
    nonzero = w != 0
    alpha = w.abs()[nonzero].mean() if nonzero.any() else w.new_zeros(())
    return alpha * signs


def uniform_noise(w: Tensor, amplitude: float, gen: torch.Generator | None = None) -> Tensor:
    """w + U(-a, a) on the non-zero entries (pruned entries stay pruned); `a` is absolute."""
    noise = (torch.rand(w.shape, generator=gen, dtype=w.dtype) * 2 - 1) * amplitude
    return w + noise * (w != 0)


def gaussian_noise(w: Tensor, sigma: float, gen: torch.Generator | None = None) -> Tensor:
    """w + N(0, sigma^2) on every entry (the transformer case study's noise probe)."""
    return w + torch.randn(w.shape, generator=gen, dtype=w.dtype) * sigma


def flip(w: Tensor, fraction: float, mode: str = "smallest",
         gen: torch.Generator | None = None, order: Tensor | None = None) -> Tensor:
    """Negate floor(q N) entries: those of smallest or largest |w|, or random ones."""
    return torch.where(select(w, count(fraction, w.numel()), mode, gen, order), -w, w)


def as_matrix(w: Tensor) -> Tensor:
    """A 2-D view for the graph probes: rows are output units (conv kernels flattened)."""
    if w.ndim == 2:
        return w
    if w.ndim > 2 and w.shape[0] == 1:  # e.g. a (1, tokens, dim) position embedding
        return w.reshape(-1, w.shape[-1])
    return w.reshape(w.shape[0], -1)


def permute_within(w: Tensor, groups: Tensor, gen: torch.Generator | None = None) -> Tensor:
    """Shuffle the non-zero entries of `w` among the non-zero positions of the same group.

    One sort by random keys, then a stable sort by group, gives every group's values in
    random order; a stable sort of the positions by group gives its slots in order.
    """
    flat, g = w.flatten(), groups.flatten()
    positions = torch.nonzero(flat).flatten()
    g = g[positions]
    shuffled = torch.randperm(len(positions), generator=gen)
    values_order = shuffled[torch.sort(g[shuffled], stable=True).indices]
    slots_order = torch.sort(g, stable=True).indices
    out = flat.clone()
    out[positions[slots_order]] = flat[positions[values_order]]
    return out.view(w.shape)


def curveball(w: Tensor, trades: int, gen: torch.Generator | None = None) -> Tensor:
    """Null model G: Curveball rewiring of the positive and the negative sub-graph of `w`
    (rows x cols), keeping every row's and column's number of positive and of negative edges
    exact and the two sub-graphs disjoint.

    A trade picks two rows and the columns where their signs differ. Each such column holds
    an unordered pair of states ({+,-}, {+,0} or {-,0}); within each kind the trade reshuffles
    which row holds which state, keeping how many each row holds. Positive and negative
    edges are thus rewired at once: rewiring them one after the other could put a positive
    and a negative edge on the same position, and on a dense layer (no zeros) could not move
    at all. Each row keeps its multiset of weights: they travel with their row, within sign.
    """
    signs, values = torch.sign(w).to(torch.int8), w.clone()
    rows = w.shape[0]
    if rows < 2:
        return values
    for _ in range(trades):
        i, k = torch.randperm(rows, generator=gen)[:2].tolist()
        columns = torch.nonzero(signs[i] != signs[k]).flatten()
        if len(columns) < 2:
            continue
        old_i, old_k = signs[i, columns], signs[k, columns]
        kind = old_i + old_k  # 0: {+,-}, 1: {+,0}, -1: {-,0}; the other state is kind - state
        new_i = old_i.clone()
        for value, high in ((0, 1), (1, 1), (-1, 0)):
            members = torch.nonzero(kind == value).flatten()
            if len(members) < 2:
                continue
            shuffled = members[torch.randperm(len(members), generator=gen)]
            n_high = int((old_i[members] == high).sum())
            new_i[shuffled[:n_high]] = high
            new_i[shuffled[n_high:]] = value - high
        new_k = kind - new_i
        for row, old, new in ((i, old_i, new_i), (k, old_k, new_k)):
            moved = values[row, columns]
            values[row, columns] = 0.0
            for sign in (1, -1):
                values[row, columns[new == sign]] = moved[old == sign]
            signs[row, columns] = new
    return values


def rewire(w: Tensor, trades_per_row: int = 5, gen: torch.Generator | None = None) -> Tensor:
    """Null model G on any weight tensor (rows: output units), `trades_per_row` x rows trades."""
    m = as_matrix(w)
    return curveball(m, trades_per_row * m.shape[0], gen).view(w.shape)


def null_model(w: Tensor, kind: str, gen: torch.Generator | None = None,
               trades_per_row: int = 5) -> Tensor:
    """Randomization null models A-G of a weight matrix (rows: output units, columns: inputs).

    A: all non-zero weights permuted; B: positives among positive positions, negatives
    among negative ones; C/D: per input (column) / output (row) node; E/F: as C/D within
    positive and within negative edges; G: degree-preserving rewiring (`rewire`).
    Zeros stay in place for A-F.
    """
    if kind == "G":
        return rewire(w, trades_per_row, gen)
    m = as_matrix(w)
    rows = torch.arange(m.shape[0]).unsqueeze(1).expand_as(m)
    cols = torch.arange(m.shape[1]).unsqueeze(0).expand_as(m)
    positive = (m > 0).long()
    groups = {"A": torch.zeros_like(rows), "B": positive, "C": cols, "D": rows,
              "E": cols * 2 + positive, "F": rows * 2 + positive}
    if kind not in groups:
        raise ValueError(f"unknown null model {kind!r}; choose one of: {', '.join(NULL_MODELS)}")
    return permute_within(m, groups[kind], gen).view(w.shape)


# --- applying probes to parameter dicts and evaluating many variants at once -------------


def detached_params(model: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach() for k, v in model.named_parameters()}


def mlp_layers(model: nn.Module) -> list[tuple[str, str | None]]:
    """(weight name, bias name or None) for each linear layer of a memlib MLP, input first."""
    return [(f"{n}.weight", f"{n}.bias" if m.bias is not None else None)
            for n, m in model.linear_layers()]


def apply_probe(params: dict[str, Tensor], names: Sequence[str],
                probe: Callable[[Tensor], Tensor]) -> dict[str, Tensor]:
    """A new parameter dict with `probe` applied to each named tensor separately."""
    return {k: probe(v) if k in names else v for k, v in params.items()}


def stack(variants: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    return {k: torch.stack([v[k] for v in variants]) for k in variants[0]}


@torch.no_grad()
def accuracy_of_variants(model: nn.Module,
                         variants: Sequence[dict[str, Tensor]] | Callable[[], Sequence[dict]],
                         x: Tensor, y: Tensor, batch_size: int = 500,
                         chunk: int = 128) -> Tensor:
    """Test accuracy (%) of each parameter variant, evaluated batched via vmap.

    `variants` is a list of parameter dicts, or a function returning one that is called
    anew for every evaluation batch (noise probes are redrawn per batch).
    """
    was_training = model.training
    model.eval()
    def chunks(dicts):
        return [stack(dicts[c:c + chunk]) for c in range(0, len(dicts), chunk)]

    fixed = None if callable(variants) else chunks(variants)
    correct = None
    for start in range(0, len(y), batch_size):
        xb, yb = x[start:start + batch_size], y[start:start + batch_size]
        hits = []
        for stacked in fixed if fixed is not None else chunks(variants()):
            logits = vmap(lambda p, xb=xb: functional_call(model, p, (xb,)))(stacked)
            hits.append((logits.argmax(-1) == yb).sum(1))
        hits = torch.cat(hits).double()
        correct = hits if correct is None else correct + hits
    model.train(was_training)
    return 100.0 * correct / len(y)


def fold(acc, enabled: bool):
    """Binary-task accuracy below chance reported as 100 - acc (the authors' convention)."""
    if not enabled:
        return acc
    return np.maximum(acc, 100.0 - np.asarray(acc))


# --- the Fig. 1 probes --------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeSpec:
    probe: str  # prune, flip, noise, float
    mode: str  # smallest/largest/random ("-" for noise)
    level: float  # fraction p or q, or noise amplitude a
    form: str  # float, signed, scaled (scaled = alpha sign(W), ours)


def _form(w: Tensor, form: str) -> Tensor:
    return w if form == "float" else binarize(w, scaled=form == "scaled")


def probe_params(params: dict[str, Tensor], names: Sequence[str], spec: ProbeSpec,
                 gen: torch.Generator | None = None,
                 orders: dict[str, Tensor] | None = None) -> dict[str, Tensor]:
    """One Fig. 1 probe applied to every named tensor (weights and biases), layer by layer.
    `orders` maps names to magnitude_order(tensor), computed once per sweep."""
    orders = orders or {}
    if spec.probe == "prune":
        def probe(name, w):
            return _form(prune(w, spec.level, spec.mode, gen, orders.get(name)), spec.form)
    elif spec.probe == "flip":
        def probe(name, w):
            return _form(flip(w, spec.level, spec.mode, gen, orders.get(name)), spec.form)
    elif spec.probe == "noise":
        def probe(name, w):
            return _form(uniform_noise(w, spec.level, gen), spec.form)
    else:
        raise ValueError(f"unknown probe {spec.probe!r}")
    return {k: probe(k, v) if k in names else v for k, v in params.items()}


def sweep(model: nn.Module, params: dict[str, Tensor], x: Tensor, y: Tensor,
          specs: Sequence[ProbeSpec], seed: int = 0, batch_size: int = 500) -> pd.DataFrame:
    """Accuracy (%) of every probe spec on (x, y): static probes in one batched pass, noise
    probes redrawn for every evaluation batch."""
    gen = generator(seed)
    names = [n for pair in mlp_layers(model) for n in pair if n is not None]
    static = [s for s in specs if s.probe != "noise"]
    noisy = [s for s in specs if s.probe == "noise"]
    orders = {n: magnitude_order(params[n]) for n in names}
    acc = {}
    if static:
        variants = [probe_params(params, names, s, gen, orders) for s in static]
        acc.update(zip(static, accuracy_of_variants(model, variants, x, y, batch_size).tolist(),
                       strict=True))
    if noisy:
        def draw():
            return [probe_params(params, names, s, gen) for s in noisy]
        acc.update(zip(noisy, accuracy_of_variants(model, draw, x, y, batch_size).tolist(),
                       strict=True))
    return pd.DataFrame([{"probe": s.probe, "mode": s.mode, "level": s.level, "form": s.form,
                          "acc": acc[s]} for s in specs])


def null_sweep(model: nn.Module, params: dict[str, Tensor], x: Tensor, y: Tensor,
               kinds: Sequence[str], prune_levels: Sequence[float], draws: int,
               seed: int = 0, trades_per_row: int = 5, batch_size: int = 500
               ) -> pd.DataFrame:
    """Accuracy (%) of null models on the weights (biases untouched) after pruning p."""
    gen = generator(seed)
    weights = [w for w, _ in mlp_layers(model)]
    rows, variants = [], []
    for p in prune_levels:
        pruned = apply_probe(params, weights, lambda w, p=p: prune(w, p))
        for kind in kinds:
            for draw in range(draws):
                variants.append(apply_probe(
                    pruned, weights, lambda w, kind=kind: null_model(w, kind, gen, trades_per_row)))
                rows.append({"null": kind, "prune": p, "draw": draw})
    acc = accuracy_of_variants(model, variants, x, y, batch_size)
    return pd.DataFrame(rows).assign(acc=acc.numpy())


# --- task difficulty -----------------------------------------------------------------------


def ssim_distance(images_a: np.ndarray, images_b: np.ndarray) -> float:
    """Mean of 1 - SSIM over aligned image pairs (skimage defaults, data range of [-1, 1])."""
    from skimage.metrics import structural_similarity

    return float(np.mean([1 - structural_similarity(a, b, data_range=2.0)
                          for a, b in zip(images_a, images_b, strict=True)]))


def difficulty_matrix(x: Tensor, y: Tensor, num_classes: int, pairs: int,
                      seed: int = 0) -> np.ndarray:
    """d(A, B): mean 1 - SSIM over `pairs` random (A image, B image) pairs, symmetrized.
    Small distance = similar classes = hard task."""
    rng = np.random.default_rng(seed)
    images = x.squeeze(1).double().numpy()
    members = [np.flatnonzero(y.numpy() == c) for c in range(num_classes)]
    d = np.zeros((num_classes, num_classes))
    for a, b in itertools.product(range(num_classes), repeat=2):
        ia, ib = rng.choice(members[a], pairs), rng.choice(members[b], pairs)
        d[a, b] = ssim_distance(images[ia], images[ib])
    return (d + d.T) / 2


# --- one matrix of a large model probed at a time -----------------------------------------


def probe_parameter(model: nn.Module, name: str, transform: Callable[[Tensor], Tensor],
                    metric: Callable[[Callable], float]) -> float:
    """metric(forward) with one parameter replaced by transform(parameter), on a copy.

    `forward(*args, **kwargs)` runs the model through functional_call with the probed dict.
    """
    params = detached_params(model)
    if name not in params:
        raise ValueError(f"unknown parameter {name!r}; e.g. {', '.join(list(params)[:8])}")
    params[name] = transform(params[name])

    def forward(*args, **kwargs):
        return functional_call(model, params, args, kwargs)

    with torch.no_grad():
        return float(metric(forward))


def accuracy_metric(x: Tensor, y: Tensor, batch_size: int = 500) -> Callable[[Callable], float]:
    def metric(forward):
        correct = sum((forward(x[s:s + batch_size]).argmax(-1) == y[s:s + batch_size]).sum()
                      for s in range(0, len(y), batch_size))
        return 100.0 * float(correct) / len(y)
    return metric
