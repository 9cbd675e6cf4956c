"""The method of random-label prediction: random labels, the RLP heads and their losses, and
the eval-mode measurements (accuracy, RLP accuracy, pooled features, class collapse)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from memlib import distributed
from memlib.models import SmallCNN, WideResNet, pool, taps
from memlib.seed import generator
from memlib.train import (
    Batch,
    to_device,
)

__all__ = [
    "random_labels", "head_labels", "HEAD_SEED_STRIDE", "log1m_softmax", "rlp_penalty",
    "make_head", "HeadSet", "RandomProjection", "PROJECTED", "RLPHeads", "feature_dims",
    "rlp_losses", "rlp_step", "EvalData", "eval_batches",
    "eval_loader", "EVAL_CHUNK", "eval_forward", "measure", "grid_pool", "pooled_features",
    "class_variance_ratio",
    "per_class_accuracy", "predictions", "PROBE_SEED_STRIDE", "label_draws", "train_probes",
    "train_probe_sets", "probe_accuracies"
]


def random_labels(num_samples: int, n_random: int, seed: int) -> torch.Tensor:
    """One random label per sample index of the full dataset, from a private generator.

    Index the result with a subset's original indices: the label of a sample never depends
    on which subset, shuffle or epoch it appears in.
    """
    if n_random < 2:
        raise ValueError(f"n_random must be >= 2, got {n_random}")
    return torch.randint(0, n_random, (num_samples,), generator=generator(seed))


HEAD_SEED_STRIDE = 104_729  # between the label seeds of a layer's successive heads (a prime)


def head_labels(num_samples: int, n_random: int, seed: int, heads: int) -> torch.Tensor:
    """(num_samples, heads) random labels by sample index of the full dataset: head j's from
    its own seed, seed + j * HEAD_SEED_STRIDE, so head 0 reads the one draw a single head
    would (`random_labels(num_samples, n_random, seed)`)."""
    return torch.stack([random_labels(num_samples, n_random, seed + j * HEAD_SEED_STRIDE)
                        for j in range(heads)], 1)


def log1m_softmax(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log(1 - softmax(logits)[target]) per row, stably:
    logsumexp over the other logits minus logsumexp over all of them."""
    # in float32 even under bf16 autocast: at p̂ ≈ 1/n the difference is ~1/n, far below
    # bf16's resolution of logsumexps of a few units (a no-op for float32/64 logits)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    others = logits.scatter(1, target[:, None], -math.inf)
    return torch.logsumexp(others, 1) - torch.logsumexp(logits, 1)


def rlp_penalty(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean of -log(1 - p̂_target): minimising it *lowers* the head's probability of r_i."""
    return -log1m_softmax(logits, target).mean()


def make_head(in_features: int, n_random: int, hidden: int = 0) -> nn.Module:
    """A linear head, or (hidden > 0) Linear-LayerNorm-ReLU-Linear; never BatchNorm, whose
    statistics would be updated twice per step (once per loss)."""
    if hidden <= 0:
        return nn.Linear(in_features, n_random)
    return nn.Sequential(nn.Linear(in_features, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                         nn.Linear(hidden, n_random))


class HeadSet(nn.Module):
    """K independent heads on one layer's pooled output, each predicting its own random
    labels: (B, d) -> (B, K, n_random). Head j is drawn after head j - 1 from the same
    stream, so a set of one is the single head of the paper, bit for bit."""

    def __init__(self, in_features: int, n_random: int, k: int = 1, hidden: int = 0):
        super().__init__()
        self.heads = nn.ModuleList(make_head(in_features, n_random, hidden) for _ in range(k))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([head(x) for head in self.heads], 1)


class RandomProjection(nn.Module):
    """A fixed Gaussian map from `d` to `k` dimensions (scaled by 1/sqrt(k), so norms are
    kept on average), stored as a buffer: never trained, never decayed."""

    def __init__(self, d: int, k: int, seed: int):
        super().__init__()
        weight = torch.randn(k, d, generator=generator(seed)) / math.sqrt(k)
        self.register_buffer("weight", weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T


PROJECTED = "proj__"


class RLPHeads(nn.ModuleDict):
    """K heads per probed layer name (a HeadSet; module names may contain dots, keys may
    not), head j of every layer predicting the j-th column of the random labels.

    With `project` > 0 every layer also gets a capacity-matched control head, which reads
    the layer through a fixed random projection to `project` dimensions: the same number of
    head parameters at every layer, so a trend over depth cannot come from layer width.
    Control heads are never regularized.
    """

    def __init__(self, dims: dict[str, int], n_random: int, hidden: int = 0,
                 project: int = 0, seed: int = 0, k: int = 1):
        heads = {_key(n): HeadSet(d, n_random, k, hidden) for n, d in dims.items()}
        if project > 0:
            heads.update({PROJECTED + _key(n): nn.Sequential(
                RandomProjection(d, project, seed + i), HeadSet(project, n_random, k, hidden))
                for i, (n, d) in enumerate(dims.items())})
        super().__init__(heads)
        self.layers = tuple(dims)
        self.project = project
        self.k = k

    def head(self, layer: str) -> nn.Module:
        """The layer's first head alone, (B, d) -> (B, n_random): the one that reads the
        first column of the random labels (a single head's draw)."""
        return self[_key(layer)].heads[0]

    def heads_of(self, layer: str) -> nn.Module:
        """The layer's K heads, (B, d) -> (B, K, n_random): head j reads column j of the
        random labels."""
        return self[_key(layer)]

    def probes(self) -> list[tuple[str, str, nn.Module]]:
        """(metric, layer, head set) of every layer: rlp_<layer>, then rlpproj_<layer>; each
        maps (B, d) to (B, K, n_random)."""
        out = [(f"rlp_{n}", n, self[_key(n)]) for n in self.layers]
        if self.project > 0:
            out += [(f"rlpproj_{n}", n, self[PROJECTED + _key(n)]) for n in self.layers]
        return out


def _key(layer: str) -> str:
    return layer.replace(".", "__")


@torch.no_grad()
def feature_dims(model: nn.Module, layers: Sequence[str], example: torch.Tensor) -> dict[str, int]:
    """Width of each layer's pooled representation, from one forward pass in eval mode."""
    was_training = model.training
    model.eval()
    with taps(model, layers) as outs:
        model(example[:2])
    model.train(was_training)
    return {n: pool(outs[n]).shape[1] for n in layers}


def rlp_losses(features: dict[str, torch.Tensor], heads: RLPHeads, r: torch.Tensor,
               reg_layers: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(L_rnd, L_reg) summed over layers, from the live tapped outputs; `r` holds the
    batch's random labels, one column per head (B, K), or (B,) for one head.

    L_rnd sees detached features: only the heads learn from it. It is the sum of the K
    heads' mean cross-entropies, so each head gets the gradient it would get alone. L_reg
    runs the heads with detached parameters (functional_call): only the extractor learns
    from it. It is the *mean* of the K heads' penalties: the extractor is pushed to hide
    every head's labels, with the strength λ gives a single head, so λ means what it means
    in the paper (at K = 1 both losses are the single head's).
    """
    r = r[:, None] if r.ndim == 1 else r
    k = r.shape[1]
    l_rnd = l_reg = features[heads.layers[0]].new_zeros(())
    for metric, layer, head in heads.probes():
        f = pool(features[layer])
        logits = head(f.detach())
        l_rnd = l_rnd + k * F.cross_entropy(logits.flatten(0, 1), r.flatten())
        if layer in reg_layers and metric == f"rlp_{layer}":
            frozen = {name: v.detach() for name, v in head.named_parameters()}
            live = torch.func.functional_call(head, frozen, (f,))
            l_reg = l_reg + rlp_penalty(live.flatten(0, 1), r.flatten())
    return l_rnd, l_reg


def rlp_step(heads: RLPHeads, random: torch.Tensor, lam: float = 0.0,
             reg_layers: Sequence[str] = (), label_smoothing: float = 0.0):
    """A `memlib.train` step: L_class + L_rnd + λ L_reg; `random[idx]` are the batch's random
    labels (one column per head)."""
    reg_layers = tuple(reg_layers) if lam > 0 else ()

    def step(model: nn.Module, batch) -> torch.Tensor:
        x, y, idx = batch
        with taps(model, heads.layers) as outs:
            logits = model(x)
        l_rnd, l_reg = rlp_losses(outs, heads, random[idx], reg_layers)
        loss = F.cross_entropy(logits, y, label_smoothing=label_smoothing) + l_rnd
        return loss + lam * l_reg if reg_layers else loss

    return step


EvalData = tuple[torch.Tensor, ...] | Iterable[Batch]


def eval_batches(data: EvalData, batch_size: int = 2048, shard: bool = True
                 ) -> Iterator[Batch]:
    """(x, y, idx) batches in order. `data` is in-memory (x, y) or (x, y, idx) tensors (idx
    default: positions), sliced here, under torch.distributed to this rank's every
    world-th sample unless `shard` is False; or an iterable of batches, e.g. `eval_loader`'s
    (sharded, or not, when it was made)."""
    if not isinstance(data, tuple):
        yield from data
        return
    x, y, *rest = data
    idx = rest[0] if rest else torch.arange(len(y), device=y.device)
    rank, world = distributed.rank(), distributed.world_size()
    if shard and world > 1:
        x, y, idx = x[rank::world], y[rank::world], idx[rank::world]
    for start in range(0, len(y), batch_size):
        sl = slice(start, start + batch_size)
        yield x[sl], y[sl], idx[sl]


def eval_loader(dataset, batch_size: int, workers: int = 0, shard: bool = True):
    """Ordered batches of a dataset yielding (x, y, idx) (memlib.imagenet with the eval
    transform; workers start per pass, none idle between epochs). Sharded: this rank's every
    world-th sample and none twice (a DistributedSampler would pad with repeats), so
    all-reduced sums count each sample once."""
    from torch.utils.data import DataLoader, Subset

    rank, world = distributed.rank(), distributed.world_size()
    if shard and world > 1:
        dataset = Subset(dataset, range(rank, len(dataset), world))
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=workers,
                      pin_memory=torch.cuda.is_available())


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


# images per forward pass inside an evaluation batch of a convolutional model: a SmallCNN's
# first block alone holds 205 MB for 2,048 images, far beyond the CPU's caches, and 128 at a
# time run the passes about twice as fast. Each image's outputs are the same bits in a
# chunk as in the whole batch (tests/test_same_bits.py); sums and argmaxes still run over the
# whole batch, so every result is unchanged. Not the MLP: its matrix products of another
# shape may add in another order on another machine.
EVAL_CHUNK = 128
CHUNKED = (SmallCNN, WideResNet)


def eval_forward(model: nn.Module, x: torch.Tensor, layers: Sequence[str] = (),
                 pooling=pool) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The logits of `x` and each tapped layer's output pooled per image (`pooling`), as one
    forward pass of the whole batch gives them; a convolutional model (`CHUNKED`) forwards
    `EVAL_CHUNK` images at a time."""
    size = EVAL_CHUNK if isinstance(getattr(model, "module", model), CHUNKED) else len(x)
    logits, pooled = [], {n: [] for n in layers}
    for start in range(0, len(x), size) if len(x) > size else (0,):
        with taps(model, layers) as outs:
            logits.append(model(x[start:start + size] if len(x) > size else x))
        for n in layers:
            pooled[n].append(pooling(outs[n]))
    if len(logits) == 1:
        return logits[0], {n: p[0] for n, p in pooled.items()}
    return torch.cat(logits), {n: torch.cat(p) for n, p in pooled.items()}


@torch.no_grad()
def measure(model: nn.Module, heads: RLPHeads | None, data: EvalData,
            random: torch.Tensor | None = None, batch_size: int = 2048,
            labels: dict[str, torch.Tensor] | None = None) -> dict[str, float]:
    """Eval-mode accuracy and mean cross-entropy on `data` and, with `heads`, each layer's
    head accuracy on the random labels `random[idx]` (one column per head; the mean over
    the layer's K heads); for each `labels` entry (labels by sample
    position, -1 where a sample does not count), the accuracy "acc_<name>" against them
    over the samples that count (NaN: none), from the same forward pass. Sums are
    all-reduced over ranks."""
    layers = heads.layers if heads is not None else ()
    probes = heads.probes() if heads is not None else []
    targets = labels or {}
    was_training = model.training
    model.eval()
    device = _device(model)
    sums = torch.zeros(3 + 2 * len(probes) + 2 * len(targets), dtype=torch.float64,
                       device=device)
    for batch in eval_batches(data, batch_size):
        x, y, idx = to_device(batch, device)
        logits, pooled = eval_forward(model, x, layers)
        predicted = logits.argmax(1)
        r = random[idx][:, None] if random is not None and random.ndim == 1 else (
            random[idx] if random is not None else None)
        hits, penalties = [], []
        for _, layer, head in probes:
            guess = head(pooled[layer])
            # each layer's hits and penalty averaged over its heads: the mean head's
            hits.append((guess.argmax(-1) == r).double().mean(1).sum())
            penalties.append(-log1m_softmax(guess.flatten(0, 1), r.flatten())
                             .view(r.shape).double().mean(1).sum())
        hits += penalties
        for target in targets.values():
            t = target.to(device)[idx]
            hits += [(predicted == t).sum(), (t >= 0).sum()]
        sums += torch.stack([(predicted == y).sum(), torch.tensor(len(y), device=device),
                             F.cross_entropy(logits.float(), y, reduction="sum"), *hits])
    model.train(was_training)
    correct, n, loss, *rest = distributed.all_sum(sums.tolist())
    hits, penalties = rest[:len(probes)], rest[len(probes):2 * len(probes)]
    counts = rest[2 * len(probes):]
    n = max(1.0, n)
    return {"acc": correct / n, "loss": loss / n,
            **{metric: h / n for (metric, _, _), h in zip(probes, hits, strict=True)},
            # the penalty -log(1 - p̂) each layer's heads would put on the extractor: what the
            # RLP regularizer lowers, the check that it acted
            **{"pen" + metric.removeprefix("rlp"): p / n
               for (metric, _, _), p in zip(probes, penalties, strict=True)},
            **{f"acc_{name}": (right / count if count else math.nan)
               for name, right, count in zip(targets, counts[::2], counts[1::2], strict=True)}}


def grid_pool(feature: torch.Tensor, grid: int = 1) -> torch.Tensor:
    """A vector per example: a conv map (N,C,H,W) averaged over a grid x grid partition of
    its plane (C * grid^2 values, channel-major; grid 1 is global average pooling), any
    other output as `memlib.models.pool` gives it. Spatial cells keep some of what global
    pooling averages away, so a linear probe on an early layer has room to read it."""
    if feature.ndim == 4 and grid > 1:
        return F.adaptive_avg_pool2d(feature, grid).flatten(1)
    return pool(feature)


@torch.no_grad()
def pooled_features(model: nn.Module, data: EvalData, layers: Sequence[str],
                    batch_size: int = 2048, grid: int = 1) -> dict[str, torch.Tensor]:
    """Every sample's pooled eval-mode features (`grid_pool`), on every rank (not
    sharded)."""
    was_training = model.training
    model.eval()
    device = _device(model)
    parts: dict[str, list[torch.Tensor]] = {n: [] for n in layers}
    for batch in eval_batches(data, batch_size, shard=False):
        _, pooled = eval_forward(model, to_device(batch, device)[0], layers,
                                 functools.partial(grid_pool, grid=grid))
        for n in layers:
            parts[n].append(pooled[n])
    model.train(was_training)
    return {n: torch.cat(p) for n, p in parts.items()}


@torch.no_grad()
def predictions(model: nn.Module, data: EvalData, batch_size: int = 2048
                ) -> tuple[torch.Tensor, dict[str, float]]:
    """Every sample's eval-mode predicted class, in order, on every rank (not sharded), and
    `measure`'s accuracy and mean cross-entropy from the same forward pass (the same sums):
    the stored test predictions give any subset's accuracy after the fact, and a run's last
    test row costs no second pass over the test set."""
    was_training = model.training
    model.eval()
    device = _device(model)
    out, sums = [], torch.zeros(3, dtype=torch.float64, device=device)
    for batch in eval_batches(data, batch_size, shard=False):
        x, y, _ = to_device(batch, device)
        logits = eval_forward(model, x)[0]
        out.append(logits.argmax(1))
        sums += torch.stack([(out[-1] == y).sum(), torch.tensor(len(y), device=device),
                             F.cross_entropy(logits.float(), y, reduction="sum")])
    model.train(was_training)
    correct, n, loss = sums.tolist()
    n = max(1.0, n)
    return torch.cat(out), {"acc": correct / n, "loss": loss / n}


def class_variance_ratio(features: torch.Tensor, labels: torch.Tensor) -> float:
    """tr(Σ_within) / tr(Σ_between) of `features` grouped by `labels` (float64).

    Small values mean each class has collapsed toward its mean (neural collapse): what is
    left to tell samples of a class apart, and hence to predict their random labels, is small
    compared with what tells the classes apart.
    """
    f = features.double().flatten(1)
    classes = labels.unique()
    means = torch.stack([f[labels == c].mean(0) for c in classes])
    within = sum(((f[labels == c] - m) ** 2).sum() for c, m in zip(classes, means,
                                                                     strict=True))
    counts = torch.stack([(labels == c).sum() for c in classes]).double()
    between = (counts[:, None] * (means - f.mean(0)) ** 2).sum()
    return float(within / between) if between > 0 else math.inf


@torch.no_grad()
def per_class_accuracy(model: nn.Module, data: EvalData, num_classes: int,
                       batch_size: int = 2048) -> list[float]:
    """Eval-mode accuracy of each class (0 for a class without samples), all-reduced."""
    was_training = model.training
    model.eval()
    device = _device(model)
    sums = torch.zeros(2, num_classes, dtype=torch.float64, device=device)
    for batch in eval_batches(data, batch_size):
        x, y, _ = to_device(batch, device)
        pred = eval_forward(model, x)[0].argmax(1)
        sums[0] += torch.bincount(y[pred == y], minlength=num_classes)
        sums[1] += torch.bincount(y, minlength=num_classes)
    model.train(was_training)
    correct, counts = torch.tensor(distributed.all_sum(sums.flatten().tolist())).view(2, -1)
    return (correct / counts.clamp(min=1)).tolist()



# post-hoc random-label probes: many linear probes per layer, trained after the fact on stored
# features, each with its own random-label draw and initialisation. Nothing penalizes them,
# so unlike the concurrent heads (which the regularizer acts through) they read what the
# features hold, and their mean over draws removes most of one head's noise.

PROBE_SEED_STRIDE = 7919  # between the label seeds of successive draws (a prime)


def label_draws(index: torch.Tensor, n_random: int, seed: int, k: int,
                num_samples: int | None = None) -> torch.Tensor:
    """(k, len(index)) random labels: draw j keyed by the samples' original `index` in a
    dataset of `num_samples` (default: max(index) + 1; pass the dataset size so that a
    subset's labels do not depend on which samples it holds), from its own seed
    seed + (j + 1) * PROBE_SEED_STRIDE."""
    size = int(index.max()) + 1 if num_samples is None else num_samples
    return torch.stack([random_labels(size, n_random, seed + (j + 1) * PROBE_SEED_STRIDE)[index]
                        for j in range(k)])


def _standardized(features: torch.Tensor) -> torch.Tensor:
    x = features.float()
    return (x - x.mean(0)) / x.std(0).clamp(min=1e-6)


def _initial(d: int, n_random: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """k probes' initial (weight (k, d, n_random), bias (k, n_random)), probe j drawn from its
    own generator (seed + j) as nn.Linear draws them."""
    bound = 1 / math.sqrt(d)
    init = torch.stack([torch.rand(d * n_random + n_random, generator=generator(seed + j))
                        * 2 - 1 for j in range(k)]) * bound
    return init[:, :d * n_random].reshape(k, d, n_random), init[:, d * n_random:]


# the most feature values one batched probe training holds at once (float32: 512 MB); larger
# sets train in groups
PROBE_CHUNK = 2 ** 27


def train_probe_sets(feature_sets: Sequence[torch.Tensor], labels: torch.Tensor,
                     n_random: int, epochs: int, lr: float, batch_size: int,
                     seed: int) -> list[torch.Tensor]:
    """`train_probes` on each of several feature sets (the layers of a run and its stored
    epochs), trained together as one batch of independent probes: each set's features are
    standardized and zero-padded to the widest set, its probes start from the same draws as
    alone (padded weights start at zero and, seeing zero inputs, get zero gradients and stay
    there) and every set shares the one batch order, so each set's accuracies are those of
    `train_probes` on it, up to the summation order of floating point. Batching is the point:
    one optimizer step over every set instead of one per set, which on a CPU is what probe
    training costs (a step over a small probe is mostly fixed overhead)."""
    k, n = labels.shape
    for f in feature_sets:
        if f.shape[0] != n:
            raise ValueError(f"{f.shape[0]} feature rows for {n} labels")
    width = max(f.shape[1] for f in feature_sets)
    group = max(1, PROBE_CHUNK // (n * width))
    if len(feature_sets) > group:
        return [acc for start in range(0, len(feature_sets), group)
                for acc in train_probe_sets(feature_sets[start:start + group], labels,
                                            n_random, epochs, lr, batch_size, seed)]
    sets = len(feature_sets)
    x = torch.zeros(sets, n, width)
    weight = torch.zeros(sets, k, width, n_random)
    bias = torch.zeros(sets, k, n_random)
    inits = {}
    for i, f in enumerate(feature_sets):
        d = f.shape[1]
        x[i, :, :d] = _standardized(f)
        if d not in inits:
            inits[d] = _initial(d, n_random, k, seed)
        weight[i, :, :d], bias[i] = inits[d]
    weight.requires_grad_()
    bias.requires_grad_()
    target = labels.expand(sets, k, n)
    optimizer = torch.optim.Adam([weight, bias], lr=lr)
    order = generator(seed)
    with torch.enable_grad():
        for _ in range(epochs):
            for batch in torch.randperm(n, generator=order).split(batch_size):
                logits = torch.einsum("sbd,skdc->skbc", x[:, batch], weight) + bias[..., None, :]
                # the sum over probes of each probe's mean loss: every probe's gradient is
                # that of its own mean, as when trained alone
                loss = F.cross_entropy(logits.reshape(-1, n_random),
                                       target[:, :, batch].reshape(-1)) * (sets * k)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    with torch.no_grad():
        logits = torch.einsum("snd,skdc->sknc", x, weight) + bias[..., None, :]
        accuracy = (logits.argmax(-1) == target).double().mean(-1)
    return list(accuracy)


def train_probes(features: torch.Tensor, labels: torch.Tensor, n_random: int, epochs: int,
                 lr: float, batch_size: int, seed: int) -> torch.Tensor:
    """Each probe's training accuracy (k values in [0, 1]) after `epochs` of Adam on
    (features, labels[j]): k linear probes trained at once on the same standardized features
    (float32; features may be stored in float16), probe j initialised from its own generator
    (seed + j) as nn.Linear is, all sharing one batch order (seed). Accuracy is read on the
    training samples themselves: on unseen samples random labels are chance by
    construction."""
    return train_probe_sets([features], labels, n_random, epochs, lr, batch_size, seed)[0]


def probe_accuracies(stored: dict, labels: torch.Tensor, n_random: int, epochs: int,
                     lr: float, batch_size: int, seed: int) -> dict:
    """`train_probes` on every layer's features of every stored epoch ({epoch: {layer:
    features}}), with the same draws and initial seeds, all trained in one batch
    (`train_probe_sets`): {epoch: {layer: the k probes' accuracies}}."""
    keys = [(epoch, layer) for epoch, layers in stored.items() for layer in layers]
    accuracies = train_probe_sets([stored[e][layer] for e, layer in keys], labels, n_random,
                                  epochs, lr, batch_size, seed)
    out: dict = {epoch: {} for epoch in stored}
    for (epoch, layer), acc in zip(keys, accuracies):
        out[epoch][layer] = acc.tolist()
    return out
