"""Task complexity probes (Jankowski, Radicchi, Serrano, Boguñá, Fortunato, arXiv 2508.05463).

An MLP layer is a signed, weighted bipartite graph. Five data-agnostic probes act on copies
of its weights, layer by layer: pruning, binarization (sign), uniform noise, sign flips and
randomization null models A-G. The gap between full-precision and signed/randomized accuracy
measures how hard the task is.

Every probe here is a pure function of one tensor (plus a generator where it is random).
A model is never modified: probed parameter dicts are evaluated with
`torch.func.functional_call`, many variants at once through `torch.func.vmap`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from memlib import paths
from memlib import train as training
from memlib.claims import (
    LEVEL,
    Cases,
    Claim,
    Estimate,
    all_of,
    correlation,
    declare,
    fisher_z,
    margin,
    paired,
)
from memlib.config import (
    SEED_MAX,
    AtMost,
    Distinct,
    NonEmpty,
    NonNegative,
    Positive,
    Range,
    Rate,
    check,
    check_fields,
    check_stratified,
)
from memlib.data import NUM_CLASSES
from memlib.runs import TRAINING, compute_missing, inline
from memlib.seed import generator

DATASETS = ("fashion_mnist", "mnist")
TASKS = ("easy", "hard")
# The authors' pairs: "hard" is the most similar pair (smallest 1 - SSIM distance).
AUTHORS_PAIRS = {"fashion_mnist": {"easy": (3, 2), "hard": (3, 1)},
                 "mnist": {"easy": (0, 7), "hard": (7, 9)}}
# Without the MNIST IDX files, "mnist" runs on the bundled 5,000 digits (memlib.data.resolve):
# results carry that name; its claims keep the ids of MNIST and say "data=mnist-5k".
MNIST_5K = "mnist-5k"
AUTHORS_PAIRS[MNIST_5K] = AUTHORS_PAIRS["mnist"]
# A binary model whose unprobed test accuracy is at most this never trained (chance is 50%):
# it predicts one class, at chance with or without a probe. Without a learning-rate warmup,
# Adam at lr 0.01 on inputs in [-1, 1] kills every ReLU of some runs in their first steps
# (`Config.warmup_steps`). Every run enters every statistic; the claims' preconditions fail
# when a run is at chance.
UNTRAINED = 60.0
MNIST_PER_CLASS = 6000  # training images per class of the full MNIST (60,000 / 10)
MNIST_5K_PER_CLASS = 400  # of the bundled subset's 4,000 training images
MODES = ("smallest", "largest", "random")
NULL_MODELS = ("A", "B", "C", "D", "E", "F", "G")
DISTILBERT = "dslim/distilbert-NER"
# CoNLL-2003 test split: local files in the original text format under $MEMLIB_DATA/conll2003
# (test.txt as most redistributions name it, eng.testb as the shared task did), else the hub's
# parquet export of the dataset (datasets >= 4 refuses the repository's loading script).
CONLL_FILES = ("test.txt", "eng.testb")
CONLL_HUB = "eriktks/conll2003"
CONLL_HUB_REVISION = "refs/convert/parquet"
_NER_TAG = re.compile(r"O|[BI]-\S+")


@dataclass(frozen=True)
class Config:
    datasets: Annotated[tuple[str, ...], NonEmpty, Distinct] = ("fashion_mnist",)
    pair_choice: Literal["authors", "ssim"] = "authors"
    width: Annotated[int, Positive, AtMost(2**16)] = 64
    activation: Literal["relu", "tanh", "sigmoid"] = "relu"
    epochs: Annotated[int, Positive, AtMost(10**4)] = 10
    batch_size: Annotated[int, Positive, AtMost(2**20)] = 128
    lr: Annotated[float, Positive] = 0.01
    # the learning rate rises linearly over the first optimizer steps: without it, a run's
    # first full-size Adam steps can push every hidden unit below zero for every input
    warmup_steps: Annotated[int, NonNegative, AtMost(10**6)] = 5
    # one run per seed: initialisation, batch order and the probes' random draws
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (
        0, 1, 2, 3, 4)
    # None: every training image of the two classes
    train_per_class: Annotated[int | None, Positive, AtMost(10**7)] = None
    reinit_biases: bool = False  # the authors' scripts reload weights only
    fold_below_chance: bool = False  # report acc < 50% as 100 - acc, as the authors do
    # noise is redrawn for every evaluation batch
    eval_batch_size: Annotated[int, Positive, AtMost(2**20)] = 500
    prune_levels: Annotated[tuple[float, ...], NonEmpty, Rate] = tuple(
        round(0.05 * i, 2) for i in range(20))
    noise_log2_levels: Annotated[tuple[float, ...], NonEmpty, Range(hi=4)] = tuple(
        float(k) for k in range(-10, 1))
    flip_levels: Annotated[tuple[float, ...], NonEmpty, Rate] = tuple(
        round(0.05 * i, 2) for i in range(11))
    null_draws: Annotated[int, Positive, AtMost(10**4)] = 10
    null_prune_levels: Annotated[tuple[float, ...], NonEmpty, Rate] = (
        0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    curveball_trades: Annotated[int, Positive, AtMost(10**4)] = 5  # trades per row of a layer
    # random image pairs per ordered class pair
    ssim_pairs: Annotated[int, Positive, AtMost(10**6)] = 200
    # the heatmaps cover every pair of the first k classes
    heatmap_classes: Annotated[int, Range(3, 10)] = 10
    heatmap_runs: Annotated[int, Positive, AtMost(10**4)] = 3  # the first heatmap_runs seeds
    heatmap_epochs: Annotated[int, Positive, AtMost(10**4)] = 5
    heatmap_train_per_class: Annotated[int | None, Positive, AtMost(10**7)] = 2000
    heatmap_null_draws: Annotated[int, Positive, AtMost(10**4)] = 3
    standin_train: Annotated[int, Positive, AtMost(10**7)] = 12000
    standin_test: Annotated[int, Positive, AtMost(10**7)] = 2000
    standin_epochs: Annotated[int, NonNegative, AtMost(10**4)] = 4
    standin_prune_levels: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.5, 0.9)
    standin_noise_levels: Annotated[tuple[float, ...], Positive] = (0.5, 1.0, 2.0)
    standin_flip_levels: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.1, 0.3)
    distilbert: bool = False
    # a hub id or a folder written by save_pretrained; a folder of that name (or of the id's
    # last part, models/distilbert-NER) under $MEMLIB_DATA/models is used first when present
    distilbert_model: str = DISTILBERT
    # None: the whole CoNLL-2003 test split
    distilbert_sentences: Annotated[int | None, Positive, AtMost(10**7)] = None
    parallel_runs: Annotated[int, Positive, AtMost(256)] = 1  # runs at once: in no key

    def __post_init__(self):
        check_fields(self)
        for name in ("standin_train", "standin_test"):  # stand-in: 10-class Fashion-MNIST
            check_stratified(name, getattr(self, name), NUM_CLASSES["fashion_mnist"],
                             "fashion_mnist")
        check(self.heatmap_runs <= len(self.seeds),
              f"heatmap_runs={self.heatmap_runs} exceeds the {len(self.seeds)} seeds")
        for name in self.datasets:
            check(name in DATASETS,
                  f"unknown dataset {name!r}; choose from: {', '.join(DATASETS)}")
        check(0.0 in self.prune_levels and 0.0 in self.flip_levels,
              "prune_levels and flip_levels must include 0.0 (the unprobed reference)")

    @property
    def runs(self) -> int:
        return len(self.seeds)

    @property
    def seed(self) -> int:
        """The first seed: draws of the data (SSIM pairs, stand-in subsets) and the stand-in."""
        return self.seeds[0]


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


# --- the Fig. 1 grid -----------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeSpec:
    probe: str  # prune, flip, noise, float
    mode: str  # smallest/largest/random ("-" for noise)
    level: float  # fraction p or q, or noise amplitude a
    form: str  # float, signed, scaled (scaled = alpha sign(W), ours)


def fig1_grid(config: Config) -> list[ProbeSpec]:
    specs = []
    for mode in MODES:
        forms = ("float", "signed", "scaled") if mode == "smallest" else ("float", "signed")
        specs += [ProbeSpec("prune", mode, p, f) for p in config.prune_levels for f in forms]
        specs += [ProbeSpec("flip", mode, q, f) for q in config.flip_levels
                  for f in ("float", "signed")]
    specs += [ProbeSpec("noise", "-", 2.0 ** k, f) for k in config.noise_log2_levels
              for f in ("float", "signed")]
    return specs


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


# --- data and training of many runs at once ------------------------------------------------


def pair_data(dataset: str, pair: tuple[int, int], split: str, per_class: int | None = None,
              seed: int = 0) -> tuple[Tensor, Tensor]:
    """Flattened inputs in [-1, 1] (background -1, as the authors) and 0/1 labels."""
    from memlib import data

    part = data.class_pair(data.load(dataset, split), *pair)
    if per_class is not None and 2 * per_class < len(part):
        part = part.subset(data.stratified_subset(part.y, count=2 * per_class, seed=seed))
    return data.to_symmetric_range(part.x).flatten(1), part.y


def make_mlp(width: int, activation: str, seed: int, in_features: int = 784,
             num_classes: int = 2) -> nn.Module:
    from memlib.models import MLP

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return MLP(in_features, (width,), num_classes, activation=activation)


class Ensemble(nn.Module):
    """R copies of one architecture trained side by side: stacked parameters, vmapped forward.

    Adam is elementwise and the loss is a sum of per-run mean losses, so each run trains
    exactly as it would alone (up to float rounding).
    """

    def __init__(self, models: Sequence[nn.Module]):
        super().__init__()
        stacked, _ = stack_module_state(list(models))
        self.names = list(stacked)
        self.stacked = nn.ParameterList([nn.Parameter(stacked[n]) for n in self.names])
        self._base = [models[0]]  # a list, so its parameters are not the ensemble's

    def params(self) -> dict[str, Tensor]:
        return dict(zip(self.names, self.stacked, strict=True))

    def forward(self, x: Tensor) -> Tensor:  # x: (runs, batch, ...)
        base = self._base[0]
        return vmap(lambda p, xb: functional_call(base, p, (xb,)))(self.params(), x)


class RunBatches:
    """Minibatches with an independent shuffle per run: x (runs, batch, ...), y, idx."""

    def __init__(self, x: Tensor, y: Tensor, batch_size: int, seeds: Sequence[int]):
        # Not .x/.y: memlib.train would wrap an object with those in its own batcher.
        self.inputs, self.labels, self.batch_size = x, y, batch_size
        self.generators = [generator(s) for s in seeds]

    def __len__(self) -> int:
        return math.ceil(len(self.labels) / self.batch_size)

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        n = len(self.labels)
        orders = torch.stack([torch.randperm(n, generator=g) for g in self.generators])
        for start in range(0, n, self.batch_size):
            idx = orders[:, start:start + self.batch_size]
            yield self.inputs[idx], self.labels[idx], idx


def _ensemble_step(model: Ensemble, batch) -> Tensor:
    x, y, _ = batch
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten()) * logits.shape[0]


def train_runs(x: Tensor, y: Tensor, seeds: Sequence[int], width: int, activation: str,
               epochs: int, batch_size: int, lr: float, reinit_biases: bool = False,
               desc: str = "train", warmup_steps: int = 0) -> dict[str, Tensor]:
    """Train one MLP per seed (Adam, cosine annealing after a linear warmup over the first
    `warmup_steps` optimizer steps, final weights); stacked parameters.

    `reinit_biases` replaces the trained biases by a fresh random initialisation, as the
    authors' probe scripts effectively do when they reload weights only.
    """
    models = [make_mlp(width, activation, s, x.shape[1]) for s in seeds]
    ensemble = Ensemble(models)
    batches = RunBatches(x, y, batch_size, seeds)
    spec = training.TrainSpec(epochs=epochs, batch_size=batch_size, optimizer="adam", lr=lr,
                              schedule="warmup_cosine" if warmup_steps else "cosine",
                              warmup_epochs=warmup_steps / len(batches), seed=seeds[0])
    training.train(ensemble, batches, spec, step=_ensemble_step, desc=desc)
    # trained where train() put them (a GPU if any); probed and evaluated on the CPU
    params = {k: v.detach().cpu().clone() for k, v in ensemble.params().items()}
    if reinit_biases:
        fresh = stack_module_state(
            [make_mlp(width, activation, s + 10_007, x.shape[1]) for s in seeds])[0]
        params.update({k: v.detach() for k, v in fresh.items() if k.endswith(".bias")})
    return params


def pair_epochs(dataset: str, epochs: int, per_class: int | None) -> int:
    """Epochs for a pair: `epochs`, except that a pair of the bundled MNIST subset (400
    training images per class) trains for proportionally more epochs, so that it takes as
    many optimizer steps as `epochs` would on the images the preset asks for from the full
    set (`per_class`, or all of them)."""
    if dataset != MNIST_5K:
        return epochs
    wanted = MNIST_PER_CLASS if per_class is None else min(per_class, MNIST_PER_CLASS)
    return math.ceil(epochs * max(wanted, MNIST_5K_PER_CLASS) / MNIST_5K_PER_CLASS)


def trained_pair(dataset: str, pair: tuple[int, int], seeds: Sequence[int], config: Config,
                 epochs: int, per_class: int | None) -> dict[str, Tensor]:
    epochs = pair_epochs(dataset, epochs, per_class)
    key = {"dataset": dataset, "pair": list(pair), "seeds": list(seeds), "width": config.width,
           "activation": config.activation, "epochs": epochs, "batch_size": config.batch_size,
           "lr": config.lr, "per_class": per_class, "reinit_biases": config.reinit_biases,
           "warmup_steps": config.warmup_steps}

    def compute():
        x, y = pair_data(dataset, pair, "train", per_class, seed=seeds[0])
        return train_runs(x, y, seeds, config.width, config.activation, epochs,
                          config.batch_size, config.lr, config.reinit_biases,
                          desc=f"{dataset} {pair}", warmup_steps=config.warmup_steps)

    return TRAINED_PAIR.get(key, compute)


def run_params(stacked: dict[str, Tensor], r: int) -> dict[str, Tensor]:
    return {k: v[r] for k, v in stacked.items()}


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


def choose_pairs(distance: np.ndarray, dataset: str, choice: str) -> dict[str, tuple[int, int]]:
    if choice == "authors":
        return dict(AUTHORS_PAIRS[dataset])
    off = distance + np.diag(np.full(len(distance), np.nan))
    hard = np.unravel_index(np.nanargmin(off), off.shape)
    easy = np.unravel_index(np.nanargmax(off), off.shape)
    return {"easy": tuple(int(i) for i in easy), "hard": tuple(int(i) for i in hard)}


# --- per-matrix probes of a large model (DistilBERT NER, or the ViT stand-in) -------------


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


def matrix_probes(config: Config) -> list[tuple[str, float, Callable]]:
    """(probe, level, transform(w, gen)) of the layer-wise case study."""
    probes = [("float", 0.0, lambda w, g: w), ("sign", 0.0, lambda w, g: binarize(w)),
              ("A", 0.0, lambda w, g: null_model(w, "A", g)),
              ("B", 0.0, lambda w, g: null_model(w, "B", g))]
    probes += [("prune", p, lambda w, g, p=p: prune(w, p)) for p in config.standin_prune_levels]
    probes += [("noise", s, lambda w, g, s=s: gaussian_noise(w, s * float(w.std()), g))
               for s in config.standin_noise_levels]
    probes += [("flip", q, lambda w, g, q=q: flip(w, q)) for q in config.standin_flip_levels]
    return probes


def layerwise_table(model: nn.Module, names: Sequence[str], metric: Callable[[Callable], float],
                    config: Config, seed: int = 0) -> pd.DataFrame:
    """The metric for every probe of `matrix_probes` on each named matrix, one at a time."""
    gen = generator(seed)
    rows = []
    for order, name in enumerate(names):
        for probe, level, transform in matrix_probes(config):
            # probes draw on a CPU generator: probe a CPU copy, evaluate where the model is
            value = probe_parameter(model, name,
                                    lambda w, t=transform: t(w.cpu(), gen).to(w.device), metric)
            rows.append({"order": order, "matrix": name, "probe": probe, "level": level,
                         "metric": value})
    return pd.DataFrame(rows)


def standin_matrices(model: nn.Module) -> list[str]:
    last = len(model.blocks) - 1
    return ["patch_embed.proj.weight", "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc2.weight",
            f"blocks.{last}.mlp.fc1.weight", f"blocks.{last}.mlp.fc2.weight", "head.weight"]


def _standin_data(split: str, n: int, seed: int) -> tuple[Tensor, Tensor]:
    from memlib import data

    full = data.load("fashion_mnist", split)
    part = full.subset(data.stratified_subset(full.y, count=min(n, len(full)), seed=seed))
    return data.to_symmetric_range(part.x), part.y


def standin_model(config: Config) -> nn.Module:
    """A small timm ViT trained on 10-class Fashion-MNIST (cached weights)."""
    from memlib.models import vit

    def fresh():
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            return vit("vit_tiny", num_classes=10, image_size=28, in_channels=1)

    def compute():
        model = fresh()
        x, y = _standin_data("train", config.standin_train, config.seed)
        spec = training.TrainSpec(
            epochs=config.standin_epochs, batch_size=128, optimizer="adamw", lr=2e-3,
            weight_decay=0.05, schedule="warmup_cosine",
            warmup_epochs=min(1.0, config.standin_epochs / 4), seed=config.seed)
        training.train(model, (x, y), spec, desc="vit stand-in")
        return {k: v.detach().cpu() for k, v in model.state_dict().items()}

    key = {"train": config.standin_train, "epochs": config.standin_epochs, "seed": config.seed}
    state = STANDIN_VIT.get(key, compute)
    model = fresh()
    model.load_state_dict(state)
    return model.eval()


def accuracy_metric(x: Tensor, y: Tensor, batch_size: int = 500) -> Callable[[Callable], float]:
    def metric(forward):
        correct = sum((forward(x[s:s + batch_size]).argmax(-1) == y[s:s + batch_size]).sum()
                      for s in range(0, len(y), batch_size))
        return 100.0 * float(correct) / len(y)
    return metric


def distilbert_matrices(model: nn.Module) -> list[str]:
    """The paper's probed matrices: position embeddings, the FFN of the first and of the last
    transformer block, the classifier (layer 5 in dslim/distilbert-NER's six)."""
    last = len(model.distilbert.transformer.layer) - 1
    return ["distilbert.embeddings.position_embeddings.weight",
            "distilbert.transformer.layer.0.ffn.lin1.weight",
            "distilbert.transformer.layer.0.ffn.lin2.weight",
            f"distilbert.transformer.layer.{last}.ffn.lin1.weight",
            f"distilbert.transformer.layer.{last}.ffn.lin2.weight",
            "classifier.weight"]


def iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 -> IOB2: an I-X that does not continue an X entity begins one, so becomes B-X.
    Tags already in IOB2 come back unchanged.

    The shared task's original files are IOB1 (B- only between two adjacent entities of one
    type); the model predicts IOB2. seqeval's default mode would read both the same way, but
    converting makes the reference use exactly the model's label set, so every scoring mode
    (strict IOB2 included) and every per-tag count stays meaningful.
    """
    out, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        out.append(tag)
        previous = tag
    return out


def parse_conll(lines: Iterable[str]) -> list[tuple[list[str], list[str]]]:
    """(words, IOB2 NER tags) per sentence of a CoNLL-2003 file: one "word POS chunk NER" line
    per token, a blank line between sentences, -DOCSTART- lines (document breaks) skipped.
    Four columns exactly, so a file of another layout fails here instead of scoring a POS or
    chunk column (B-NP looks like an entity tag) as NER."""
    sentences, words, tags = [], [], []

    def flush():
        if words:
            sentences.append((words.copy(), iob2(tags)))
            words.clear()
            tags.clear()

    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            flush()
            continue
        if len(fields) != 4 or not _NER_TAG.fullmatch(fields[-1]):
            raise ValueError(f"line {number} is not 'word POS chunk NER' with an O, B-X or I-X "
                             f"tag last: {line.strip()!r}")
        words.append(fields[0])
        tags.append(fields[-1])
    flush()
    return sentences


def conll_test() -> tuple[list[tuple[list[str], list[str]]], str]:
    """The CoNLL-2003 test sentences (words, IOB2 tags) and where they came from: a local file
    (CONLL_FILES in $MEMLIB_DATA/conll2003) when present, else the hub through `datasets`."""
    folder = paths.data_dir() / "conll2003"
    for name in CONLL_FILES:
        path = folder / name
        if path.is_file():
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:  # some copies of the Reuters text are Latin-1
                text = raw.decode("latin-1")
            try:
                return parse_conll(text.splitlines()), str(path)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
    import datasets

    test = datasets.load_dataset(CONLL_HUB, revision=CONLL_HUB_REVISION, split="test")
    names = test.features["ner_tags"].feature.names
    sentences = [(list(words), iob2([names[t] for t in tags]))
                 for words, tags in zip(test["tokens"], test["ner_tags"], strict=True)]
    return sentences, f"{CONLL_HUB} on the Hugging Face hub"


def distilbert_source(name: str) -> str:
    """Where to load the model from: `name` if it is an absolute path (a folder), else the folder
    $MEMLIB_DATA/models/<name> or $MEMLIB_DATA/models/<last part of name> if present, else
    `name` as a hub id. (Relative folders are not read from the working directory, which
    papermill moves.)"""
    given = Path(name).expanduser()
    if given.is_absolute():
        if not given.is_dir():
            raise FileNotFoundError(f"no model folder {given}")
        return str(given)
    models = paths.data_dir() / "models"
    for folder in (models / name, models / name.rstrip("/").split("/")[-1]):
        if folder.is_dir():
            return str(folder)
    return name


def first_subtoken_positions(word_ids: Sequence[int | None], n_words: int) -> list[int | None]:
    """Per word, the position of its first sub-token (None: cut off by truncation). Words are
    scored by their first sub-token only, the convention of the token-classification recipe
    the model was trained with; special tokens (word id None) are skipped."""
    first: dict[int, int] = {}
    for position, word in enumerate(word_ids):
        if word is not None and word not in first:
            first[word] = position
    return [first.get(w) for w in range(n_words)]


def word_labels(predicted: Sequence[int], positions: Sequence[int | None],
                id2label: dict[int, str]) -> list[str]:
    """Each word's label: the prediction at its first sub-token, "O" if it was truncated."""
    return [id2label[int(predicted[p])] if p is not None else "O" for p in positions]


def _not_run(reason: str) -> str:
    return (f"DistilBERT NER case study not run: {reason}. It needs {DISTILBERT} and the "
            "CoNLL-2003 test split, from local files ($MEMLIB_DATA/models/distilbert-NER, a "
            "save_pretrained folder; $MEMLIB_DATA/conll2003/test.txt or eng.testb) or the "
            "Hugging Face hub (package datasets), and the package seqeval. The ViT on "
            "Fashion-MNIST is a stand-in, not the paper's experiment.")


def distilbert_case_study(config: Config, batch_size: int = 64
                          ) -> tuple[pd.DataFrame | None, str]:
    """The paper's DistilBERT NER study: entity-level F1 (seqeval, in [0, 1]) on the
    CoNLL-2003 test split under each probe of each matrix of `distilbert_matrices`, from local
    files or the hub. Returns (table or None, a one-line status)."""
    if not config.distilbert:
        return None, _not_run("distilbert=false at this scale")
    try:  # the data first: a missing `datasets` fails at once, the offline hub only after retries
        from seqeval.metrics import f1_score
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        sentences, data_source = conll_test()
        source = distilbert_source(config.distilbert_model)
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForTokenClassification.from_pretrained(source).eval()
    except Exception as err:  # offline, missing package or file, unreadable file: "not here"
        return None, _not_run(f"{type(err).__name__}: {' '.join(str(err).split())[:200]}")
    if config.distilbert_sentences is not None:
        sentences = sentences[:config.distilbert_sentences]
    device = training.resolve_device()
    model.to(device)
    batches = []
    for start in range(0, len(sentences), batch_size):
        words, tags = zip(*sentences[start:start + batch_size], strict=True)
        encoded = tokenizer(list(words), is_split_into_words=True, truncation=True,
                            padding=True, return_tensors="pt")
        positions = [first_subtoken_positions(encoded.word_ids(i), len(w))
                     for i, w in enumerate(words)]
        batches.append((dict(encoded.to(device)), positions, list(tags)))

    def metric(forward):
        truth, predicted = [], []
        for encoded, positions, tags in batches:
            labels = forward(**encoded).logits.argmax(-1).cpu().tolist()
            predicted += [word_labels(row, p, model.config.id2label)
                          for row, p in zip(labels, positions, strict=True)]
            truth += tags
        return f1_score(truth, predicted)

    table = layerwise_table(model, distilbert_matrices(model), metric, config, config.seed)
    return table, (f"DistilBERT NER case study run: {source} on {len(sentences)} CoNLL-2003 "
                   f"test sentences from {data_source}, entity-level F1 in [0, 1].")


# --- the experiments -----------------------------------------------------------------------


def _difficulty(dataset: str, config: Config) -> pd.DataFrame:
    from memlib import data

    def compute():
        test = data.load(dataset, "test")
        x = data.to_symmetric_range(test.x)
        d = difficulty_matrix(x, test.y, test.num_classes, config.ssim_pairs, config.seed)
        return pd.DataFrame([{"dataset": dataset, "a": a, "b": b, "distance": d[a, b]}
                             for a in range(len(d)) for b in range(len(d))])

    return DIFFICULTY.get({"dataset": dataset, "pairs": config.ssim_pairs, "seed": config.seed},
                          compute)


def _task_results(dataset: str, task: str, pair: tuple[int, int], config: Config) -> dict:
    seeds = list(config.seeds)
    stacked = trained_pair(dataset, pair, seeds, config, config.epochs, config.train_per_class)

    def compute():
        model = make_mlp(config.width, config.activation, 0)
        x, y = pair_data(dataset, pair, "test")
        specs = fig1_grid(config)
        baseline, sweeps, nulls = [], [], []
        for r, seed in enumerate(seeds):
            params = run_params(stacked, r)
            acc = accuracy_of_variants(model, [params], x, y, config.eval_batch_size)
            baseline.append({"run": r, "seed": seed, "acc": float(acc[0]),
                             **{f"sigma_{n.split('.')[0]}": float(params[n].std())
                                for n, _ in mlp_layers(model)}})
            # the probes' draws of run r come from its seed alone
            sweeps.append(sweep(model, params, x, y, specs, seed=7919 * seed,
                                batch_size=config.eval_batch_size).assign(run=r))
            null_at_zero = null_sweep(model, params, x, y, NULL_MODELS, [0.0],
                                      config.null_draws, 104729 * seed,
                                      config.curveball_trades, config.eval_batch_size)
            pruned_b = null_sweep(model, params, x, y, ["B"],
                                  [p for p in config.null_prune_levels if p > 0],
                                  max(1, config.null_draws // 2), 15485863 * seed,
                                  config.curveball_trades, config.eval_batch_size)
            nulls.append(pd.concat([null_at_zero, pruned_b]).assign(run=r))
        tag = {"dataset": dataset, "task": task, "pair": f"{pair[0]}/{pair[1]}"}
        return {"baseline": pd.DataFrame(baseline).assign(**tag),
                "sweep": pd.concat(sweeps, ignore_index=True).assign(**tag),
                "nulls": pd.concat(nulls, ignore_index=True).assign(**tag)}

    key = {k: getattr(config, k) for k in (
        "width", "activation", "epochs", "batch_size", "lr", "warmup_steps", "seeds",
        "train_per_class", "reinit_biases", "eval_batch_size", "prune_levels",
        "noise_log2_levels", "flip_levels", "null_draws", "null_prune_levels",
        "curveball_trades")}
    return TASK.get({**key, "dataset": dataset, "pair": list(pair)}, compute)


def _heatmap(dataset: str, distance: pd.DataFrame, config: Config
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per class pair: means over every run (accuracies, Delta_bin, Delta_rand), and how many
    runs trained; and every run, marked `trained`."""
    from memlib import data

    classes = data.load(dataset, "test").classes
    seeds = list(config.seeds[:config.heatmap_runs])
    model = make_mlp(config.width, config.activation, 0)
    weights = [w for w, _ in mlp_layers(model)]
    names = [n for pair in mlp_layers(model) for n in pair if n is not None]
    d = distance.set_index(["a", "b"])["distance"]
    rows, per_run = [], []
    for a, b in itertools.combinations(range(config.heatmap_classes), 2):
        stacked = trained_pair(dataset, (a, b), seeds, config, config.heatmap_epochs,
                               config.heatmap_train_per_class)

        def compute(a=a, b=b, stacked=stacked):
            x, y = pair_data(dataset, (a, b), "test")
            gen = generator(config.seed + 31 * a + b)
            out = []
            for r in range(config.heatmap_runs):
                params = run_params(stacked, r)
                variants = [params, apply_probe(params, names, binarize)]
                variants += [apply_probe(params, weights, lambda w: null_model(w, "B", gen))
                             for _ in range(config.heatmap_null_draws)]
                acc = accuracy_of_variants(model, variants, x, y, config.eval_batch_size)
                out.append({"run": r, "acc": float(acc[0]), "acc_sign": float(acc[1]),
                            "acc_B": float(acc[2:].mean())})
            return pd.DataFrame(out)

        key = {"dataset": dataset, "pair": [a, b], "seeds": seeds, "width": config.width,
               "activation": config.activation, "epochs": config.heatmap_epochs,
               "per_class": config.heatmap_train_per_class, "lr": config.lr,
               "warmup_steps": config.warmup_steps,
               "batch_size": config.batch_size, "reinit_biases": config.reinit_biases,
               "draws": config.heatmap_null_draws, "eval": config.eval_batch_size}
        runs = HEATMAP.get(key, compute)
        for name in ("acc", "acc_sign", "acc_B"):
            runs[name] = fold(runs[name].to_numpy(), config.fold_below_chance)
        runs = runs.assign(dataset=dataset, a=a, b=b, delta_bin=runs["acc"] - runs["acc_sign"],
                           delta_rand=runs["acc"] - runs["acc_B"])
        runs["trained"] = runs["acc"] > UNTRAINED
        per_run.append(runs)
        mean = runs[["acc", "acc_sign", "acc_B", "delta_bin", "delta_rand"]].mean()
        rows.append({"dataset": dataset, "a": a, "b": b,
                     "pair": f"{classes[a]}/{classes[b]}", "distance": float(d[(a, b)]),
                     **{k: float(v) for k, v in mean.items()},
                     "trained_runs": int(runs["trained"].sum())})
    return pd.DataFrame(rows), pd.concat(per_run, ignore_index=True)


def run(config: Config) -> dict:
    """Every experiment of the study; tidy DataFrames (accuracies in %).

    Each dataset goes by the name of the data it used (memlib.data.resolve: "mnist-5k" when
    the MNIST IDX files are absent), in every table, cache key and figure."""
    from memlib import data

    prefetch_runs(config)
    datasets = [data.resolve(name) for name in config.datasets]
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

    standin = cached_standin(config)
    distilbert, distilbert_status = distilbert_case_study(config)
    return {"datasets": datasets, "difficulty": pd.concat(difficulty, ignore_index=True),
            "pairs": pd.DataFrame(pairs), "baseline": baseline_df,
            "sweep": sweep_df, "nulls": null_df,
            "heatmap": pd.concat(heatmaps, ignore_index=True),
            "heatmap_runs": pd.concat(heatmap_runs, ignore_index=True),
            "standin": standin, "distilbert": distilbert, "distilbert_status": distilbert_status}


# --- the cached computations, and which worker processes compute first -------------------


def cached_difficulty(item: tuple[str, Config]) -> pd.DataFrame:
    """A dataset's SSIM distances between its classes."""
    return _difficulty(*item)


def cached_task(item: tuple[str, str, tuple[int, int], Config]) -> dict:
    """A task's runs and their probes (two entries: the training, then the probes)."""
    return _task_results(*item)


def cached_heatmap(item: tuple[str, Config]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A dataset's SSIM distances and every class pair's heatmap runs and probes."""
    dataset, config = item
    return _heatmap(dataset, _difficulty(dataset, config), config)


def cached_standin(config: Config) -> pd.DataFrame:
    """The ViT stand-in's layer-wise table."""
    vit_model = standin_model(config)
    x, y = _standin_data("test", config.standin_test, config.seed + 1)
    key = {k: getattr(config, k) for k in ("standin_train", "standin_test", "standin_epochs",
                                           "standin_prune_levels", "standin_noise_levels",
                                           "standin_flip_levels", "seed")}
    return STANDIN_TABLE.get(key, lambda: layerwise_table(
        vit_model, standin_matrices(vit_model), accuracy_metric(x, y), config, config.seed))


# each keyed by the code of the function that builds it
TRAINED_PAIR = inline("probes-train", 1, trained_pair, uses=TRAINING)
STANDIN_VIT = inline("probes-standin-vit", 1, standin_model, uses=TRAINING)
DIFFICULTY = inline("probes-difficulty", 1, _difficulty, uses=TRAINING)
TASK = inline("probes-task", 1, _task_results, uses=TRAINING)
HEATMAP = inline("probes-heatmap", 1, _heatmap, uses=TRAINING)
STANDIN_TABLE = inline("probes-standin-table", 1, cached_standin, uses=TRAINING)


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) calls that together make every cached result of `run`,
    independent of each other, in an order that keeps two workers busy to the end at the
    small scale (cold: the ViT stand-in 68 s, a task's training and probes 36-75 s, a
    dataset's heatmaps 47-56 s). With pairs chosen by SSIM distance the tasks need the
    distances first: they are computed here when missing."""
    from memlib import data

    datasets = [data.resolve(name) for name in config.datasets]
    tasks = []
    for dataset in datasets:
        matrix = None
        if config.pair_choice != "authors":
            matrix = _difficulty(dataset, config).pivot(index="a", columns="b",
                                                        values="distance").to_numpy()
        chosen = choose_pairs(matrix, dataset, config.pair_choice)
        tasks += [(cached_task, (dataset, task, chosen[task], config)) for task in TASKS]
    return [(cached_standin, config), *tasks,
            *[(cached_heatmap, (dataset, config)) for dataset in datasets]]


def prefetch_runs(config: Config) -> None:
    """Compute the planned runs missing from the cache `config.parallel_runs` at a time, in
    worker processes (one CPU thread each; nothing under torchrun), for `run` to load: the
    SSIM distances first where the pairs are chosen by them."""
    from memlib import data
    from memlib.parallel import can_prefetch

    if not can_prefetch(config.parallel_runs):
        return
    if config.pair_choice != "authors":
        compute_missing([(cached_difficulty, (data.resolve(name), config))
                         for name in config.datasets], config.parallel_runs, "probes SSIM")
    compute_missing(planned_runs(config), config.parallel_runs, "probes runs")


# --- claims --------------------------------------------------------------------------------
#
# Every statistic over runs is the mean over every run (none is left out), with its 95%
# Student-t interval; the median over runs is reported beside it.

TRAINED = 90.0  # % mean test accuracy of unprobed binary models that have learned their task
STANDIN_TRAINED = 75.0  # % accuracy of the 10-class ViT stand-in that has learned its task
DISTILBERT_TRAINED = 0.8  # entity F1 of the unprobed DistilBERT
HEADROOM = 95.0  # a signed model at or above this has no room left for a 5-point gain
NEAR_CHANCE = 65.0  # % binary accuracy within 15 points of chance (50%)
SEPARATION = 20.0  # points between easy and hard signed accuracy
RISE = 25.0  # points: half the way from chance (50%) to a perfect model
SHARP = 0.25  # the widest p-range (10% to 90% of the rise) a "sharp" transition may take
LOCATION_SD = 0.1  # the largest spread over runs (SD of p50) of a "characteristic" level
GAIN = 5.0  # points: the smallest gain or loss taken as an effect of a probe
LAYER_PRUNE = 0.5  # the pruned fraction of the layer-wise pruning rows
RANDOMIZED = "B"  # the null model of the layer-wise randomization rows: the paper's Δ_rand


def transition_points(levels: np.ndarray, acc: np.ndarray, max_level: float = 0.7,
                      fractions: Sequence[float] = (0.1, 0.9)) -> tuple[float, ...]:
    """(rise, p_f for f in fractions) of a curve: rise = max over levels <= max_level minus acc
    at level 0; p_f = the level where it first reaches the fraction f of that rise before the
    maximum (linear interpolation); nan when the curve never rises."""
    order = np.argsort(levels)
    levels, acc = np.asarray(levels, float)[order], np.asarray(acc, float)[order]
    keep = levels <= max_level + 1e-9
    levels, acc = levels[keep], acc[keep]
    top = int(np.argmax(acc))
    rise = float(acc[top] - acc[0])
    if rise <= 0:
        return (rise, *[math.nan] * len(fractions))

    def crossing(fraction):
        target = acc[0] + fraction * rise
        i = int(np.argmax(acc[: top + 1] >= target))
        if i == 0:
            return float(levels[0])
        lo, hi = acc[i - 1], acc[i]
        return float(levels[i - 1] + (target - lo) / (hi - lo) * (levels[i] - levels[i - 1]))

    return (rise, *[crossing(f) for f in fractions])


def transition(levels: np.ndarray, acc: np.ndarray, max_level: float = 0.7
               ) -> tuple[float, float]:
    """(rise, width) of a curve: width = p90 - p10 of `transition_points` (nan without a rise)."""
    rise, p10, p90 = transition_points(levels, acc, max_level)
    return rise, p90 - p10


@dataclass(frozen=True)
class Spread:
    """The standard deviation of a quantity over n replicates, with its 95% chi-square
    interval (normal replicates)."""

    sd: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        v = np.asarray(list(values), dtype=float)
        return cls(float(v.std(ddof=1)) if len(v) > 1 else math.nan, len(v))

    def interval(self) -> tuple[float, float]:
        from scipy.stats import chi2

        if self.n < 2:
            return math.nan, math.nan
        df, tail = self.n - 1, (1 - LEVEL) / 2
        return (self.sd * math.sqrt(df / chi2.ppf(1 - tail, df)),
                self.sd * math.sqrt(df / chi2.ppf(tail, df)))

    def at_most(self, threshold: float) -> tuple[bool, bool]:
        """(sd <= threshold, the interval lies on one side of the threshold)."""
        lo, hi = self.interval()
        return self.sd <= threshold, bool(hi <= threshold or lo > threshold)

    def __str__(self) -> str:
        lo, hi = self.interval()
        return f"{self.sd:.3g} [{lo:.2g}, {hi:.2g}] (n={self.n})"


def every_test_settled(tests: Iterable[tuple[bool, bool]]) -> bool:
    """Noise rule for "every test passes" over (passes, decided) pairs: settled when every test
    is decided, or when one decided test fails."""
    tests = list(tests)
    return bool(tests) and (all(d for _, d in tests) or any(d and not p for p, d in tests))


def _test(m: Estimate) -> tuple[bool, bool]:
    """(passes, decided) of a margin (see claims.margin)."""
    return m.mean >= 0, m.beyond_noise


def claim_dataset(dataset: str) -> str:
    """The dataset in a claim id: the bundled MNIST subset answers MNIST's claims."""
    return "mnist" if dataset == MNIST_5K else dataset


def run_curves(sweep: pd.DataFrame, **where) -> pd.DataFrame:
    """Accuracy (%) per level (rows, ascending) and run (columns) of the rows matching `where`."""
    mask = np.ones(len(sweep), bool)
    for k, v in where.items():
        mask &= (sweep[k] == v).to_numpy()
    return sweep[mask].pivot_table(index="level", columns="run", values="acc").sort_index()


def interior_peak(curves: pd.DataFrame) -> dict:
    """The peak of the mean-over-runs curve among the levels strictly between the first and
    the last (curves: levels x runs), and each run's gain there over the first level and its
    fall from there to the last level (Estimates over runs)."""
    interior = curves.iloc[1:-1]
    if interior.empty:  # two levels or fewer: no peak can lie between them
        return {"peak": math.nan, "gain": Estimate(math.nan, math.nan, 0),
                "fall": Estimate(math.nan, math.nan, 0), "start": float(curves.iloc[0].mean())}
    peak = interior.mean(axis=1).idxmax()
    return {"peak": float(peak), "gain": Estimate.of(curves.loc[peak] - curves.iloc[0]),
            "fall": Estimate.of(curves.loc[peak] - curves.iloc[-1]),
            "start": float(curves.iloc[0].mean())}


def bootstrap_spearman(per_run: pd.DataFrame, x: str, y: str, draws: int = 1000,
                       seed: int = 0) -> Estimate:
    """Spearman rho over class pairs (a, b) of the per-pair means over runs of columns x and
    y. Its spread is the standard deviation over `draws` bootstrap resamples of the classes
    (pairs share classes, so pairs are not independent: a resample keeps every pair of two
    distinct drawn classes) and of each kept pair's runs (x and y of a run stay together),
    carried to a Fisher-z interval that stays inside [-1, 1]; n of the Estimate = the number
    of classes."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    groups = {k: g.sort_values("run") for k, g in per_run.groupby(["a", "b"])}
    classes = sorted({c for pair in groups for c in pair})
    if len(groups) < 3:
        return Estimate(math.nan, math.nan, 0)
    point = float(spearmanr([g[x].mean() for g in groups.values()],
                            [g[y].mean() for g in groups.values()]).statistic)
    index = {pair: i for i, pair in enumerate(groups)}
    bx, by = np.empty((draws, len(groups))), np.empty((draws, len(groups)))
    for i, g in enumerate(groups.values()):
        pick = rng.integers(0, len(g), (draws, len(g)))
        bx[:, i] = g[x].to_numpy(float)[pick].mean(1)
        by[:, i] = g[y].to_numpy(float)[pick].mean(1)
    rhos = []
    for d in range(draws):
        drawn = rng.choice(classes, len(classes))
        kept = [index[(min(a, b), max(a, b))] for i, a in enumerate(drawn) for b in drawn[i + 1:]
                if a != b and (min(a, b), max(a, b)) in index]
        if len(kept) >= 3:
            rhos.append(spearmanr(bx[d, kept], by[d, kept]).statistic)
    se = float(np.nanstd(rhos, ddof=1)) if len(rhos) > 1 else math.nan
    z_se = float(np.nanstd(fisher_z(rhos), ddof=1)) if len(rhos) > 1 else math.nan
    return correlation(point, len(classes), se, z_se)


def _learned_fields(base: pd.DataFrame) -> dict:
    """What the "models learned" preconditions read: each task's mean unprobed accuracy over
    every run and how many runs sit at chance."""
    return {**{f"float_{t}": float(base[t].mean()) for t in TASKS},
            **{f"at_chance_{t}": int((base[t] <= UNTRAINED).sum()) for t in TASKS}}


def _median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def measure(results: dict) -> dict:
    """The measured value of every claim (None where not run at this scale).

    Accuracies are per run, as Estimates over every run (mean ± 95% t interval), with the
    median over runs beside them (*_median); each dataset's values name the data they came
    from ("data": fashion_mnist, mnist or mnist-5k) and carry what the preconditions check:
    the mean unprobed accuracy over runs (float_*), the runs at chance (at_chance_*) and the
    pairs' 1 - SSIM distances (dist_*)."""
    measured = {}
    sweep, nulls = results["sweep"], results["nulls"]
    resonance, flips, pruned = {}, {}, {}
    for dataset in dict.fromkeys(sweep["dataset"]):
        key = claim_dataset(dataset)
        s = sweep[sweep["dataset"] == dataset]
        base = results["baseline"].query("dataset == @dataset").pivot_table(
            index="run", columns="task", values="acc").sort_index()
        runs = base.index
        distance = results["pairs"].query("dataset == @dataset").set_index("task")["distance"]
        learned = _learned_fields(base)
        similar = {"dist_easy": float(distance["easy"]), "dist_hard": float(distance["hard"])}
        signed = {t: run_curves(s, task=t, probe="prune", mode="smallest", form="signed")
                  for t in TASKS}
        at0 = {t: signed[t].loc[0.0].reindex(runs).to_numpy() for t in TASKS}
        measured[f"binarization_separates_{key}"] = {
            "data": dataset, "gap": paired(at0["easy"], at0["hard"]),
            "easy": Estimate.of(at0["easy"]), "hard": Estimate.of(at0["hard"]),
            "gap_median": _median(at0["easy"] - at0["hard"]),
            "hard_median": _median(at0["hard"]), **learned, **similar}
        hard = signed["hard"]
        points = [transition_points(hard.index.to_numpy(), hard[r].to_numpy(),
                                    fractions=(0.1, 0.5, 0.9)) for r in hard.columns]
        rising = [p for p in points if p[0] >= RISE]
        measured[f"phase_transition_{key}"] = {
            "data": dataset, "rise": Estimate.of([p[0] for p in points]),
            "width": Estimate.of([p90 - p10 for _, p10, _, p90 in rising]),
            "level": Estimate.of([p50 for _, _, p50, _ in rising]),
            "level_sd": Spread.of([p50 for _, _, p50, _ in rising]),
            "transition_runs": f"{len(rising)}/{len(points)}",
            "rise_median": _median([p[0] for p in points]),
            "signed_hard_p0": Estimate.of(at0["hard"]),
            "float_hard": learned["float_hard"], "at_chance_hard": learned["at_chance_hard"]}
        zero = nulls[(nulls["dataset"] == dataset) & (nulls["prune"] == 0.0)]
        null_acc = zero.groupby(["task", "null", "run"])["acc"].mean()  # mean over draws

        def loss(task, kind, null_acc=null_acc, base=base, runs=runs):
            """Accuracy lost under null model `kind` by each run."""
            return (base[task] - null_acc.loc[(task, kind)]).reindex(runs).to_numpy()

        measured[f"sign_structure_easy_{key}"] = {
            "data": dataset,
            **{k: Estimate.of(null_acc.loc[("easy", k)].reindex(runs)) for k in "BACD"},
            "B_median": _median(null_acc.loc[("easy", "B")].reindex(runs)),
            "float_easy": learned["float_easy"], "at_chance_easy": learned["at_chance_easy"]}
        extra = {k: paired(loss("hard", k), loss("easy", k)) for k in "BEF"}
        measured[f"hard_needs_magnitudes_{key}"] = {
            "data": dataset, **extra,
            "medians": {k: _median(loss("hard", k) - loss("easy", k)) for k in "BEF"},
            **learned, **similar}
        h = results["heatmap_runs"].query("dataset == @dataset")
        if len(h.groupby(["a", "b"])) == 45:  # the claims are about all 45 pairs of ten classes
            d = results["difficulty"].query("dataset == @dataset")[["a", "b", "distance"]]
            h = h.merge(d, on=["a", "b"], how="left")
            pairs = {"pairs": len(h.groupby(["a", "b"])),
                     "at_chance": int((h["acc"] <= UNTRAINED).sum()), "runs": len(h)}
            measured[f"complexity_measure_{key}"] = {
                "data": dataset, "rho_bin": bootstrap_spearman(h, "distance", "delta_bin"),
                "rho_rand": bootstrap_spearman(h, "distance", "delta_rand"), **pairs}
            measured[f"measures_agree_{key}"] = {
                "data": dataset, "rho": bootstrap_spearman(h, "delta_bin", "delta_rand"),
                **pairs}
        for task in TASKS:
            st = s[s["task"] == task]
            label = f"{dataset}/{task}"
            resonance[label] = interior_peak(run_curves(st, probe="noise", form="signed"))
            flips[label] = interior_peak(run_curves(st, probe="flip", mode="smallest",
                                                    form="signed"))
            pruned[label] = interior_peak(run_curves(st, probe="prune", mode="smallest",
                                                     form="signed"))
    if resonance:
        measured["stochastic_resonance"] = resonance
        measured["flips_mirror_noise"] = {k: {"noise_gain": resonance[k]["gain"],
                                              "flip_gain": flips[k]["gain"],
                                              "flip_peak": flips[k]["peak"]} for k in resonance}
        measured["pruning_improves_binarized"] = pruned
    for name, table in (("standin", results["standin"]),
                        ("distilbert", results.get("distilbert"))):
        if table is not None:
            measured[f"transformer_layers_{name}"] = layer_drops(table)
            measured[f"transformer_layers_pruned_{name}"] = layer_drops(table, "prune",
                                                                        LAYER_PRUNE)
            measured[f"transformer_layers_randomized_{name}"] = layer_drops(table, RANDOMIZED)
    return measured


def layer_drops(table: pd.DataFrame, probe: str = "sign", level: float = 0.0
                ) -> dict[str, float] | None:
    """The unprobed metric, and its loss under `probe` at `level`: the first probed matrix vs
    the last block's two MLP matrices (the 4th and 5th probed matrices); None where the table
    has no such probe."""
    unprobed = table[table["probe"] == "float"].set_index("order")["metric"]
    probed = table[(table["probe"] == probe) & np.isclose(table["level"], level)]
    if probed.empty:
        return None
    drop = unprobed - probed.set_index("order")["metric"]
    return {"float": float(unprobed.loc[0]), "first": float(drop.loc[0]),
            "last_block_1": float(drop.loc[3]), "last_block_2": float(drop.loc[4])}


def _learned(task: str) -> tuple[str, Callable[[dict], bool]]:
    return (f"{task} models learned their task (no run at chance, mean unprobed accuracy >= "
            f"{TRAINED:g}%)",
            lambda v: v[f"at_chance_{task}"] == 0 and v[f"float_{task}"] >= TRAINED)


_HARDER = ("the hard pair is the more similar one (smaller 1 - SSIM)",
           lambda v: v["dist_hard"] < v["dist_easy"])
_ALL_PAIRS = ("all 45 pairs ran and no run sits at chance",
              lambda v: v["pairs"] == 45 and v["at_chance"] == 0)


def _est(mean: float, se: float = 0.5, n: int = 8) -> Estimate:
    return Estimate(mean, se, n)


_LEARNED = {"float_easy": 98.0, "float_hard": 97.0, "at_chance_easy": 0, "at_chance_hard": 0,
            "dist_easy": 0.9, "dist_hard": 0.7}


def _with_preconditions(holds: dict, failing: dict[str, dict]) -> dict[str, dict]:
    """Cases whose precondition cases change `holds` as each `failing` entry says."""
    return {name: {**holds, **change} for name, change in failing.items()}


def _phase_margins(v: dict) -> list[tuple[bool, bool]]:
    return [_test(margin(v["rise"], RISE)), _test(margin(v["width"], SHARP, at_least=False)),
            v["level_sd"].at_most(LOCATION_SD)]


def _phase_estimates(v: dict) -> list[Estimate]:
    """The rule's tests that are Estimates (the SD of p50 is a Spread, tested beside them)."""
    return [margin(v["rise"], RISE), margin(v["width"], SHARP, at_least=False)]


def _magnitude_margins(v: dict) -> list[Estimate]:
    return [margin(v[k], GAIN) for k in "BEF"]


def _smallest_null(v: dict) -> Estimate:
    """The sign-keeping null model with the smallest extra loss: the one that decides."""
    return min((v[k] for k in "BEF"), key=lambda e: e.mean)


# what decides each per-dataset claim besides its rule: the functions that compute its value
# and the preset values they read (both in the claim's fingerprint)
_TRAINING = ("epochs", "width", "lr", "pair_choice")
_DATASET_DECIDERS = {
    "binarization_separates": ((run_curves, _learned_fields), _TRAINING),
    "phase_transition": ((transition_points, run_curves), ("prune_levels", *_TRAINING)),
    "sign_structure_easy": ((_learned_fields,), ("null_draws", *_TRAINING)),
    "hard_needs_magnitudes": ((_learned_fields,), ("null_draws", "curveball_trades",
                                                   *_TRAINING)),
    "complexity_measure": ((bootstrap_spearman,), ("heatmap_runs", "heatmap_epochs",
                                                   "ssim_pairs")),
    "measures_agree": ((bootstrap_spearman,), ("heatmap_runs", "heatmap_epochs")),
}


def _dataset_claims(dataset: str, paper: dict[str, str], figures: str,
                    caveat: str = "") -> list[Claim]:
    learned_easy, learned_hard = _learned("easy"), _learned("hard")
    separated = {"data": dataset, "gap": _est(35), "easy": _est(88), "hard": _est(53),
                 "gap_median": 35.0, "hard_median": 52.0, **_LEARNED}
    phase = {"data": dataset, "rise": _est(40), "width": _est(0.15, 0.02),
             "level": _est(0.4, 0.01), "level_sd": Spread(0.03, 8), "transition_runs": "8/8",
             "rise_median": 40.0, "signed_hard_p0": _est(52), "float_hard": 97.0,
             "at_chance_hard": 0}
    signs = {"data": dataset, "B": _est(92), "A": _est(50), "C": _est(50), "D": _est(50),
             "B_median": 92.0, "float_easy": 98.0, "at_chance_easy": 0}
    magnitudes = {"data": dataset, "B": _est(15), "E": _est(12), "F": _est(10),
                  "medians": {"B": 15.0, "E": 12.0, "F": 10.0}, **_LEARNED}
    gaps = {"data": dataset, "rho_bin": _est(-0.5, 0.1, 10), "rho_rand": _est(-0.5, 0.1, 10),
            "pairs": 45, "at_chance": 0, "runs": 135}
    agree = {"data": dataset, "rho": _est(0.9, 0.03, 10), "pairs": 45, "at_chance": 0,
             "runs": 135}
    return _with_first_units(declare([
        Claim(f"binarization_separates_{dataset}",
              "Binarized (sign W) hard-task models collapse to chance; easy ones stay accurate.",
              paper["binarize"],
              "signed accuracy (%) at p = 0 of each run, every run; the mean over runs with its "
              "95% t interval: easy - hard paired by run (points), and the hard pair alone",
              f"mean hard <= {NEAR_CHANCE:g}% (within 15 points of chance, 50%) and mean "
              f"easy - hard >= {SEPARATION:g} points (the easy pair stays well above the hard "
              "one), each beyond noise",
              **all_of(lambda v: [margin(v["hard"], NEAR_CHANCE, at_least=False),
                                  margin(v["gap"], SEPARATION)]),
              preconditions=(learned_easy, learned_hard, _HARDER),
              cases=Cases(separated, {**separated, "hard": _est(80), "gap": _est(8)},
                          _with_preconditions(separated, {
                              learned_easy[0]: {"at_chance_easy": 1},
                              learned_hard[0]: {"float_hard": 70.0},
                              _HARDER[0]: {"dist_hard": 0.95}})),
              unit="points", headline=lambda v: v["gap"], caveat=caveat,
              where="fig1_phase_transition"),
        Claim(f"phase_transition_{dataset}",
              "Pruning the small weights of a binarized hard-task model gives a sharp phase "
              "transition in accuracy at a characteristic sparsity level.", paper["transition"],
              "each run's signed hard-pair accuracy vs the pruned fraction p (smallest |w|), "
              "every run: rise = max over p <= 0.7 minus the value at p = 0 (points; mean over "
              "runs, 95% t interval); over the runs whose rise reaches 25 points: width = "
              "p90 - p10 and the midpoint p50 (where a run covers 10%, 50%, 90% of its rise), "
              "the spread of p50 over those runs as a standard deviation with its 95% "
              "chi-square interval",
              f"mean rise >= {RISE:g} points (half the way from chance to a perfect model), "
              f"mean width <= {SHARP:g} (sharp: a quarter of the p axis at most) and the SD of "
              f"p50 over runs <= {LOCATION_SD:g} (a characteristic level: runs agree on where "
              "it happens), each beyond noise",
              lambda v: all(passes for passes, _ in _phase_margins(v)),
              preconditions=(learned_hard, (
                  f"the binarized hard model starts near chance (mean signed accuracy at "
                  f"p = 0 <= {NEAR_CHANCE:g}%)",
                  lambda v: v["signed_hard_p0"].mean <= NEAR_CHANCE)),
              beyond_noise=lambda v: every_test_settled(_phase_margins(v)),
              margins=_phase_estimates,
              cases=Cases(phase, {**phase, "level_sd": Spread(0.25, 8)},
                          _with_preconditions(phase, {
                              learned_hard[0]: {"at_chance_hard": 1},
                              (f"the binarized hard model starts near chance (mean signed "
                               f"accuracy at p = 0 <= {NEAR_CHANCE:g}%)"):
                                  {"signed_hard_p0": _est(80)}})),
              unit="of the p axis (width)", headline=lambda v: v["width"],
              caveat="headline: the width p90 - p10, which decides; width and p50 are "
                     "measured on the runs whose rise reaches 25 points (transition_runs)",
              where="fig1_phase_transition"),
        Claim(f"sign_structure_easy_{dataset}",
              "Keeping only the sign structure (null model B) keeps accuracy on easy tasks; "
              "sign-destroying shuffles A, C, D do not.", "",
              "accuracy (%) under null models at p = 0 (mean over draws) of each run, easy "
              "pair, every run; the mean over runs with its 95% t interval",
              "mean B >= 85% (within about 13 points of the unprobed models' 98%) and mean A, "
              "C, D <= 60% (within 10 points of chance), each beyond noise",
              **all_of(lambda v: [margin(v["B"], 85)]
                       + [margin(v[k], 60, at_least=False) for k in "ACD"]),
              preconditions=(learned_easy,),
              cases=Cases(signs, {**signs, "B": _est(70)},
                          _with_preconditions(signs, {learned_easy[0]: {"float_easy": 80.0}})),
              unit="%", headline=lambda v: v["B"], where="fig3_null_models"),
        Claim(f"hard_needs_magnitudes_{dataset}",
              "Hard tasks need magnitudes: shuffles that keep every weight's sign cost the hard "
              "pair more accuracy than the easy one.", "",
              "accuracy loss under a null model (unprobed - null, mean over draws) on the hard "
              "minus on the easy pair, paired by run, every run, for each sign-keeping null "
              "model B, E, F (points); the mean over runs with its 95% t interval",
              f"each of B, E and F: mean extra loss of the hard pair >= {GAIN:g} points, beyond "
              "noise (every sign-keeping shuffle, since each keeps the signs and moves the "
              "magnitudes)",
              **all_of(_magnitude_margins),
              preconditions=(learned_easy, learned_hard, _HARDER),
              cases=Cases(magnitudes, {**magnitudes, "E": _est(-3)},
                          _with_preconditions(magnitudes, {
                              learned_easy[0]: {"float_easy": 70.0},
                              learned_hard[0]: {"at_chance_hard": 2},
                              _HARDER[0]: {"dist_hard": 0.95}})),
              unit="points", headline=_smallest_null,
              caveat="headline: the null model (B, E or F) with the smallest extra loss, "
                     "which decides", where="fig3_null_models"),
        Claim(f"complexity_measure_{dataset}",
              "The gap between full-precision and binarized (Delta_bin) or shuffled "
              "(Delta_rand, null model B) accuracy measures task complexity: more similar class "
              "pairs, the harder tasks, have larger gaps.", "",
              "Spearman rho over the 45 class pairs between the pair's 1 - SSIM distance and "
              "its gap (mean over every run of the pair), for Delta_bin and for Delta_rand; "
              "95% t interval from a bootstrap over the ten classes and each pair's runs",
              "rho < 0 for both gaps, each beyond noise (the interval excludes 0: larger gaps "
              "for more similar pairs)",
              **all_of(lambda v: [margin(v["rho_bin"], 0, at_least=False),
                                  margin(v["rho_rand"], 0, at_least=False)]),
              preconditions=(_ALL_PAIRS,),
              cases=Cases(gaps, {**gaps, "rho_bin": _est(0.4, 0.1, 10)},
                          _with_preconditions(gaps, {_ALL_PAIRS[0]: {"at_chance": 1}})),
              unit="Spearman ρ", headline=lambda v: v["rho_bin"],
              caveat="difficulty = mean 1 - SSIM of random image pairs of the two classes "
                     "(small = similar = hard)", where=f"fig4_pair_heatmaps_{figures}"),
        Claim(f"measures_agree_{dataset}",
              "Delta_bin and Delta_rand agree as task-complexity measures over all 45 pairs.",
              paper["rho"], "Spearman rho(Delta_bin, Delta_rand) over the 45 class pairs (means "
              "over every run of a pair); 95% t interval from a bootstrap over the ten classes "
              "and each pair's runs",
              "rho >= 0.7 (a strong rank agreement), beyond noise",
              **all_of(lambda v: [margin(v["rho"], 0.7)]),
              preconditions=(_ALL_PAIRS,),
              cases=Cases(agree, {**agree, "rho": _est(0.3, 0.05, 10)},
                          _with_preconditions(agree, {_ALL_PAIRS[0]: {"pairs": 44}})),
              unit="Spearman ρ", headline=lambda v: v["rho"],
              where=f"fig4_pair_heatmaps_{figures}"),
    ], _DATASET_DECIDERS, dataset))


def _with_first_units(claims: list[Claim]) -> list[Claim]:
    """The phase transition's first registered version showed the rise, in points; its rule
    is unchanged, its headline is now the width that decides it."""
    import dataclasses

    return [dataclasses.replace(c, previous=(dataclasses.replace(c, unit="points"),))
            if c.id.startswith("phase_transition_") else c for c in claims]


def _with_room(value: dict) -> list[dict]:
    return [task for task in value.values() if task["start"] <= HEADROOM]


def _resonance_margins(value: dict) -> list[Estimate]:
    return [m for task in _with_room(value)
            for m in (margin(task["gain"], GAIN), margin(task["fall"], GAIN))]


def _resonant(value: dict) -> list[dict]:
    return [task for task in value.values() if task["noise_gain"].mean >= GAIN]


def _flip_margins(value: dict) -> list[Estimate]:
    return [m for task in _resonant(value)
            for m in (margin(task["noise_gain"], GAIN), margin(task["flip_gain"], GAIN))]


def _prune_margins(value: dict) -> list[Estimate]:
    return [margin(task["gain"], GAIN) for task in _with_room(value)]


def _smallest_gain(value: dict) -> Estimate | None:
    return min((task["gain"] for task in _with_room(value)), key=lambda e: e.mean, default=None)


_ROOM = (f"a signed model has room to gain (some task's mean signed accuracy at the smallest a "
         f"<= {HEADROOM:g}%)", lambda v: bool(_with_room(v)))
_BINARIZED_ROOM = (f"a binarized model has room to gain (some task's mean signed accuracy at "
                   f"p = 0 <= {HEADROOM:g}%)", _ROOM[1])
_SOME_RESONANCE = (f"some task shows stochastic resonance (mean noise gain >= {GAIN:g})",
                   lambda v: bool(_resonant(v)))
_RESONANCE_CASE = {"x/easy": {"peak": 0.125, "gain": _est(20), "fall": _est(30), "start": 60.0},
                   "x/hard": {"peak": 0.25, "gain": _est(1), "fall": _est(40), "start": 97.0}}
_FLIP_CASE = {"x/easy": {"noise_gain": _est(20), "flip_gain": _est(15), "flip_peak": 0.2},
              "x/hard": {"noise_gain": _est(1), "flip_gain": _est(0), "flip_peak": 0.1}}
_LAYERS_CASE = {"float": 85.0, "first": _est(30), "last_block_1": _est(5),
                "last_block_2": _est(2)}


def _as_estimate(x) -> Estimate:
    """A loss measured on one model is one replicate: no interval."""
    return x if isinstance(x, Estimate) else Estimate(float(x), math.nan, 1)


def _layer_margins(v: dict) -> list[Estimate]:
    """The first matrix's loss minus each last-block matrix's (independent models: the
    standard errors add in quadrature)."""
    first = _as_estimate(v["first"])
    out = []
    for key in ("last_block_1", "last_block_2"):
        last = _as_estimate(v[key])
        out.append(Estimate(first.mean - last.mean, math.hypot(first.se, last.se),
                            min(first.n, last.n)))
    return out


def _layer_claim(key: str, statement: str, paper: str, measure: str, trained: tuple,
                 unit: str, caveat: str = "", where: str = "", first: bool = True) -> Claim:
    """A layer-wise row; `first` keeps its first registered rule (no interval) beside it, which
    rows added after that rule was replaced never had."""
    failing_float = {"float": 0.1}
    cases = Cases(_LAYERS_CASE, {**_LAYERS_CASE, "first": _est(1, 0.1)},
                  {trained[0]: {**_LAYERS_CASE, **failing_float}})
    # the first registered rule compared one model's losses without an interval
    earlier = Claim(key, statement, paper, measure,
                    "the first matrix's loss > both last-block losses (one model: no interval)",
                    lambda v: min(m.mean for m in _layer_margins(v)) > 0,
                    preconditions=(trained,), cases=cases, unit=unit)
    return Claim(key, statement, paper, measure,
                 "the first matrix's loss > both last-block losses, beyond noise (one model "
                 "has no interval: within noise until the models are replicated)",
                 **all_of(_layer_margins), preconditions=(trained,), cases=cases,
                 unit=unit, headline=lambda v: v["first"], caveat=caveat, where=where,
                 previous=(earlier,) if first else ())


_STANDIN_TRAINED = (f"the stand-in learned its task (accuracy >= {STANDIN_TRAINED:g}%)",
                    lambda v: v["float"] >= STANDIN_TRAINED)
_DISTILBERT_TRAINED = (f"the model is accurate before probing (F1 >= {DISTILBERT_TRAINED:g})",
                       lambda v: v["float"] >= DISTILBERT_TRAINED)
_STANDIN_CAVEAT = ("one small ViT trained here on Fashion-MNIST, a stand-in for the paper's "
                   "DistilBERT; one model, so no interval")

CLAIMS: list[Claim] = [
    *_dataset_claims("fashion_mnist", {"binarize": "authors' code: easy ~83%, hard ~51%",
                                       "transition": "", "rho": ""}, "fashion_mnist"),
    *_dataset_claims("mnist", {"binarize": "hard ~50%",
                               "transition": "hard signed ~50% for p < 0.35, 92-96% by p ~ 0.5",
                               "rho": "0.96"}, MNIST_5K,
                     caveat="offline, MNIST is the 5,000-digit subset mnist-5k (200 test "
                            "images per pair)"),
    Claim("stochastic_resonance",
          "Moderate noise raises binarized accuracy (stochastic resonance): accuracy rises "
          "with the noise amplitude a, peaks, then falls.",
          "MNIST easy signed 54% -> 98.5% at a ~ 0.2-0.3",
          "per task: the peak a* of the mean-over-runs signed accuracy among the noise levels "
          "strictly between the smallest and the largest; per run, gain = accuracy at a* minus "
          "at the smallest a and fall = accuracy at a* minus at the largest a (points); the "
          "mean over every run with its 95% t interval",
          f"every task with room to gain (mean signed accuracy at the smallest a <= "
          f"{HEADROOM:g}%) has gain >= {GAIN:g} and fall >= {GAIN:g} points (an interior "
          "peak), each beyond noise",
          **all_of(_resonance_margins), preconditions=(_ROOM,),
          cases=Cases(_RESONANCE_CASE,
                      {**_RESONANCE_CASE, "x/easy": {**_RESONANCE_CASE["x/easy"],
                                                     "gain": _est(0.5, 0.2)}},
                      {_ROOM[0]: {k: {**v, "start": 97.0} for k, v in _RESONANCE_CASE.items()}}),
          unit="points", headline=_smallest_gain,
          caveat="headline: the smallest gain among tasks with room; a* is chosen on the same "
                 "runs' mean curve, which favours a gain",
          where="fig1_variants_fashion_mnist"),
    Claim("flips_mirror_noise",
          "The best sign-flip fraction improves signed accuracy where noise does.", "",
          "per task: [noise gain at the interior peak a* as in stochastic_resonance, flip gain "
          "at the interior peak q* of flipping the smallest |w| over q = 0] (points), the mean "
          "over every run with its 95% t interval",
          f"every task with mean noise gain >= {GAIN:g} has noise and flip gain >= {GAIN:g} "
          "points, each beyond noise",
          **all_of(_flip_margins), preconditions=(_SOME_RESONANCE,),
          cases=Cases(_FLIP_CASE,
                      {**_FLIP_CASE, "x/easy": {**_FLIP_CASE["x/easy"], "flip_gain": _est(0)}},
                      {_SOME_RESONANCE[0]: {"x/hard": _FLIP_CASE["x/hard"]}}),
          unit="points", headline=lambda v: min(
              (t["flip_gain"] for t in _resonant(v)), key=lambda e: e.mean, default=None),
          where="fig1_prune_noise_flip_fashion_mnist"),
    _layer_claim("transformer_layers_standin",
                 "Early layers are least robust, deep layers resilient (stand-in: ViT on "
                 "Fashion-MNIST, not the paper's model).", "DistilBERT: position embeddings "
                 "binarized F1 ~ 0 vs baseline 0.885",
                 "one model: accuracy loss (points) under sign of the first probed matrix "
                 "(patch embedding) and of the last block's two MLP matrices; float = "
                 "unprobed accuracy", _STANDIN_TRAINED, "points", _STANDIN_CAVEAT,
                 "fig5_layerwise_vit_standin"),
    _layer_claim("transformer_layers_pruned_standin",
                 "Early layers are fragile under pruning as well as binarization (stand-in: "
                 "ViT on Fashion-MNIST, not the paper's model).", "",
                 f"one model: accuracy loss (points) when the {LAYER_PRUNE:g} smallest-|w| "
                 "fraction of the first probed matrix (patch embedding) or of one of the last "
                 "block's two MLP matrices is pruned", _STANDIN_TRAINED, "points",
                 _STANDIN_CAVEAT, "fig5_layerwise_vit_standin"),
    Claim("pruning_improves_binarized",
          "Pruning the small-magnitude weights improves binarized models: sign(pruned W) is "
          "more accurate than sign(W).", "MNIST hard signed ~50% at p = 0, 92-96% by p ~ 0.5",
          "per dataset and task: the peak p* of the mean-over-runs signed accuracy (sign of the "
          "weights left after pruning the smallest-|w| fraction p) among the pruned fractions "
          "strictly between the smallest and the largest; per run, gain = accuracy at p* minus "
          "at p = 0 (points); the mean over every run with its 95% t interval",
          f"every task with room to gain (mean signed accuracy at p = 0 <= {HEADROOM:g}%) has "
          f"gain >= {GAIN:g} points, beyond noise",
          **all_of(_prune_margins), preconditions=(_BINARIZED_ROOM,),
          cases=Cases(_RESONANCE_CASE,
                      {**_RESONANCE_CASE, "x/easy": {**_RESONANCE_CASE["x/easy"],
                                                     "gain": _est(0.5, 0.2)}},
                      {_BINARIZED_ROOM[0]: {k: {**v, "start": 97.0}
                                            for k, v in _RESONANCE_CASE.items()}}),
          unit="points", headline=_smallest_gain,
          caveat="headline: the smallest gain among tasks with room; p* is chosen on the same "
                 "runs' mean curve, which favours a gain; the hard pair's transition is "
                 "phase_transition's rule", where="fig1_prune_noise_flip_fashion_mnist"),
    _layer_claim("transformer_layers_randomized_standin",
                 "Deep layers stay resilient when randomized, early ones do not (stand-in: ViT "
                 "on Fashion-MNIST, not the paper's model).", "",
                 f"one model: accuracy loss (points) when null model {RANDOMIZED} (magnitudes "
                 "shuffled among the weights of the same sign, the paper's randomization of "
                 "Δ_rand) randomizes the first probed matrix (patch embedding) or one of the "
                 "last block's two MLP matrices", _STANDIN_TRAINED, "points", _STANDIN_CAVEAT,
                 "fig5_layerwise_vit_standin", first=False),
    _layer_claim("transformer_layers_distilbert",
                 "Early layers are least robust, deep layers resilient (DistilBERT NER).",
                 "position embeddings and layer-0 lin1 binarized F1 ~ 0; classifier 0.887",
                 "entity-level F1 loss under sign of the position embeddings vs layer 5 "
                 "lin1/lin2", _DISTILBERT_TRAINED, "F1"),
    _layer_claim("transformer_layers_pruned_distilbert",
                 "Early layers are fragile under pruning as well as binarization "
                 "(DistilBERT NER).", "",
                 f"entity-level F1 loss when the {LAYER_PRUNE:g} smallest-|w| fraction of the "
                 "position embeddings or of layer 5 lin1/lin2 is pruned", _DISTILBERT_TRAINED,
                 "F1"),
    _layer_claim("transformer_layers_randomized_distilbert",
                 "Deep layers stay resilient when randomized, early ones do not (DistilBERT "
                 "NER).", "",
                 f"entity-level F1 loss when null model {RANDOMIZED} randomizes the position "
                 "embeddings or layer 5 lin1/lin2", _DISTILBERT_TRAINED, "F1",
                 caveat="full scale only (DistilBERT NER)", first=False),
]

# what decides each claim besides its rule: the functions that compute its value and the
# preset values they read (both in the claim's fingerprint)
_STANDIN = ((layer_drops,), ("standin_epochs", "standin_train", "standin_prune_levels"))
CLAIMS = declare(CLAIMS, {
    "stochastic_resonance": ((interior_peak, run_curves), ("noise_log2_levels", *_TRAINING)),
    "flips_mirror_noise": ((interior_peak, run_curves), ("flip_levels", "noise_log2_levels",
                                                         *_TRAINING)),
    "transformer_layers_standin": _STANDIN,
    "transformer_layers_pruned_standin": _STANDIN,
    "pruning_improves_binarized": ((interior_peak, run_curves), ("prune_levels", *_TRAINING)),
    "transformer_layers_randomized_standin": ((layer_drops,), ("standin_epochs",
                                                               "standin_train")),
    "transformer_layers_randomized_distilbert": ((layer_drops,), ("distilbert_model",)),
    "transformer_layers_distilbert": ((layer_drops,), ("distilbert_model",)),
    "transformer_layers_pruned_distilbert": ((layer_drops,), ("distilbert_model",)),
})
