"""Random-label prediction (RLP) heads: measuring and regularizing memorization.

Becker, Konrad, Garcia Rodriguez, Risse, "Random Label Prediction Heads for Studying
Memorization in Deep Neural Networks" (ICLR 2026; arXiv 2411.19640).

Every training sample gets a fixed random label r_i, drawn once from `n_random` classes and
keyed by its index in the full dataset. A linear head on the pooled output of a named layer
learns r_i from *detached* features (L_rnd); its training accuracy in eval mode measures how
much sample-specific information that layer carries. The regularizer L_reg = -λ log(1 - p̂_r)
uses the head with *detached* parameters, so only the extractor learns to hide r_i.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import pandas as pd
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from torch import nn

from memlib import data as datasets
from memlib import distributed, imagenet
from memlib.claims import (
    Cases,
    Claim,
    Estimate,
    all_of,
    any_of,
    declare,
    earlier_version,
    margin,
    paired,
)
from memlib.config import (
    SEED_MAX,
    AtLeast,
    AtMost,
    Distinct,
    Domain,
    Fraction,
    MinLength,
    NonEmpty,
    NonNegative,
    Positive,
    Rate,
    check,
    check_fields,
    check_stratified,
)
from memlib.models import build, pool, taps, unknown_model
from memlib.runs import TRAINING, computation, compute_missing
from memlib.seed import generator, seed_everything
from memlib.train import (
    Batch,
    FitCriterion,
    TensorBatches,
    TrainSpec,
    check_device,
    dataset_batches,
    fit_tracker,
    make_optimizers,
    resolve_device,
    to_device,
    train,
)

REGULARIZED = ("last", "all")
FOLDER_DATASETS = ("imagenet", "imagenet_lt")  # images stay on disk, read by a DataLoader
STANDARD_REGULARIZERS = ("dropout", "weight_decay", "label_smoothing")


# --- the method ---------------------------------------------------------------------------


def random_labels(num_samples: int, n_random: int, seed: int) -> torch.Tensor:
    """One random label per sample index of the full dataset, from a private generator.

    Index the result with a subset's original indices: the label of a sample never depends
    on which subset, shuffle or epoch it appears in.
    """
    if n_random < 2:
        raise ValueError(f"n_random must be >= 2, got {n_random}")
    return torch.randint(0, n_random, (num_samples,), generator=generator(seed))


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
    """One head per probed layer name (module names may contain dots, keys may not).

    With `project` > 0 every layer also gets a capacity-matched control head, which reads
    the layer through a fixed random projection to `project` dimensions: the same number of
    head parameters at every layer, so a trend over depth cannot come from layer width.
    Control heads are never regularized.
    """

    def __init__(self, dims: dict[str, int], n_random: int, hidden: int = 0,
                 project: int = 0, seed: int = 0):
        heads = {_key(n): make_head(d, n_random, hidden) for n, d in dims.items()}
        if project > 0:
            heads.update({PROJECTED + _key(n): nn.Sequential(
                RandomProjection(d, project, seed + i), make_head(project, n_random, hidden))
                for i, (n, d) in enumerate(dims.items())})
        super().__init__(heads)
        self.layers = tuple(dims)
        self.project = project

    def head(self, layer: str) -> nn.Module:
        return self[_key(layer)]

    def probes(self) -> list[tuple[str, str, nn.Module]]:
        """(metric, layer, head) of every head: rlp_<layer>, then rlpproj_<layer>."""
        out = [(f"rlp_{n}", n, self.head(n)) for n in self.layers]
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
    """(L_rnd, L_reg) summed over layers, from the live tapped outputs.

    L_rnd sees detached features: only the heads learn from it. L_reg runs the head with
    detached parameters (functional_call): only the extractor learns from it.
    """
    l_rnd = l_reg = features[heads.layers[0]].new_zeros(())
    for metric, layer, head in heads.probes():
        f = pool(features[layer])
        l_rnd = l_rnd + F.cross_entropy(head(f.detach()), r)
        if layer in reg_layers and metric == f"rlp_{layer}":
            frozen = {k: v.detach() for k, v in head.named_parameters()}
            l_reg = l_reg + rlp_penalty(torch.func.functional_call(head, frozen, (f,)), r)
    return l_rnd, l_reg


def rlp_step(heads: RLPHeads, random: torch.Tensor, lam: float = 0.0,
             reg_layers: Sequence[str] = (), label_smoothing: float = 0.0):
    """A `memlib.train` step: L_class + L_rnd + λ L_reg; `random[idx]` are the batch's labels."""
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


@torch.no_grad()
def measure(model: nn.Module, heads: RLPHeads | None, data: EvalData,
            random: torch.Tensor | None = None, batch_size: int = 2048,
            labels: dict[str, torch.Tensor] | None = None) -> dict[str, float]:
    """Eval-mode accuracy and mean cross-entropy on `data` and, with `heads`, each head's
    accuracy on the random labels `random[idx]`; for each `labels` entry (labels by sample
    position, -1 where a sample does not count), the accuracy "acc_<name>" against them
    over the samples that count (NaN: none), from the same forward pass. Sums are
    all-reduced over ranks."""
    layers = heads.layers if heads is not None else ()
    probes = heads.probes() if heads is not None else []
    targets = labels or {}
    was_training = model.training
    model.eval()
    device = _device(model)
    sums = torch.zeros(3 + len(probes) + 2 * len(targets), dtype=torch.float64, device=device)
    for batch in eval_batches(data, batch_size):
        x, y, idx = to_device(batch, device)
        with taps(model, layers) as outs:
            logits = model(x)
        predicted = logits.argmax(1)
        hits = [(head(pool(outs[layer])).argmax(1) == random[idx]).sum()
                for _, layer, head in probes]
        for target in targets.values():
            t = target.to(device)[idx]
            hits += [(predicted == t).sum(), (t >= 0).sum()]
        sums += torch.stack([(predicted == y).sum(), torch.tensor(len(y), device=device),
                             F.cross_entropy(logits.float(), y, reduction="sum"), *hits])
    model.train(was_training)
    correct, n, loss, *rest = distributed.all_sum(sums.tolist())
    hits, counts = rest[:len(probes)], rest[len(probes):]
    n = max(1.0, n)
    return {"acc": correct / n, "loss": loss / n,
            **{metric: h / n for (metric, _, _), h in zip(probes, hits, strict=True)},
            **{f"acc_{name}": (right / count if count else math.nan)
               for name, right, count in zip(targets, counts[::2], counts[1::2], strict=True)}}


@torch.no_grad()
def pooled_features(model: nn.Module, data: EvalData, layers: Sequence[str],
                    batch_size: int = 2048) -> dict[str, torch.Tensor]:
    """Every sample's pooled eval-mode features, on every rank (not sharded)."""
    was_training = model.training
    model.eval()
    device = _device(model)
    parts: dict[str, list[torch.Tensor]] = {n: [] for n in layers}
    for batch in eval_batches(data, batch_size, shard=False):
        with taps(model, layers) as outs:
            model(to_device(batch, device)[0])
        for n in layers:
            parts[n].append(pool(outs[n]))
    model.train(was_training)
    return {n: torch.cat(p) for n, p in parts.items()}


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
        pred = model(x).argmax(1)
        sums[0] += torch.bincount(y[pred == y], minlength=num_classes)
        sums[1] += torch.bincount(y, minlength=num_classes)
    model.train(was_training)
    correct, counts = torch.tensor(distributed.all_sum(sums.flatten().tolist())).view(2, -1)
    return (correct / counts.clamp(min=1)).tolist()


# --- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    dataset: Literal["fashion_mnist", "mnist", "mnist-5k", "cifar10", "cifar100", "digits",
                     "imagenet", "imagenet_lt"] = "fashion_mnist"
    # class-stratified subset of the train split; None: all
    train_samples: Annotated[int | None, AtLeast(20), AtMost(10**7)] = 4000
    test_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = 2000
    # class-stratified samples of the train split held out of training, with their clean
    # labels: the validation set on which every "best λ" is chosen (never the test set)
    validation_samples: Annotated[int, Positive, AtMost(10**7)] = 500
    # train accuracy and RLP accuracy on a fixed class-stratified subset of the training
    # samples (None: all of them); an estimate that spares ImageNet a second pass per epoch
    measure_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = None
    model: str = "mlp"  # the default model of every sweep
    # MLP
    widths: Annotated[tuple[int, ...], MinLength(2), Positive, AtMost(2**16)] = (128, 128, 128, 128)
    # SmallCNN
    cnn_channels: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**14)] = (16, 32, 64)
    wrn_depth: Annotated[int, Domain(lambda d: d >= 10 and (d - 4) % 6 == 0,
                                     "6n + 4 with n >= 1 (10, 16, 22, 28...)"), AtMost(1000)] = 16
    wrn_width: Annotated[int, Positive, AtMost(64)] = 4
    # blocks of every ViT; None: the model's
    vit_depth: Annotated[int | None, Positive, AtMost(1000)] = None
    layer_models: Annotated[tuple[str, ...], NonEmpty] = ("mlp", "smallcnn", "vit_tiny")
    # epochs for layer_models other than model
    layer_model_epochs: Annotated[int, Positive, AtMost(10**4)] = 8
    n_random: Annotated[int | None, AtLeast(2), AtMost(10**5)] = None  # None: the number of classes
    head_hidden: Annotated[int, NonNegative, AtMost(2**16)] = 0  # 0: linear heads
    # > 0: also a capacity-matched control head per layer, reading it through a fixed random
    # projection to this many dimensions (rlpproj_<layer>)
    head_project: Annotated[int, NonNegative, AtMost(2**16)] = 0
    head_lr: Annotated[float | None, Positive] = 1e-2  # None: lr
    epochs: Annotated[int, Positive, AtMost(10**4)] = 20
    # epochs between measurements of train/test/RLP accuracy (and always the last)
    measure_every: Annotated[int, Positive, AtMost(10**4)] = 1
    # training runs computed at once, each in its own process on one CPU thread (1: all in
    # this process; ignored under torchrun)
    parallel_runs: Annotated[int, Positive, AtMost(256)] = 1
    batch_size: Annotated[int, Positive, AtMost(2**20)] = 128
    optimizer: Literal["sgd", "adam", "adamw", "muon"] = "adam"
    lr: Annotated[float, Positive] = 2e-3
    momentum: Annotated[float, Rate] = 0.9
    weight_decay: Annotated[float, NonNegative] = 0.0  # extractor and task head; RLP heads never
    schedule: Literal["constant", "cosine", "warmup_cosine"] = "constant"
    warmup_epochs: Annotated[float, NonNegative, AtMost(10**4)] = 0.0
    dropouts: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.1, 0.3, 0.5)
    weight_decays: Annotated[tuple[float, ...], NonEmpty, NonNegative] = (1e-4, 1e-3, 1e-2)
    label_smoothings: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.1, 0.2, 0.3)
    # λ > 0 of the sweep (λ = 0 always runs): last-layer regularization, and all-layer
    # regularization (None: the same values), whose penalty sums over every probed layer and
    # so stops a network from training at a smaller λ
    lambdas: Annotated[tuple[float, ...], NonEmpty, Positive] = (1.0, 10.0, 100.0)
    all_lambdas: Annotated[tuple[float, ...] | None, NonEmpty, Positive] = None
    fractions: Annotated[tuple[float, ...], NonEmpty, Fraction] = (0.1, 0.3, 1.0)  # of train
    long_tail_ratio: Annotated[float, AtLeast(1)] = 10.0  # largest / smallest class size
    # the sampling experiment (fractions x {0, best λ}, long tail x {0, best λ}), at its own
    # label noise: the paper's claims about well- and under-sampled data are about clean labels
    sampling_experiment: bool = True
    sampling_noise: Annotated[float, Rate] = 0.0
    # label-noise rate of the default setting (every experiment but the noise sweep)
    noise: Annotated[float, Rate] = 0.0
    noise_rates: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.2, 0.4)
    noise_lambdas: Annotated[tuple[float, ...], NonEmpty, Positive] = (1.0, 10.0)
    # every condition runs once per seed
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (
        0, 1, 2)
    label_seed: Annotated[int, NonNegative, AtMost(SEED_MAX)] = 12345
    data_seed: Annotated[int, NonNegative, AtMost(SEED_MAX)] = 0
    device: str = "cpu"  # "cpu", "cuda", "cuda:N", "mps" or "auto" (cuda when available)
    # image folders (imagenet, imagenet_lt) only: the crop size and DataLoader worker processes
    image_size: Annotated[int, AtLeast(8), AtMost(4096)] = 224
    workers: Annotated[int, NonNegative, AtMost(256)] = 8
    precision: Literal["fp32", "bf16"] = "fp32"  # bf16: autocast the training forward pass
    channels_last: bool = False  # NHWC convolutions: faster on GPUs, and on CPUs with oneDNN
    fused_optimizer: bool = True  # Adam/AdamW in one fused kernel per step (memlib.train)
    # in-memory images: seeded batched crop + flip, + cutout (memlib.augment); image folders
    # bring their own (random-resized crop + flip). RLP accuracy is measured without it.
    augment: Literal["none", "crop_flip", "cifar_cutout"] = "none"
    # in-memory images: standardized by the training split's per-channel statistics, or the
    # stored [0, 1] pixels; image folders bring their own normalization
    inputs: Literal["standardized", "unit"] = "standardized"
    # the declared fit of every run (memlib.train.FitCriterion): train accuracy and the fit of
    # the flipped labels, checked at every measured epoch (`measure_every`) on the measured
    # training samples; `epochs` (and `layer_model_epochs`) are the maximum, and with
    # `epochs_after_fit` a run stops at the first measured epoch that many epochs after its
    # fit (None: every run trains all its epochs, the fit only recorded)
    fit_train_acc: Annotated[float, Fraction] = 0.99
    fit_flipped_acc: Annotated[float, Fraction] = 0.95
    epochs_after_fit: Annotated[int | None, NonNegative, AtMost(10**4)] = None

    def __post_init__(self):
        check_fields(self)
        check_device(self.device)
        for name in (self.model, *self.layer_models):
            problem = unknown_model(name)
            check(problem is None, problem)
        check(self.model in self.layer_models,
              f"layer_models {self.layer_models} must include model {self.model!r}")
        self._check_sample_counts()

    def _check_sample_counts(self) -> None:
        """Every class-stratified count covers the classes, and the long tail leaves its rarest
        class a sample (image folders' classes are known only on disk: checked as they load)."""
        classes = datasets.NUM_CLASSES.get(self.dataset)
        if classes is None:
            return
        for name in ("train_samples", "test_samples", "validation_samples", "measure_samples"):
            check_stratified(name, getattr(self, name), classes, self.dataset)
        size = datasets.TRAIN_SIZES[self.dataset]
        check(self.validation_samples < size, f"validation_samples={self.validation_samples} "
              f"leaves none of the {size} training images of {self.dataset} to train on")
        pool = min(self.train_samples or size, size - self.validation_samples)
        most = pool // classes  # the smallest class holds no more
        check(self.long_tail_ratio <= most,
              f"long_tail_ratio={self.long_tail_ratio:g} exceeds the {most} samples of the "
              f"smallest of the {classes} classes in {pool} training samples, so the long "
              "tail's rarest class would be empty")


@dataclass(frozen=True)
class RunSpec:
    """Everything one training run depends on: its cache key."""

    dataset: str
    train_samples: int | None
    test_samples: int | None
    validation_samples: int
    model: str
    widths: tuple[int, ...]
    cnn_channels: tuple[int, ...]
    wrn_depth: int
    wrn_width: int
    vit_depth: int | None
    n_random: int | None
    head_hidden: int
    head_lr: float | None
    epochs: int
    batch_size: int
    optimizer: str
    lr: float
    momentum: float
    weight_decay: float
    schedule: str
    warmup_epochs: float
    label_seed: int
    data_seed: int
    device: str
    measure_samples: int | None = None
    image_size: int = 224
    workers: int = 8
    precision: str = "fp32"
    augment: str = "none"
    channels_last: bool = False
    fused_optimizer: bool = False
    dropout: float = 0.0
    label_smoothing: float = 0.0
    lam: float = 0.0
    regularize: Literal["last", "all"] = "last"
    fraction: float = 1.0
    long_tail_ratio: float = 1.0  # 1: no long tail
    noise: float = 0.0
    seed: int = 0
    head_project: int = 0
    measure_every: int = 1
    inputs: str = "standardized"
    fit_train_acc: float = 0.99
    fit_flipped_acc: float = 0.95
    epochs_after_fit: int | None = None


def spec(config: Config, **overrides) -> RunSpec:
    shared = {f.name: getattr(config, f.name) for f in dataclasses.fields(RunSpec)
              if hasattr(config, f.name) and f.name != "long_tail_ratio"}
    shared["seed"] = config.seeds[0]
    if config.dataset not in FOLDER_DATASETS:  # runs, tables and titles name the data used
        shared["dataset"] = datasets.resolve(config.dataset)
    out = RunSpec(**{**shared, **overrides})
    if out.model != config.model and "epochs" not in overrides:
        out = dataclasses.replace(out, epochs=config.layer_model_epochs)
    return out


# --- runs ---------------------------------------------------------------------------------


def make_model(s: RunSpec, num_classes: int, in_shape) -> tuple[nn.Module, tuple[str, ...]]:
    """The model and its probed layers (SmallCNN's `pool` is GAP of block3: not probed twice)."""
    kwargs = {"mlp": dict(widths=s.widths, dropout=s.dropout),
              "smallcnn": dict(channels=s.cnn_channels, dropout=s.dropout),
              "wrn": dict(depth=s.wrn_depth, width=s.wrn_width, dropout=s.dropout)}
    if s.model.startswith("vit"):
        depth = {} if s.vit_depth is None else {"depth": s.vit_depth}
        kwargs[s.model] = dict(drop_rate=s.dropout, proj_drop_rate=s.dropout, **depth)
    elif s.model not in kwargs and s.dropout > 0:
        raise ValueError(f"dropout is not available for {s.model!r}; use mlp, smallcnn, wrn "
                         "or a vit")
    extra = kwargs.get(s.model, {})
    if s.model == "resnet18":  # CIFAR-sized inputs get the CIFAR stem (3x3, no max-pool)
        extra = dict(cifar_stem=in_shape[-1] <= 32)
    model = build(s.model, num_classes, in_shape, **extra)
    layers = tuple(n for n in model.probe_layers if not (s.model == "smallcnn" and n == "pool"))
    return model, layers


def _splits(s: RunSpec):
    """(train, test, train labels, test labels, number of classes): in-memory Splits, or
    image-folder datasets whose images stay on disk."""
    if s.dataset in FOLDER_DATASETS:
        load = imagenet.imagenet if s.dataset == "imagenet" else imagenet.imagenet_lt
        full = load("train", transform_fn=imagenet.transform(True, s.image_size))
        test = load("val" if s.dataset == "imagenet" else "test",
                    transform_fn=imagenet.transform(False, s.image_size))
        return (full, test, torch.tensor(full.targets), torch.tensor(test.targets),
                len(full.classes))
    full, test = datasets.load(s.dataset, "train"), datasets.load(s.dataset, "test")
    return full, test, full.y, test.y, full.num_classes


def validation_indices(s: RunSpec, labels: torch.Tensor) -> torch.Tensor:
    """Original indices of the validation samples: a class-stratified subset of the train
    split, fixed by the data seed, that no run of the study trains on."""
    return datasets.stratified_subset(labels, count=s.validation_samples, seed=s.data_seed + 5)


def train_indices(s: RunSpec, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Original indices of the run's training samples: the train split without the validation
    samples, then stratified subset, fraction, long tail."""
    idx = torch.arange(len(labels))
    idx = idx[~torch.isin(idx, validation_indices(s, labels))]
    if s.train_samples is not None and s.train_samples < len(idx):
        idx = idx[datasets.stratified_subset(labels[idx], count=s.train_samples,
                                             seed=s.data_seed)]
    if s.fraction < 1:
        idx = idx[datasets.stratified_subset(labels[idx], s.fraction, seed=s.data_seed + 1)]
    if s.long_tail_ratio > 1:
        idx = idx[datasets.long_tail_subset(labels[idx], s.long_tail_ratio, s.data_seed + 2,
                                            num_classes)]
    return idx


def load_data(s: RunSpec) -> dict:
    """Train subset (its original indices, random labels, noisy labels) and test set.

    Labels are tensors by subset position. The images come as data for `train` ("train":
    (x, y) tensors, or a shuffled DataLoader with augmentation) and for `measure` and
    friends ("train_eval", "clean_eval" (clean labels), "validation" (clean labels), "test",
    "features" (every training sample on every rank): tensors, or eval-transform loaders whose
    idx are positions).
    """
    full, test, labels, test_labels, num_classes = _splits(s)
    idx = train_indices(s, labels, num_classes)
    clean_y = labels[idx]
    y = clean_y
    if s.noise > 0:
        y, _ = datasets.symmetric_noise(clean_y, s.noise, num_classes, seed=1000 + s.seed)
    n_random = s.n_random or num_classes
    test_idx = torch.arange(len(test_labels))
    if s.test_samples is not None and s.test_samples < len(test_labels):
        test_idx = datasets.stratified_subset(test_labels, count=s.test_samples,
                                              seed=s.data_seed)
    measured = None  # positions whose train and RLP accuracy are measured; None: all
    if s.measure_samples is not None and s.measure_samples < len(idx):
        measured = datasets.stratified_subset(clean_y, count=s.measure_samples,
                                              seed=s.data_seed + 3)
    device = resolve_device(s.device)
    labels_by_position = {"y": y, "clean_y": clean_y, "index": idx,
                          "random": random_labels(len(labels), n_random, s.label_seed)[idx]}
    d = {**{k: v.to(device) for k, v in labels_by_position.items()}, "device": device,
         "num_classes": num_classes, "n_random": n_random,
         "validation": _validation(s, full, validation_indices(s, labels), device)}
    if s.dataset in FOLDER_DATASETS:
        return {**d, **_folder_sources(s, full, test, idx, y, test_idx, measured)}
    x = datasets.scale_inputs(s.dataset, full.x[idx], s.inputs).to(device)
    x_test = datasets.scale_inputs(s.dataset, test.x[test_idx], s.inputs).to(device)
    pick = (lambda t: (x, t)) if measured is None else (
        lambda t: (x[measured.to(device)], t[measured.to(device)], measured.to(device)))
    return {**d, "train": (x, d["y"]), "train_eval": pick(d["y"]),
            "clean_eval": pick(d["clean_y"]), "features": (x, d["y"]),
            "test": (x_test, test.y[test_idx].to(device)), "example": x[:2]}


def _validation(s: RunSpec, full, held: torch.Tensor, device: torch.device):
    """The validation samples with their clean labels: tensors, or an eval-transform loader
    for an image folder."""
    if s.dataset in FOLDER_DATASETS:
        dataset = imagenet.select(full, held, None, imagenet.transform(False, s.image_size))
        return eval_loader(dataset, s.batch_size, s.workers)
    # scaled as the training and test samples are: unscaled validation images made "best λ"
    # a choice on inputs the network never saw
    x = datasets.scale_inputs(s.dataset, full.x[held], s.inputs)
    return x.to(device), full.y[held].to(device)


def _folder_sources(s: RunSpec, full, test, idx, y, test_idx, measured) -> dict:
    """load_data's image data for an image folder: each sample is read from disk per batch."""
    from torch.utils.data import Subset

    plain = imagenet.transform(False, s.image_size)
    noisy = imagenet.select(full, idx, y, plain)
    clean = imagenet.select(full, idx, None, plain)
    if measured is not None:  # torch's Subset keeps the dataset's own (position) index
        noisy, clean = Subset(noisy, measured.tolist()), Subset(clean, measured.tolist())

    def loader(dataset, shard=True):
        return eval_loader(dataset, s.batch_size, s.workers, shard)

    return {"train": dataset_batches(imagenet.select(full, idx, y), s.batch_size, seed=s.seed,
                                     workers=s.workers),
            "train_eval": loader(noisy), "clean_eval": loader(clean),
            "features": loader(imagenet.select(full, idx, y, plain), shard=False),
            "test": loader(imagenet.select(test, test_idx, None, plain)),
            "example": torch.stack([noisy[i][0] for i in range(min(2, len(noisy)))])}


def train_spec(s: RunSpec, heads: bool = False) -> TrainSpec:
    """The run's TrainSpec; for the RLP heads: their own LR and no weight decay."""
    lr = s.head_lr if heads and s.head_lr is not None else s.lr
    weight_decay = 0.0 if heads else s.weight_decay
    return TrainSpec(epochs=s.epochs, batch_size=s.batch_size, optimizer=s.optimizer, lr=lr,
                     momentum=s.momentum,
                     weight_decay=weight_decay,
                     schedule=s.schedule, warmup_epochs=s.warmup_epochs,
                     label_smoothing=s.label_smoothing, seed=s.seed,
                     precision=s.precision, channels_last=s.channels_last,
                     fused=s.fused_optimizer,
                     augment=s.augment if s.dataset not in FOLDER_DATASETS else "none")


def make_heads(s: RunSpec, model: nn.Module, layers: Sequence[str], d: dict) -> RLPHeads:
    """The run's heads, on its device; the control heads' projections depend only on the
    label seed, so trained and frozen-init runs read their layers through the same ones."""
    dims = feature_dims(model, layers, d["example"].to(d["device"]))
    return RLPHeads(dims, d["n_random"], s.head_hidden, s.head_project,
                    seed=s.label_seed).to(d["device"])


def train_run(s: RunSpec, observe: Callable | None = None) -> dict:
    """Train model + RLP heads; history has train/test accuracy and rlp_<layer> per epoch.

    `observe(model, heads, d, memo)`, if given, returns more end-of-epoch callbacks (e.g.
    memlib.lens's per-example tracking; they keep their running state in the dict `memo`,
    which is checkpointed with the model). The result then also holds "model", "heads",
    "data" (load_data's dict) and "memo" for the caller to measure. Observers that only
    evaluate (eval mode, no random draws) leave the training itself unchanged.
    """
    d = load_data(s)
    seed_everything(s.seed)
    model, layers = make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.to(d["device"])
    heads = make_heads(s, model, layers, d)
    reg_layers = layers[-1:] if s.regularize == "last" else layers
    ts = train_spec(s)
    optimizers = (make_optimizers(model.parameters(), ts)
                  + make_optimizers(heads.parameters(), train_spec(s, heads=True)))

    # the training samples' predictions give the fit (noisy, clean and flipped labels) and
    # every head's accuracy in one forward pass, at the measured epochs only: measuring
    # every epoch would cost as much as training
    flipped = d["y"] != d["clean_y"]
    targets = {"clean": d["clean_y"], "flipped": torch.where(flipped, d["y"], -1)}
    latest: dict = {}
    # measurements run at the training's precision: in fp32 a bf16 run's evaluation passes
    # would take as long as its training steps on a GPU
    precision = (torch.autocast(d["device"].type, dtype=torch.bfloat16)
                 if s.precision == "bf16" else contextlib.nullcontext())

    def measured(epoch: int) -> bool:
        return epoch % s.measure_every == 0 or epoch == s.epochs

    def train_scores(epoch: int) -> dict:
        if latest.get("epoch") != epoch:
            latest.clear()
            with precision:
                scores = measure(model, heads, d["train_eval"], d["random"], labels=targets)
            latest.update(epoch=epoch, **scores)
        return latest

    def fit_scores(state) -> tuple[float, float | None] | None:
        if not measured(state.epoch):
            return None
        scores = train_scores(state.epoch)
        return scores["acc"], scores["acc_flipped"] if flipped.any() else None

    def record(state) -> None:
        if not measured(state.epoch) and not state.stop:
            return
        with precision:
            test = measure(model, None, d["test"])
            validation = measure(model, None, d["validation"])
        state.row.update(test_acc=test["acc"], test_loss=test["loss"])
        scores = dict(train_scores(state.epoch))
        state.row["train_acc"] = scores["acc"]
        state.row["clean_train_acc"] = scores["acc_clean"]
        state.row.update({metric: scores[metric] for metric, _, _ in heads.probes()})
        state.row["val_acc"] = validation["acc"]

    memo: dict = {}
    fit = fit_tracker(fit_criterion(s), fit_scores, memo)
    extra = list(observe(model, heads, d, memo)) if observe is not None else []
    history = train(model, d["train"], ts,
                    step=rlp_step(heads, d["random"], s.lam, reg_layers, s.label_smoothing),
                    optimizers=optimizers, callbacks=[fit, record, *extra], memo=memo,
                    desc=f"{s.model} λ={s.lam:g}")
    epochs_trained = int(history["epoch"].iloc[-1])
    history = history[history["train_acc"].notna()].reset_index(drop=True)
    out = {"history": history, "layers": list(layers), "n_random": d["n_random"],
           "fit_epoch": memo["fit_epoch"], "epochs_trained": epochs_trained,
           "noisy_fit": train_scores(epochs_trained)["acc_flipped"] if flipped.any() else None,
           "collapse": final_collapse(model, layers, d),
           "class_acc": per_class_accuracy(model, d["test"], d["num_classes"]),
           "class_counts": torch.bincount(d["y"].cpu(), minlength=d["num_classes"]).tolist()}
    if observe is not None:
        out.update(model=model, heads=heads, data=d, memo=memo)
    return out


def fit_criterion(s: RunSpec) -> FitCriterion:
    return FitCriterion(s.fit_train_acc, s.fit_flipped_acc, s.epochs_after_fit)


def final_collapse(model: nn.Module, layers: Sequence[str], d: dict) -> dict | None:
    """Each layer's within- to between-class variance ratio (clean labels) on the measured
    training samples; None for image folders, whose features are not held in memory."""
    if not isinstance(d["clean_eval"], tuple):
        return None
    return layer_collapse(model, layers, d["clean_eval"][:2])


def layer_collapse(model: nn.Module, layers: Sequence[str], data: tuple) -> dict[str, float]:
    feats = pooled_features(model, data, layers)
    return {n: class_variance_ratio(feats[n].cpu(), data[1].cpu()) for n in layers}


def frozen_baseline(s: RunSpec) -> dict:
    """Per-epoch RLP accuracy (columns rlp_<layer>) of heads trained with the same optimizer,
    epochs and batch size on the untrained extractor's eval-mode features: what a head
    memorizes by itself."""
    d = load_data(s)
    seed_everything(s.seed)
    model, layers = make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.to(d["device"])
    # in memory: all layers in one pass; from disk: one pass per layer, so that only one
    # layer's features (samples x width) are held at a time
    groups = [layers] if isinstance(d["features"], tuple) else [(n,) for n in layers]
    # the features are fixed: bf16 and channels_last would gain nothing for linear heads
    head_spec = dataclasses.replace(train_spec(s, heads=True), label_smoothing=0.0,
                                    precision="fp32", channels_last=False, augment="none")
    heads = make_heads(s, model, layers, d)
    history = pd.DataFrame({"epoch": range(s.epochs + 1)})
    for group in groups:
        feats = pooled_features(model, d["features"], group)
        for metric, layer, head in heads.probes():
            if layer not in group:
                continue
            seed_everything(s.seed)
            h = train(head, TensorBatches(feats[layer], d["random"], s.batch_size, s.seed),
                      head_spec, eval_sets={"random": (feats[layer], d["random"])})
            history[metric] = h["random_acc"].to_numpy()
    collapse = (layer_collapse(model, layers, d["clean_eval"][:2])
                if isinstance(d["clean_eval"], tuple) else None)
    return {"history": history, "collapse": collapse}


@computation("rlp_run", 1, uses=(*TRAINING, imagenet))
def cached_run(s: RunSpec) -> dict:
    return train_run(s)


@computation("rlp_frozen", 1, uses=(*TRAINING, imagenet))
def cached_frozen(s: RunSpec) -> dict:
    return frozen_baseline(s)


def final_row(result: dict, **labels) -> dict:
    last = result["history"].iloc[-1]
    row = {**labels, "train_acc": last["train_acc"], "val_acc": last["val_acc"],
           "test_acc": last["test_acc"], "fit_epoch": result["fit_epoch"]}
    row.update({f"rlp_{n}": last[f"rlp_{n}"] for n in result["layers"]})
    return row


def layer_rows(result: dict, **labels) -> list[dict]:
    last = result["history"].iloc[-1]
    collapse = result.get("collapse") or {}
    return [{**labels, "layer": n, "depth": i + 1, "rlp_acc": last[f"rlp_{n}"],
             "train_acc": last["train_acc"], "test_acc": last["test_acc"],
             "proj_acc": last.get(f"rlpproj_{n}", math.nan),
             "collapse": collapse.get(n, math.nan)}
            for i, n in enumerate(result["layers"])]


# --- experiments --------------------------------------------------------------------------


def regularizer_grid(config: Config) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """(RunSpec field, strengths) of each standard regularizer, swept one at a time."""
    return tuple(zip(STANDARD_REGULARIZERS, (config.dropouts, config.weight_decays,
                                             config.label_smoothings), strict=True))


def lambda_grid(config: Config, where: str = "last") -> tuple[float, ...]:
    """λ values of the sweep for last-layer or all-layer regularization (each judged at its
    own largest λ that still trains)."""
    values = config.all_lambdas if where == "all" and config.all_lambdas else config.lambdas
    return (0.0, *values)


def sampling_spec(config: Config, **overrides) -> RunSpec:
    """A run of the sampling experiment: the default setting at `sampling_noise`."""
    return spec(config, noise=config.sampling_noise, **overrides)


def planned_runs(config: Config, best: float | None = None) -> list[tuple]:
    """The (cached computation, spec) pairs `run` asks for: those that do not depend on the
    λ sweep's results, or (given its best λ) those that do. Longest first, so that two
    workers finish together (small scale, cold: a penalized SmallCNN run 68-78 s, an
    unpenalized one 53 s, an MLP run 28 s, a frozen baseline 5-17 s)."""
    seeds = config.seeds
    if best is not None:
        if not config.sampling_experiment:
            return []
        return ([(cached_run, sampling_spec(config, fraction=f, lam=lam, seed=seed))
                 for f in config.fractions for lam in (0.0, best) for seed in seeds]
                + [(cached_run, sampling_spec(config, long_tail_ratio=config.long_tail_ratio,
                                              lam=lam, seed=seed))
                   for lam in (0.0, best) for seed in seeds])
    layer = [(cached_run, spec(config, model=name, seed=seed)) for name in config.layer_models
             for seed in seeds]
    frozen = [(cached_frozen, s) for _, s in layer]
    regs = [(cached_run, spec(config, seed=seed, **{field: v}))
            for field, values in regularizer_grid(config) for v in values for seed in seeds]
    lams = [(cached_run, spec(config, lam=lam, regularize=where, seed=seed))
            for where in REGULARIZED for lam in lambda_grid(config, where)[1:]
            for seed in seeds]
    noise = [(cached_run, spec(config, noise=rate, lam=lam, seed=seed))
             for rate in config.noise_rates for lam in (0.0, *config.noise_lambdas)
             for seed in seeds]
    return list(dict.fromkeys(lams + noise + regs + layer + frozen))  # noise reuses runs


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
            result, frozen = cached_run(s), cached_frozen(s)
            fit.append({"model": name, "seed": seed,
                        "train_acc": result["history"]["train_acc"].iloc[-1],
                        "clean_train_acc": result["history"]["clean_train_acc"].iloc[-1],
                        "noisy_fit": result["noisy_fit"], "fit_epoch": result["fit_epoch"],
                        "epochs_trained": result["epochs_trained"]})
            # the heads on frozen features after as many epochs as the run trained
            last = frozen["history"].set_index("epoch").loc[result["epochs_trained"]]
            for row in layer_rows(result, model=name, seed=seed):
                n = row["layer"]
                rows.append({**row, "frozen_acc": last[f"rlp_{n}"],
                             "frozen_proj_acc": last.get(f"rlpproj_{n}", math.nan),
                             "frozen_collapse": (frozen["collapse"] or {}).get(n, math.nan)})
    out["layerwise"], out["fit"] = pd.DataFrame(rows), pd.DataFrame(fit)

    # 2. temporal evolution of the default model, beside the frozen heads' own progress
    out["history"] = first["history"]
    out["frozen_history"] = cached_frozen(spec(config))["history"]
    out["frozen_histories"] = pd.concat(
        [cached_frozen(spec(config, seed=seed))["history"].assign(seed=seed) for seed in seeds],
        ignore_index=True)

    # 3. standard regularizers, one at a time
    rows = [final_row(r, regularizer="none", strength=0.0, seed=seed) for seed, r in base.items()]
    for kind, values in regularizer_grid(config):
        for v in values:
            for seed in seeds:
                rows.append(final_row(cached_run(spec(config, seed=seed, **{kind: v})),
                                      regularizer=kind, strength=v, seed=seed))
    out["regularizers"] = pd.DataFrame(rows)

    # 4. the RLP regularizer: λ sweep, last layer only vs all probed layers
    # (and every run's history: the claims read each seed's curves)
    rows, lrows, histories = [], [], []
    for where in REGULARIZED:
        for lam in lambda_grid(config, where):
            for seed in seeds:
                result = (base[seed] if lam == 0 else
                          cached_run(spec(config, lam=lam, regularize=where, seed=seed)))
                rows.append(final_row(result, regularize=where, lam=lam, seed=seed))
                lrows += layer_rows(result, regularize=where, lam=lam, seed=seed)
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
                result = cached_run(spec(config, noise=rate, lam=lam, seed=seed))
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


# --- claims -------------------------------------------------------------------------------


def onset_epoch(values: Sequence[float], baseline: float, fraction: float = 0.5,
                epochs: Sequence[int] | None = None) -> int | None:
    """First epoch after the first measurement (made before training) where values reach
    `fraction` of their final excess over `baseline`; None if there is no excess. `epochs`
    numbers the measurements (default 0, 1, 2, ...)."""
    epochs = list(range(len(values))) if epochs is None else list(epochs)
    if len(values) < 2 or values[-1] <= baseline:
        return None
    target = baseline + fraction * (values[-1] - baseline)
    return next(epochs[i] for i in range(1, len(values)) if values[i] >= target)


def gap_epoch(train_acc: Sequence[float], test_acc: Sequence[float], points: float = 0.05,
              epochs: Sequence[int] | None = None) -> int | None:
    """First epoch where train accuracy exceeds test accuracy by more than `points`."""
    epochs = list(range(len(train_acc))) if epochs is None else list(epochs)
    return next((e for e, a, b in zip(epochs, train_acc, test_acc, strict=True)
                 if a - b > points), None)


def head_tail_change(long_tail: pd.DataFrame) -> dict[str, float]:
    """Test-accuracy change (best λ minus λ = 0) on the larger and smaller half of classes,
    for one seed's rows."""
    counts = long_tail[long_tail["lam"] == 0].sort_values("train_count", ascending=False)
    half = len(counts) // 2
    head_classes, tail_classes = set(counts["class"][:half]), set(counts["class"][half:])
    acc = long_tail.pivot(index="class", columns="lam", values="test_acc")
    delta = acc[acc.columns.max()] - acc[0.0]
    return {"head": float(delta[list(head_classes)].mean()),
            "tail": float(delta[list(tail_classes)].mean())}


MEMORIZATION_TARGET = 10.0  # points of RLP excess over the frozen baseline at some layer
# A λ "still trains" when every seed fits at least this share of its training labels as
# trained (the flipped ones included). With 40% label noise a network that learned only the
# clean labels fits about 64%, so 90% means that it still fits three quarters of the flipped
# labels; the networks that a λ breaks fit 10-20%.
TRAINS = 0.90
# Largest test-accuracy gain (points) that "does not improve test accuracy" allows: below
# the paper's own gain from the regularizer (+1.5 points on ImageNet).
NO_GAIN = 1.0


def points(values: Iterable[float]) -> list[float]:
    """Accuracies (fractions) in percentage points."""
    return [100 * float(v) for v in values]


def excess_by_layer(layerwise: pd.DataFrame, model: str) -> dict[str, Estimate]:
    """RLP accuracy minus the frozen-init baseline at each layer of `model`, in points, over
    seeds."""
    rows = layerwise[layerwise["model"] == model]
    return {n: Estimate.of(points(d.sort_values("seed")["rlp_acc"]
                                  - d.sort_values("seed")["frozen_acc"]))
            for n, d in rows.groupby("layer", sort=False)}


def layer_rise(layerwise: pd.DataFrame, model: str) -> Estimate:
    """The excess at the deepest probed layer minus at the first, paired by seed (points)."""
    rows = layerwise[layerwise["model"] == model]
    layers = list(dict.fromkeys(rows["layer"]))
    first, last = (rows[rows["layer"] == n].sort_values("seed") for n in (layers[0], layers[-1]))
    return Estimate.of(points((last["rlp_acc"] - last["frozen_acc"]).to_numpy()
                              - (first["rlp_acc"] - first["frozen_acc"]).to_numpy()))


def memorization(results: dict, model: str) -> dict:
    """The preconditions' numbers for `model`: the worst seed's train accuracy and fit of its
    flipped labels (fractions), its largest RLP excess over frozen init (the layer with the
    largest mean, points) and the excess at its last probed layer."""
    fit = results["fit"]
    fit = fit[fit["model"] == model]
    excess = excess_by_layer(results["layerwise"], model)
    flipped = fit["noisy_fit"].dropna()
    return {"data": results["dataset"], "train": float(fit["train_acc"].min()),
            "flipped": float(flipped.min()) if len(flipped) else None,
            **fit_record(fit),
            "excess": max(excess.values(), key=lambda e: e.mean),
            "last_excess": list(excess.values())[-1]}


def fit_record(rows: pd.DataFrame) -> dict:
    """The declared fit of the runs in `rows` (one per seed): "fit_epochs", each seed's epoch
    of fit in seed order (None where its criterion was never met), and "fitted", whether
    every seed met it."""
    epochs = [None if pd.isna(e) else int(e) for e in rows.sort_values("seed")["fit_epoch"]]
    return {"fit_epochs": epochs, "fitted": all(e is not None for e in epochs)}


def by_seed(frame: pd.DataFrame, column: str, **where) -> list[float]:
    """`column` of the rows matching `where`, in seed order."""
    rows = frame
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return rows.sort_values("seed")[column].tolist()


def trained_lambda(sweep: pd.DataFrame, where: str = "last") -> float | None:
    """The largest λ > 0 of the sweep at which every seed still fits >= TRAINS of its
    training labels (None if none does): where the regularizer claims are judged, since a
    network that stops learning also "memorizes less"."""
    rows = sweep[(sweep["regularize"] == where) & (sweep["lam"] > 0)]
    worst = rows.groupby("lam")["train_acc"].min()
    kept = worst[worst >= TRAINS]
    return float(kept.index.max()) if len(kept) else None


def worst_train(sweep: pd.DataFrame, where: str, lam: float | None) -> float | None:
    """The worst seed's train accuracy at (where, λ); None without such runs."""
    rows = sweep[(sweep["regularize"] == where) & (sweep["lam"] == lam)]
    return float(rows["train_acc"].min()) if len(rows) else None


def _differences(sweep: pd.DataFrame, column: str, where: str, lam: float) -> list[float]:
    """Per seed, `column` at (where, λ) minus at λ = 0, in points."""
    at = sweep[sweep["regularize"] == where]
    return [b - a for a, b in zip(points(by_seed(at, column, lam=0.0)),
                                  points(by_seed(at, column, lam=lam)), strict=True)]


def _change(sweep: pd.DataFrame, column: str, where: str, lam: float) -> Estimate:
    """`column` at (where, λ) minus at λ = 0, in points, paired by seed."""
    return Estimate.of(_differences(sweep, column, where, lam))


def _drop(sweep: pd.DataFrame, column: str, lam: float) -> Estimate:
    """`column` at λ = 0 minus at λ (last-layer regularization), in points, paired by seed."""
    return Estimate.of(-d for d in _differences(sweep, column, "last", lam))


def layer_changes(sweep: pd.DataFrame, layers: Sequence[str], where: str,
                  lam: float) -> dict[str, Estimate]:
    """RLP accuracy change (points) of each earlier layer, λ vs 0, paired by seed."""
    return {n: _change(sweep, f"rlp_{n}", where, lam) for n in layers[:-1]}


def _rises(changes: dict[str, Estimate]) -> dict[str, Estimate]:
    return {n: e for n, e in changes.items() if e.mean > 0 and e.beyond_noise}


def rise_and_gap(histories: pd.DataFrame, frozen: pd.DataFrame, column: str) -> dict:
    """Per seed (λ = 0): the epoch at which the trained-minus-frozen excess of `column`
    (the head on the trained network minus the same head on the frozen initialisation, after
    as many epochs) reaches half its final value, the first epoch with train − test accuracy
    > 5 points, and the lead of the first over the second (gap epoch minus half epoch; None
    unless both exist in every seed). Subtracting the frozen curve leaves what the network
    memorized, not what the head learns by itself."""
    base = histories[(histories["regularize"] == "last") & (histories["lam"] == 0)]
    halves, gaps = [], []
    for seed, h in base.groupby("seed"):
        h = h.sort_values("epoch")
        epochs = h["epoch"].tolist()
        own = frozen[frozen["seed"] == seed].set_index("epoch")[column]
        excess = (h[column].to_numpy() - own.loc[epochs].to_numpy()).tolist()
        halves.append(onset_epoch(excess, 0.0, epochs=epochs))
        gaps.append(gap_epoch(h["train_acc"].tolist(), h["test_acc"].tolist(), epochs=epochs))
    known = all(e is not None for e in halves + gaps)
    return {"half_epochs": halves, "gap_epochs": gaps,
            "lead": paired(gaps, halves) if known else None}


def sampling_claims(results: dict, data: str) -> dict:
    """The sampling and tails claims' values from the sampling experiment's tables."""
    fr, best = results["fractions"], results["best_lambda"]
    small, large = fr["fraction"].min(), fr["fraction"].max()
    change = {f: [b - a for a, b in zip(points(by_seed(fr, "test_acc", fraction=f, lam=0.0)),
                                        points(by_seed(fr, "test_acc", fraction=f, lam=best)),
                                        strict=True)] for f in (small, large)}
    unregularized = fr[fr["lam"] == 0]
    per_seed = [head_tail_change(d) for _, d in results["long_tail"].groupby("seed")]
    return {"sampling": {"data": data, "noise": results["sampling_noise"],
                         "train": float(unregularized["train_acc"].min()), "best_lam": best,
                         "largest": Estimate.of(change[large]),
                         "smallest": Estimate.of(change[small]),
                         "difference": paired(change[large], change[small])},
            "tails": {"data": data, "best_lam": best,
                      "head": Estimate.of(100 * c["head"] for c in per_seed),
                      "tail": Estimate.of(100 * c["tail"] for c in per_seed),
                      "difference": Estimate.of(100 * (c["head"] - c["tail"])
                                                for c in per_seed)}}


def measure_claims(results: dict) -> dict:
    """The measured value of every claim in CLAIMS, from `run`'s results. Accuracy
    differences are in points and paired over seeds (Estimates); every value carries the
    preconditions' numbers. The claims of a setting that was not run (the ImageNet and
    CIFAR-100 arms below full scale) are None."""
    last, layers = results["last_layer"], results["layers"]
    models = list(dict.fromkeys(results["fit"]["model"]))
    pre = memorization(results, results["model"])  # the model every sweep trains
    column = f"rlp_{last}"
    measured = {}

    depth = {}
    for model in models:
        excess = excess_by_layer(results["layerwise"], model)
        means = [e.mean for e in excess.values()]
        rho = spearmanr(range(len(means)), means).statistic if len(means) > 2 else math.nan
        depth[model] = {**memorization(results, model), "spearman": float(rho),
                        "rise": layer_rise(results["layerwise"], model),
                        "deepest": list(excess.values())[-1]}
    measured["depth"] = depth

    histories = results["histories"]
    measured["early_rise"] = {**pre, **rise_and_gap(histories, results["frozen_histories"],
                                                     column)}

    reg = results["regularizers"]
    none = points(by_seed(reg, column, regularizer="none"))
    drops = {}
    for kind in STANDARD_REGULARIZERS:
        rows = reg[reg["regularizer"] == kind]
        drops[kind] = paired(none, points(by_seed(rows, column,
                                                  strength=rows["strength"].max())))
    measured["regularizers"] = {**pre, **drops}

    sweep = results["lambda_sweep"]
    lam = trained_lambda(sweep)
    top = float(sweep["lam"].max())
    judged = {"lam": lam, "lam_train": worst_train(sweep, "last", lam)}
    drop = None if lam is None else _drop(sweep, column, lam)
    measured["regularizer_works"] = {**pre, **judged, "drop": drop, "largest_lam": top,
                                     "drop_at_largest_lam": _drop(sweep, column, top)}
    shift = {} if lam is None else layer_changes(sweep, layers, "last", lam)
    measured["shift"] = {**pre, **judged, "drop": drop, "changes": shift}
    all_lam = trained_lambda(sweep, "all")
    all_judged = {"all_lam": all_lam, "all_train": worst_train(sweep, "all", all_lam)}
    everywhere = {} if all_lam is None else layer_changes(sweep, layers, "all", all_lam)
    measured["all_layers"] = {**pre, **judged, **all_judged, "shifted": _rises(shift),
                              "changes": {n: everywhere[n] for n in _rises(shift)}}
    measured["all_layers_test"] = {
        **judged, **all_judged,
        "change": None if all_lam is None else _change(sweep, "test_acc", "all", all_lam),
        "last_layer_change": None if lam is None else _change(sweep, "test_acc", "last", lam)}

    noise = results["noise"]
    rate = noise["noise"].max()
    high = noise[noise["noise"] == rate]
    val = high[high["lam"] > 0].groupby("lam")["val_acc"].mean()
    noise_lam = float(val.idxmax())
    fitted = high[high["lam"] == 0]["noisy_fit"].dropna()
    measured["noise"] = {"data": results["dataset"], "rate": float(rate), "best_lam": noise_lam,
                         "flipped": float(fitted.min()) if len(fitted) else None,
                         **fit_record(high[high["lam"] == 0]),
                         "gain": paired(points(by_seed(high, "test_acc", lam=noise_lam)),
                                        points(by_seed(high, "test_acc", lam=0.0)))}

    measured["sampling"] = measured["tails"] = None  # not run where the preset leaves it out
    if results["fractions"] is not None:
        measured.update(sampling_claims(results, pre["data"]))

    # the paper-scale arms: None (not run at this scale) elsewhere
    best = results["best_lambda"]
    for name in ("imagenet", "imagenet_rlp", "cifar100_small_lambda", "cifar100_train_stable"):
        measured[name] = None
    if results.get("dataset") == "imagenet":
        test, train = (_differences(sweep, c, "last", best) for c in ("test_acc", "train_acc"))
        measured["imagenet"] = {"best_lam": best, "test": Estimate.of(test),
                                "train": Estimate.of(train),
                                "gap": paired(train, test)}  # gap change: Δtrain − Δtest
        measured["imagenet_rlp"] = {**pre, "best_lam": best,
                                    "drop": _drop(sweep, column, best)}
    if (results.get("dataset"), results.get("model")) == ("cifar100", "wrn"):
        smallest = float(sweep.loc[sweep["lam"] > 0, "lam"].min())
        measured["cifar100_small_lambda"] = {
            "lam": smallest, "lam_train": worst_train(sweep, "last", smallest),
            "change": _change(sweep, "test_acc", "last", smallest)}
        measured["cifar100_train_stable"] = {
            **judged, "change": None if lam is None else _change(sweep, "train_acc", "last", lam)}
    return measured


# --- the rules ---------------------------------------------------------------------------

INTERPOLATES = ("interpolation: every seed met its declared fit (train acc >= 99% with >= 95% "
                "of flipped labels fitted) within its epoch budget, by its fit record",
                lambda v: v["fitted"])
# what a regularizer of memorization needs: memorization at the layer it regularizes
MEMORIZES = ("last layer's RLP excess over frozen init > 0 beyond noise",
             lambda v: v["last_excess"].mean > 0 and v["last_excess"].beyond_noise)
STILL_TRAINS = (f"some λ > 0 still trains (every seed fits >= {TRAINS:.0%} of its training "
                "labels)", lambda v: v["lam"] is not None)
REGULARIZER_BITES = ("that λ lowers the last layer's RLP accuracy beyond noise",
                     lambda v: v["drop"].mean > 0 and v["drop"].beyond_noise)
ALL_TRAIN = (f"some all-layer λ > 0 still trains (every seed fits >= {TRAINS:.0%} of its "
             "training labels)", lambda v: v["all_lam"] is not None)
SEEDS = "; points, paired by seed"
AT_TRAINED = (f"at the largest λ at which every seed still fits >= {TRAINS:.0%} of its "
              "training labels")
AT_ALL_TRAINED = (f"at the largest all-layer λ at which every seed still fits >= {TRAINS:.0%} "
                  "of its training labels")
TARGET = (f"some model interpolates with a mean RLP excess of at least "
          f"{MEMORIZATION_TARGET:g} points at some layer, its interval excluding 0")
CHOSEN = "best λ: highest mean validation accuracy (held-out training-split samples)"
LEFT_OUT = ("the small scale leaves the sampling experiment out: on earlier runs (MLP, "
            "noisy labels) each arm would have needed 13 or more seeds and the tails "
            "difference about 12, beyond the 15-minute budget of this notebook")


def meets_target(v: dict) -> bool:
    """The memorization target for a model: interpolation, and at some layer a mean RLP
    excess over frozen init of at least MEMORIZATION_TARGET points whose interval excludes 0
    (a memorizing model, not a mean that clears the target beyond noise)."""
    return INTERPOLATES[1](v) and (v["excess"].mean >= MEMORIZATION_TARGET
                                   and v["excess"].beyond_noise)


def _memorizing(v: dict) -> list[dict]:
    return [m for m in v.values() if meets_target(m)]


# --- synthetic measured values for the rules' cases ---------------------------------------

def _e(mean: float, se: float = 0.5, n: int = 5) -> Estimate:
    return Estimate(mean, se, n)


_PRE = {"train": 1.0, "flipped": 1.0, "fitted": True, "fit_epochs": [60] * 5,
        "excess": _e(12.0), "last_excess": _e(8.0)}
_NO_FIT = {**_PRE, "train": 0.8, "fitted": False, "fit_epochs": [60, 70, None, 80, 65]}
_NO_MEMORY = {**_PRE, "last_excess": _e(0.5, 1.0)}
_JUDGED = {"lam": 10.0, "lam_train": 0.97}


def _model(spearman: float = 1.0, rise: float = 12.0, **pre) -> dict:
    return {**_PRE, "spearman": spearman, "rise": _e(rise), "deepest": _e(rise), **pre}


def _shift(changes: dict, **over) -> dict:
    return {**_PRE, **_JUDGED, "drop": _e(12.0), "changes": changes, **over}


_ALL_JUDGED = {"all_lam": 1.0, "all_train": 0.95}


def _all_layers(changes: dict, **over) -> dict:
    return {**_PRE, **_JUDGED, **_ALL_JUDGED, "shifted": {"act2": _e(3.0)},
            "changes": changes, **over}


CLAIMS = [
    Claim("depth", "Random-label accuracy grows with depth.",
          "ViT-B/32 ImageNet: ≈0% first layer, ≈70–80% deep",
          "RLP accuracy minus frozen-init baseline per probed layer (points), each layer-wise "
          "model: rise = deepest layer's excess minus the first layer's, paired by seed; "
          "Spearman of depth against the seed-mean excess",
          "for every model meeting the memorization target: rise > 0 beyond noise (the paper's "
          "near-zero first layer below a high deep one) and Spearman(depth, mean excess) >= "
          "0.5 (a trend over the layers, not only at the ends)",
          lambda v: all(m["spearman"] >= 0.5 and m["rise"].mean > 0 for m in _memorizing(v)),
          preconditions=((TARGET, lambda v: bool(_memorizing(v))),),
          beyond_noise=lambda v: all(m["rise"].beyond_noise for m in _memorizing(v)),
          cases=Cases(holds={"mlp": _model()}, fails={"mlp": _model(-0.5, -12.0)},
                      preconditions={TARGET: {"mlp": _model(excess=_e(4.0))}}),
          unit="points", headline=lambda v: next(
              (m["rise"] for m in _memorizing(v)), next(iter(v.values()))["rise"]),
          caveat="the deepest minus the first layer's excess, of the first model that meets "
                 "the target; the levels are far below the paper's",
          where="fig2_layerwise_rlp"),
    Claim("early_rise", "RLP accuracy rises early, slightly before train and test accuracy "
          "diverge.", "",
          "per seed at λ = 0: first epoch with train − test accuracy > 5 points minus the "
          "epoch at which the last layer's RLP excess (trained minus frozen-init head at the "
          "same epoch) reaches half its final value (epochs, the lead)",
          "lead >= 0 (RLP accuracy half-way no later than the divergence), decided by the 95% "
          "t interval over seeds; replaces a verdict read off the first seed alone",
          preconditions=(INTERPOLATES, MEMORIZES,
                         ("both epochs defined in every seed", lambda v: v["lead"] is not None)),
          **all_of(lambda v: [margin(v["lead"], 0)]),
          cases=Cases(holds={**_PRE, "lead": _e(20.0, 3.0)},
                      fails={**_PRE, "lead": _e(-60.0, 5.0)},
                      preconditions={INTERPOLATES[0]: {**_NO_FIT, "lead": _e(20.0)},
                                     MEMORIZES[0]: {**_NO_MEMORY, "lead": _e(20.0)},
                                     "both epochs defined in every seed":
                                         {**_PRE, "lead": None}}),
          unit="epochs", headline=lambda v: v["lead"],
          caveat="measured every 5 epochs at the small scale", where="fig3_rlp_over_training"),
    Claim("regularizers", "Dropout, weight decay and label smoothing all lower memorization.",
          "", "last-layer RLP accuracy without minus with each regularizer at its strongest"
          + SEEDS, "all three drops > 0 (decided once every drop clears its 95% t interval, "
          "or one falls below 0 beyond it)",
          preconditions=(INTERPOLATES, MEMORIZES),
          **all_of(lambda v: [margin(v[k], 0) for k in STANDARD_REGULARIZERS]),
          cases=Cases(holds={**_PRE, **{k: _e(5.0) for k in STANDARD_REGULARIZERS}},
                      fails={**_PRE, "dropout": _e(5.0), "weight_decay": _e(5.0),
                             "label_smoothing": _e(-5.0)},
                      preconditions={INTERPOLATES[0]: {**_NO_FIT, **{
                          k: _e(5.0) for k in STANDARD_REGULARIZERS}},
                                     MEMORIZES[0]: {**_NO_MEMORY, **{
                          k: _e(5.0) for k in STANDARD_REGULARIZERS}}}),
          unit="points", headline=lambda v: min((v[k] for k in STANDARD_REGULARIZERS),
                                                key=lambda e: e.mean),
          caveat="headline: the smallest of the three drops", where="fig4_standard_regularizers"),
    Claim("regularizer_works", "The RLP regularizer reduces memorization at the regularized "
          "layer.", "", "last-layer RLP accuracy at λ = 0 minus at the judged λ (last-layer "
          "regularization), " + AT_TRAINED + SEEDS,
          "drop >= 5 points (half the 10-point memorization target: a reduction, not a "
          "flicker), decided by the 95% t interval of drop − 5; never judged at a λ that "
          "stops the network from training",
          preconditions=(INTERPOLATES, MEMORIZES, STILL_TRAINS),
          **all_of(lambda v: [margin(v["drop"], 5.0)]),
          cases=Cases(holds={**_PRE, **_JUDGED, "drop": _e(12.0)},
                      fails={**_PRE, **_JUDGED, "drop": _e(1.0)},
                      preconditions={INTERPOLATES[0]: {**_NO_FIT, **_JUDGED, "drop": _e(12.0)},
                                     MEMORIZES[0]: {**_NO_MEMORY, **_JUDGED, "drop": _e(12.0)},
                                     STILL_TRAINS[0]: {**_PRE, "lam": None, "drop": None}}),
          unit="points", headline=lambda v: v["drop"],
          caveat=f"judged at the largest λ at which every seed still fits >= {TRAINS:.0%} of "
                 "its labels (the value shows λ and the drop at the largest λ)",
          where="fig5_rlp_regularizer"),
    Claim("shift", "Regularizing only the last layer shifts memorization to earlier layers.",
          "", "RLP accuracy change of each earlier layer, judged λ vs λ = 0, last-layer "
          "regularization, " + AT_TRAINED + SEEDS,
          "some earlier layer's change > 0 (decided once one rises beyond its 95% t interval, "
          "or every change clears it)",
          preconditions=(INTERPOLATES, MEMORIZES, STILL_TRAINS, REGULARIZER_BITES),
          **any_of(lambda v: [margin(e, 0) for e in v["changes"].values()]),
          cases=Cases(holds=_shift({"act1": _e(-3.0), "act2": _e(3.0)}),
                      fails=_shift({"act1": _e(-3.0), "act2": _e(-3.0)}),
                      preconditions={INTERPOLATES[0]: _shift({}, fitted=False),
                                     MEMORIZES[0]: _shift({}, last_excess=_e(0.5, 1.0)),
                                     STILL_TRAINS[0]: _shift({}, lam=None, drop=None),
                                     REGULARIZER_BITES[0]: _shift({}, drop=_e(0.5, 1.0))}),
          unit="points", headline=lambda v: max(v["changes"].values(), key=lambda e: e.mean,
                                                default=None),
          caveat="headline: the earlier layer that rises most", where="fig5_rlp_regularizer"),
    Claim("all_layers", "Regularizing all layers suppresses the shift.", "",
          "RLP accuracy change under all-layer regularization, " + AT_ALL_TRAINED + ", vs "
          "λ = 0, of each earlier layer that rose beyond noise under last-layer regularization "
          "at its judged λ" + SEEDS,
          "every such layer's change <= 0 (decided once every change clears its 95% t "
          "interval, or one rises beyond it); asked only where last-layer regularization "
          "shifted memorization",
          preconditions=(INTERPOLATES, MEMORIZES, STILL_TRAINS,
                         ("last-layer regularization shifts memorization (some earlier layer "
                          "rises beyond noise at that λ)", lambda v: bool(v["shifted"])),
                         ALL_TRAIN),
          **all_of(lambda v: [margin(e, 0, at_least=False) for e in v["changes"].values()]),
          cases=Cases(holds=_all_layers({"act2": _e(-4.0)}),
                      fails=_all_layers({"act2": _e(3.0)}),
                      preconditions={
                          INTERPOLATES[0]: _all_layers({}, fitted=False),
                          MEMORIZES[0]: _all_layers({}, last_excess=_e(0.5, 1.0)),
                          STILL_TRAINS[0]: _all_layers({}, lam=None),
                          "last-layer regularization shifts memorization (some earlier layer "
                          "rises beyond noise at that λ)": _all_layers({}, shifted={}),
                          ALL_TRAIN[0]: _all_layers({}, all_lam=None)}),
          unit="points", headline=lambda v: max(v["changes"].values(), key=lambda e: e.mean,
                                                default=None),
          caveat="every layer is penalized directly under all-layer regularization, so once "
                 "a shift exists this is a weak test", where="fig5_rlp_regularizer"),
    Claim("all_layers_test", "Regularizing all layers does not necessarily improve test "
          "accuracy.", "qualitative",
          "test accuracy with all layers regularized minus at λ = 0, " + AT_ALL_TRAINED
          + SEEDS,
          f"change < {NO_GAIN:g} point (the paper's own gain from the regularizer is +1.5), "
          f"decided by the 95% t interval of {NO_GAIN:g} − change",
          preconditions=(ALL_TRAIN,),
          **all_of(lambda v: [margin(v["change"], NO_GAIN, at_least=False)]),
          cases=Cases(holds={**_ALL_JUDGED, "change": _e(-2.0)},
                      fails={**_ALL_JUDGED, "change": _e(3.0)},
                      preconditions={ALL_TRAIN[0]: {"all_lam": None, "all_train": None,
                                                    "change": None}}),
          unit="points", headline=lambda v: v["change"],
          caveat="the value also shows last-layer regularization's change at its judged λ",
          where="fig5_rlp_regularizer"),
    Claim("noise", "With label noise the RLP regularizer improves test accuracy.",
          "helps consistently under label noise",
          "test accuracy, best λ > 0 minus λ = 0, at the highest noise rate; " + CHOSEN + SEEDS,
          "gain > 0, decided by the 95% t interval",
          preconditions=(("every seed's λ = 0 run met its declared fit (train acc >= 99% with "
                          ">= 95% of flipped labels fitted), by its fit record",
                          lambda v: v["fitted"]),),
          **all_of(lambda v: [margin(v["gain"], 0)]),
          cases=Cases(holds={"rate": 0.4, "best_lam": 10.0, "fitted": True, "gain": _e(3.0)},
                      fails={"rate": 0.4, "best_lam": 10.0, "fitted": True, "gain": _e(-3.0)},
                      preconditions={"every seed's λ = 0 run met its declared fit (train acc >= "
                                     "99% with >= 95% of flipped labels fitted), by its fit "
                                     "record": {"rate": 0.4, "best_lam": 10.0, "fitted": False,
                                                "gain": _e(3.0)}}),
          unit="points", headline=lambda v: v["gain"],
          caveat="λ chosen on held-out training-split samples, never on test",
          where="fig7_label_noise"),
    Claim("sampling", "Suppressing memorization helps on well-sampled data and hurts on "
          "under-sampled data.", "ImageNet 67.0% → 68.5% at λ = 1e4; small fractions hurt",
          "test-accuracy change from best λ vs λ = 0 on the full training set and on the "
          "smallest fraction, runs of their own at the sampling experiment's label noise "
          "(clean at the small scale); " + CHOSEN + SEEDS,
          "full-set change > 0 and smallest-fraction change < 0, each decided by its 95% t "
          "interval (both arms, as the paper says; their difference is shown beside)",
          preconditions=(("interpolation (train acc >= 99%, worst unregularized run of the "
                          "experiment)", lambda v: v["train"] >= 0.99),),
          **all_of(lambda v: [margin(v["largest"], 0),
                              margin(v["smallest"], 0, at_least=False)]),
          cases=Cases(holds={"train": 1.0, "best_lam": 10.0, "largest": _e(2.0),
                             "smallest": _e(-3.0), "difference": _e(5.0)},
                      fails={"train": 1.0, "best_lam": 10.0, "largest": _e(-2.0),
                             "smallest": _e(-3.0), "difference": _e(1.0)},
                      preconditions={"interpolation (train acc >= 99%, worst unregularized run "
                                     "of the experiment)": {
                          "train": 0.5, "best_lam": 10.0, "largest": _e(2.0),
                          "smallest": _e(-3.0), "difference": _e(5.0)}}),
          unit="points",
          headline=lambda v: f"{v['largest']} (all data) vs {v['smallest']} (smallest "
                             "fraction)",
          caveat="λ chosen on held-out training-split samples, never on test; " + LEFT_OUT,
          where="fig6_sampling"),
    Claim("tails", "Regularization hurts tail classes more than head classes.", "",
          "test-accuracy change from best λ vs λ = 0, mean over the rarer vs commoner half "
          "of classes in a long-tailed subset at the sampling experiment's label noise; "
          + CHOSEN + SEEDS,
          "head change − tail change > 0, decided by the 95% t interval",
          **all_of(lambda v: [margin(v["difference"], 0)]),
          cases=Cases(holds={"best_lam": 10.0, "head": _e(1.0), "tail": _e(-4.0),
                             "difference": _e(5.0)},
                      fails={"best_lam": 10.0, "head": _e(-4.0), "tail": _e(1.0),
                             "difference": _e(-5.0)}),
          unit="points", headline=lambda v: v["difference"], caveat=LEFT_OUT,
          where="fig6_sampling"),
    Claim("imagenet", "On ImageNet the RLP regularizer raises test accuracy, lowers train "
          "accuracy and narrows the train–test gap.", "ViT-B/32: up to +1.5 points test",
          "test accuracy, train accuracy and train − test gap at the best λ minus at λ = 0 "
          "(last-layer regularization, ImageNet arm); " + CHOSEN + SEEDS,
          "test change > 0, train change < 0 and gap change < 0, each decided by its 95% t "
          "interval",
          **all_of(lambda v: [margin(v["test"], 0), margin(v["train"], 0, at_least=False),
                              margin(v["gap"], 0, at_least=False)]),
          cases=Cases(holds={"best_lam": 1e4, "test": _e(1.5), "train": _e(-3.0),
                             "gap": _e(-4.5)},
                      fails={"best_lam": 1e4, "test": _e(-1.5), "train": _e(-3.0),
                             "gap": _e(-1.5)}),
          unit="points", headline=lambda v: v["test"],
          caveat="full scale only (ImageNet arm, GPUs); its preset runs one seed, so more "
                 "seeds are needed to leave within noise", where="lambda_sweep"),
    Claim("imagenet_rlp", "On ImageNet the RLP regularizer lowers random-label accuracy at the "
          "regularized layer.", "ViT-B/32, λ up to 1e4",
          "last-layer RLP accuracy at λ = 0 minus at the best λ (last-layer regularization, "
          "ImageNet arm); " + CHOSEN + SEEDS,
          "drop > 0, decided by the 95% t interval",
          preconditions=(MEMORIZES,),
          **all_of(lambda v: [margin(v["drop"], 0)]),
          cases=Cases(holds={**_PRE, "best_lam": 1e4, "drop": _e(10.0)},
                      fails={**_PRE, "best_lam": 1e4, "drop": _e(-10.0)},
                      preconditions={MEMORIZES[0]: {**_NO_MEMORY, "best_lam": 1e4,
                                                    "drop": _e(10.0)}}),
          unit="points", headline=lambda v: v["drop"],
          caveat="full scale only (ImageNet arm, GPUs)", where="lambda_sweep"),
    Claim("cifar100_train_stable", "On CIFAR-100 the RLP regularizer leaves train accuracy "
          "stable.", "qualitative",
          "train accuracy at the judged λ minus at λ = 0 (last-layer regularization, "
          "CIFAR-100 arm), " + AT_TRAINED + SEEDS,
          f"change > −{NO_GAIN:g} point (train accuracy falls by less than the paper's own "
          f"test gain), decided by the 95% t interval of change + {NO_GAIN:g}",
          preconditions=(STILL_TRAINS,),
          **all_of(lambda v: [margin(v["change"], -NO_GAIN)]),
          cases=Cases(holds={**_JUDGED, "change": _e(-0.2, 0.1)},
                      fails={**_JUDGED, "change": _e(-5.0)},
                      preconditions={STILL_TRAINS[0]: {"lam": None, "change": None}}),
          unit="points", headline=lambda v: v["change"],
          caveat="full scale only (CIFAR-100 arm, GPUs)", where="lambda_sweep"),
    Claim("cifar100_small_lambda", "On CIFAR-100 with WRN-16-4 the RLP regularizer lowers "
          "test accuracy even at a small λ.", "qualitative",
          "test accuracy at the smallest λ > 0 of the sweep minus at λ = 0 (last-layer "
          "regularization, CIFAR-100 arm)" + SEEDS,
          "change < 0, decided by the 95% t interval",
          preconditions=((f"that λ still trains (every seed >= {TRAINS:.0%})",
                          lambda v: v["lam_train"] is not None and v["lam_train"] >= TRAINS),),
          **all_of(lambda v: [margin(v["change"], 0, at_least=False)]),
          cases=Cases(holds={"lam": 10.0, "lam_train": 0.99, "change": _e(-2.0)},
                      fails={"lam": 10.0, "lam_train": 0.99, "change": _e(2.0)},
                      preconditions={f"that λ still trains (every seed >= {TRAINS:.0%})": {
                          "lam": 10.0, "lam_train": 0.2, "change": _e(-40.0)}}),
          unit="points", headline=lambda v: v["change"],
          caveat="full scale only (CIFAR-100 arm, GPUs)", where="lambda_sweep"),
]


# The first registered versions of the rules whose words changed, evaluated beside the new
# ones (register/01_random_label_heads.yaml gives the reasons): the sweep moved to the
# SmallCNN, all-layer regularization got its own λ, early_rise subtracts the frozen head's
# own rise, the sampling experiment got clean-label runs of its own, and the memorization
# target says what it checks.
_AT_THAT_LAMBDA = (f"all-layer regularization at that λ still trains (every seed >= "
                   f"{TRAINS:.0%})", lambda v: v["all_train"] is not None
                   and v["all_train"] >= TRAINS)
_FIRST_WORDS = {
    "depth": dict(preconditions=(("some model interpolates with an RLP excess >= 10 points "
                                  "beyond noise", lambda v: bool(_memorizing(v))),)),
    "early_rise": dict(measure="per seed at λ = 0: first epoch with train − test accuracy > "
                       "5 points minus the epoch at which last-layer RLP accuracy reaches "
                       "half its final excess over chance (epochs, the lead)"),
    "all_layers": dict(
        measure="RLP accuracy change under all-layer regularization, judged λ vs λ = 0, of "
                "each earlier layer that rose beyond noise under last-layer regularization at "
                "the same λ" + SEEDS,
        preconditions=(INTERPOLATES, MEMORIZES, STILL_TRAINS,
                       ("last-layer regularization shifts memorization (some earlier layer "
                        "rises beyond noise at that λ)", lambda v: bool(v["shifted"])),
                       _AT_THAT_LAMBDA),
        cases=Cases(holds=_all_layers({"act2": _e(-4.0)}), fails=_all_layers({"act2": _e(3.0)}),
                    preconditions={
                        INTERPOLATES[0]: _all_layers({}, fitted=False),
                        MEMORIZES[0]: _all_layers({}, last_excess=_e(0.5, 1.0)),
                        STILL_TRAINS[0]: _all_layers({}, lam=None),
                        "last-layer regularization shifts memorization (some earlier layer "
                        "rises beyond noise at that λ)": _all_layers({}, shifted={}),
                        _AT_THAT_LAMBDA[0]: _all_layers({}, all_train=0.3)})),
    "all_layers_test": dict(
        measure="test accuracy with all layers regularized at the judged λ minus at λ = 0, "
                + AT_TRAINED + SEEDS,
        preconditions=(STILL_TRAINS, _AT_THAT_LAMBDA),
        cases=Cases(holds={**_JUDGED, **_ALL_JUDGED, "change": _e(-2.0)},
                    fails={**_JUDGED, **_ALL_JUDGED, "change": _e(3.0)},
                    preconditions={STILL_TRAINS[0]: {"lam": None, "all_train": None,
                                                     "change": None},
                                   _AT_THAT_LAMBDA[0]: {**_JUDGED, "all_train": 0.3,
                                                        "change": _e(-20.0)}})),
    "sampling": dict(
        measure="test-accuracy change from best λ vs λ = 0 on the full training set and on "
                "the smallest fraction; " + CHOSEN + SEEDS,
        preconditions=(("interpolation (train acc >= 99%, worst seed)",
                        lambda v: v["train"] >= 0.99),)),
    "tails": dict(measure="test-accuracy change from best λ vs λ = 0, mean over the rarer vs "
                          "commoner half of classes in a long-tailed subset; " + CHOSEN + SEEDS),
}
CLAIMS = [earlier_version(c, **_FIRST_WORDS[c.id]) if c.id in _FIRST_WORDS else c
          for c in CLAIMS]

# what decides each claim besides its rule: the functions that compute its value (with the
# memlib functions and constants they name) and the preset values they read, all in the
# claim's fingerprint. Every value passes through measure_claims, which reads the runs' final
# rows and histories; the sweep's settings decide which runs those are.
_RECIPE = ("model", "epochs", "noise", "train_samples", "measure_every", "fit_train_acc",
           "fit_flipped_acc")
_SWEEP = (*_RECIPE, "lambdas", "all_lambdas")
_SAMPLING = (*_RECIPE, "lambdas", "sampling_experiment", "sampling_noise", "fractions",
             "long_tail_ratio")
CLAIMS = declare(CLAIMS, {
    "depth": ((measure_claims, memorization), (*_RECIPE, "layer_models",
                                                "layer_model_epochs")),
    "early_rise": ((measure_claims, rise_and_gap, onset_epoch, gap_epoch), _RECIPE),
    "regularizers": ((measure_claims,), (*_RECIPE, "dropouts", "weight_decays",
                                         "label_smoothings")),
    "regularizer_works": ((measure_claims, trained_lambda), _SWEEP),
    "shift": ((measure_claims, trained_lambda, layer_changes), _SWEEP),
    "all_layers": ((measure_claims, trained_lambda, layer_changes), _SWEEP),
    "all_layers_test": ((measure_claims, trained_lambda), _SWEEP),
    "noise": ((measure_claims, best_lambda), (*_RECIPE, "noise_rates", "noise_lambdas")),
    "sampling": ((measure_claims, sampling_claims, best_lambda), _SAMPLING),
    "tails": ((measure_claims, sampling_claims, head_tail_change, best_lambda), _SAMPLING),
    "imagenet": ((measure_claims, best_lambda), _SWEEP),
    "imagenet_rlp": ((measure_claims, best_lambda), _SWEEP),
    "cifar100_small_lambda": ((measure_claims,), _SWEEP),
    "cifar100_train_stable": ((measure_claims, trained_lambda), _SWEEP),
})
