"""One training loop for minibatch and full-batch training.

`train(model, data, spec)` runs `spec.epochs` epochs of `step(model, batch) -> loss`
(cross-entropy by default) over batches `(x, y, idx)`; `idx` are sample indices, the
key for random labels and noise masks. Callbacks see a `State` after every epoch
(and, if given, every step) and may add metrics to `state.row`, or end training after this
epoch by setting `state.stop` (`fit_tracker` does, a declared number of epochs after a
`FitCriterion` is met); the return value is the history as a DataFrame, one row per epoch
(epoch 0 = before training).

The inner loop does nothing per step beyond the plain PyTorch loop except one Python
call to `step` and keeping the detached loss: `benchmarks/train_overhead.py` holds it
to that.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from memlib import distributed
from memlib.cache import load as load_entry
from memlib.cache import save as save_entry
from memlib.config import ConfigError, check
from memlib.process import next_checkpoint, warn_once
from memlib.seed import generator

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
OPTIMIZERS = ("sgd", "adam", "adamw", "muon")
SCHEDULES = ("constant", "cosine", "warmup_cosine")


@dataclass(frozen=True)
class TrainSpec:
    epochs: int = 10
    batch_size: int | None = 128  # None: full batch
    optimizer: Literal["sgd", "adam", "adamw", "muon"] = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    momentum: float = 0.9
    schedule: Literal["constant", "cosine", "warmup_cosine"] = "constant"
    warmup_epochs: float = 0.0
    label_smoothing: float = 0.0
    augment: Literal["none", "crop_flip", "cifar_cutout"] = "none"
    seed: int = 0
    max_steps: int | None = None  # stop early (smoke runs, tests)
    # where it trains: "cpu", "cuda" (this rank's GPU), "cuda:N", "mps"; "auto" only where
    # nothing is keyed by it (a study resolves its device with `device_name` before keying)
    device: str = "cpu"
    precision: Literal["fp32", "bf16"] = "fp32"  # bf16: autocast the forward pass
    # Adam/AdamW as one fused kernel per step (torch's `fused=True`): on a small model about
    # a third of the optimizer's time, with other rounding than the per-operation update.
    # Always on the CPU (make_optimizers), where the per-operation update's bits depend on
    # the processor
    fused: bool = False
    channels_last: bool = False  # NHWC weights and images: faster convolutions on GPUs
    compile: bool = False  # torch.compile the model's forward (taps by name keep working)

    def __post_init__(self):
        check(self.epochs >= 0, f"epochs must be >= 0, got {self.epochs}")
        check(self.batch_size is None or self.batch_size > 0,
              f"batch_size must be positive or None (full batch), got {self.batch_size}")
        check(self.lr > 0, f"lr must be positive, got {self.lr}")
        check(0 <= self.label_smoothing < 1,
              f"label_smoothing must be in [0, 1), got {self.label_smoothing}")


@dataclass
class State:
    model: nn.Module
    epoch: int = 0
    step: int = 0
    loss: torch.Tensor | None = None
    batch: Batch | None = None
    row: dict[str, Any] = field(default_factory=dict)
    stop: bool = False  # set by an end-of-epoch callback: no further epoch runs


@dataclass(frozen=True)
class FitCriterion:
    """When a run counts as having fitted its training labels (noisy ones included): train
    accuracy >= `train_acc` and, where labels were flipped, >= `flipped_acc` of the flipped
    ones predicted as trained. `epochs_after`: training stops that many epochs after the
    first epoch that meets it (None: it runs every epoch of its spec, the fit only recorded);
    the spec's epochs stay the maximum, and its LR schedule spans them."""

    train_acc: float = 0.99
    flipped_acc: float = 0.95
    epochs_after: int | None = None

    def __post_init__(self):
        check(0 < self.train_acc <= 1, f"fit train_acc must be in (0, 1], got {self.train_acc}")
        check(0 < self.flipped_acc <= 1,
              f"fit flipped_acc must be in (0, 1], got {self.flipped_acc}")
        check(self.epochs_after is None or self.epochs_after >= 0,
              f"epochs after the fit must be >= 0 or None, got {self.epochs_after}")

    def met(self, train_acc: float, flipped_acc: float | None) -> bool:
        """`flipped_acc` None: no label was flipped, so only train accuracy counts."""
        return train_acc >= self.train_acc and (flipped_acc is None
                                                or flipped_acc >= self.flipped_acc)


def fit_tracker(criterion: FitCriterion,
                scores: Callable[[State], tuple[float, float | None] | None],
                memo: dict) -> Callable[[State], None]:
    """An end-of-epoch callback (list it before any that must know whether this epoch is the
    last): `scores(state)` gives (train accuracy, fit of the flipped labels or None) at epochs
    >= 1 (None: not measured this epoch), written to the row as fit_train_acc and
    fit_flipped_acc; the first epoch that meets `criterion` goes to memo["fit_epoch"] (None
    until then; checkpointed with the memo), and `criterion.epochs_after` epochs later it
    sets `state.stop`."""
    memo.setdefault("fit_epoch", None)

    def track(state: State) -> None:
        if state.epoch == 0:
            return
        measured = scores(state)
        if measured is None:  # not measured this epoch
            return
        train_acc, flipped = measured
        state.row.update(fit_train_acc=train_acc, fit_flipped_acc=flipped)
        if memo["fit_epoch"] is None and criterion.met(train_acc, flipped):
            memo["fit_epoch"] = state.epoch
        if criterion.epochs_after is not None and memo["fit_epoch"] is not None:
            state.stop = state.epoch >= memo["fit_epoch"] + criterion.epochs_after

    return track


class TensorBatches:
    """Shuffled minibatches (x, y, idx) of in-memory tensors: no DataLoader overhead.

    The permutation comes from a private generator, so batch order depends only on
    the seed; `batch_size=None` yields the whole set once per epoch, unshuffled. Under
    torch.distributed every rank draws the same permutation and keeps every
    world_size-th sample of each global batch, so sample indices stay global.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int | None,
                 seed: int = 0, drop_last: bool = False, augment=None):
        self.x, self.y, self.batch_size, self.drop_last = x, y, batch_size, drop_last
        self.augment = augment  # fn(x, generator) -> x, e.g. from memlib.augment
        self.generator = generator(seed)
        self.rank, self.world = distributed.rank(), distributed.world_size()

    def __len__(self) -> int:
        n, b = len(self.y), self.batch_size
        if b is None:
            return 1
        return n // b if self.drop_last else math.ceil(n / b)

    def __iter__(self) -> Iterable[Batch]:
        n = len(self.y)
        if self.batch_size is None:
            idx = torch.arange(self.rank, n, self.world, device=self.y.device)
            yield (self.x, self.y, idx) if self.world == 1 else (self.x[idx], self.y[idx], idx)
            return
        order = torch.randperm(n, generator=self.generator).to(self.y.device)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            idx = order[start:start + self.batch_size]
            if self.world > 1:
                idx = idx[self.rank::self.world]
            x = self.x[idx]
            yield (x if self.augment is None else self.augment(x, self.generator)), self.y[idx], idx


def dataset_batches(dataset, batch_size: int, seed: int = 0, shuffle: bool = True,
                    workers: int = 4, drop_last: bool = False):
    """Batches (x, y, idx) of a map-style dataset that yields (x, y, idx), e.g. memlib.imagenet:
    for data too large for memory. A DistributedSampler gives each rank its shard of every
    epoch's permutation (global sample indices kept; `batch_size` is the global batch); the
    order depends only on `seed` and the epoch, which `train` sets, so resume is exact."""
    from torch.utils.data import DataLoader, DistributedSampler

    world = distributed.world_size()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=distributed.rank(),
                                 shuffle=shuffle, seed=seed, drop_last=drop_last)
    return DataLoader(dataset, batch_size=max(1, batch_size // world), sampler=sampler,
                      num_workers=workers, pin_memory=torch.cuda.is_available(),
                      persistent_workers=workers > 0, drop_last=drop_last,
                      generator=generator(seed))  # seeds the workers' augmentation


def resolve_device(name: str) -> torch.device:
    return distributed.device() if name == "auto" else torch.device(name)


def device_name(name: str) -> str:
    """`name` (checked) with "auto" resolved: "cuda" where this machine has a GPU (under
    torchrun each rank's own, the same name on every rank), else "cpu". What a study's config
    holds, so that its specs, and so its cache keys, name where a result was computed."""
    check_device(name)
    if name != "auto":
        return name
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(name: str) -> None:
    """Raise ConfigError unless `name` is "auto" or a device this machine has: cpu, cuda,
    cuda:N or mps."""
    choices = "choose auto, cpu, cuda, cuda:N or mps"
    if name == "auto":
        return
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"device={name!r} is not valid; {choices}") from None
    check(device.type in ("cpu", "cuda", "mps"), f"device={name!r} is not valid; {choices}")
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        check((device.index or 0) < count, f"device={name!r} is not available: this machine "
              f"has {count} CUDA device{'s' * (count != 1)}; use device=auto or cpu")
    if device.type == "mps":
        check(torch.backends.mps.is_available(), f"device={name!r} is not available on this "
              "machine; use device=auto or cpu")


def batches(data, spec: TrainSpec):
    """Accept a (x, y) pair, a Split-like object with .x/.y, or any iterable of batches.

    In-memory tensors move to the training device once, not per batch.
    """
    from memlib.augment import AUGMENTATIONS

    if hasattr(data, "x") and hasattr(data, "y") and not hasattr(data, "__iter__"):
        data = (data.x, data.y)  # a Split; an iterable of batches may have .x/.y of its own
    if isinstance(data, (tuple, list)) and len(data) == 2:
        device = resolve_device(spec.device)
        return TensorBatches(data[0].to(device), data[1].to(device), spec.batch_size,
                             spec.seed, augment=AUGMENTATIONS[spec.augment])
    return data


def make_optimizers(params: Iterable[nn.Parameter], spec: TrainSpec) -> list[torch.optim.Optimizer]:
    """Optimizers by name; "muon" takes 2-D weights and hands the rest to AdamW."""
    params = [p for p in params if p.requires_grad]
    wd, lr = spec.weight_decay, spec.lr
    # On the CPU always fused: the per-operation update takes its square root from MKL's
    # vector math library, whose bits depend on the processor (an emulated AMD EPYC's differ
    # from an Intel Xeon's); the fused kernel takes the exact sqrt instruction.
    fused = {"fused": True} if spec.fused or resolve_device(spec.device).type == "cpu" else {}
    if spec.optimizer == "sgd":
        return [torch.optim.SGD(params, lr=lr, momentum=spec.momentum, weight_decay=wd)]
    if spec.optimizer == "adam":
        return [torch.optim.Adam(params, lr=lr, weight_decay=wd, **fused)]
    if spec.optimizer == "adamw":
        return [torch.optim.AdamW(params, lr=lr, weight_decay=wd, **fused)]
    if spec.optimizer == "muon":
        matrices = [p for p in params if p.ndim == 2]
        others = [p for p in params if p.ndim != 2]
        optimizers = [torch.optim.Muon(matrices, lr=lr, weight_decay=wd)] if matrices else []
        return optimizers + ([torch.optim.AdamW(others, lr=lr, weight_decay=wd, **fused)]
                             if others else [])
    raise ValueError(
        f"unknown optimizer {spec.optimizer!r}; choose one of: {', '.join(OPTIMIZERS)}")


def lr_factor(spec: TrainSpec, steps_per_epoch: int) -> Callable[[int], float] | None:
    """Multiplier of the base LR at a given step, or None for a constant LR."""
    if spec.schedule == "constant":
        return None
    total = max(1, spec.epochs * steps_per_epoch)
    warmup = int(spec.warmup_epochs * steps_per_epoch) if spec.schedule == "warmup_cosine" else 0

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def loader_generators(loader) -> list[torch.Generator]:
    """The generators that order (and augment) a loader's batches: checkpointed for resume."""
    found = getattr(loader, "generators", None) or [getattr(loader, "generator", None)]
    return [g for g in found if g is not None]


def to_device(batch: Batch, device: torch.device, channels_last: bool = False) -> Batch:
    x, *rest = (t.to(device, non_blocking=True) for t in batch)
    if channels_last and x.ndim == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    return (x, *rest)


def cross_entropy_step(label_smoothing: float = 0.0):
    def step(model: nn.Module, batch: Batch) -> torch.Tensor:
        x, y, _ = batch
        return F.cross_entropy(model(x), y, label_smoothing=label_smoothing)
    return step


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 2048
             ) -> dict[str, float]:
    """Accuracy and mean cross-entropy in eval mode, batched; restores the previous mode.

    Under torch.distributed each rank scores a shard and the sums are all-reduced.
    """
    was_training = model.training
    model.eval()
    rank, world = distributed.rank(), distributed.world_size()
    if world > 1:
        x, y = x[rank::world], y[rank::world]
    device = next(model.parameters()).device
    correct, loss = 0.0, 0.0
    for start in range(0, len(y), batch_size):
        logits = model(x[start:start + batch_size].to(device))
        target = y[start:start + batch_size].to(device)
        correct += (logits.argmax(1) == target).sum().item()
        loss += F.cross_entropy(logits, target, reduction="sum").item()
    model.train(was_training)
    correct, loss, n = distributed.all_sum([correct, loss, float(len(y))])
    n = max(1.0, n)
    return {"acc": correct / n, "loss": loss / n}


def checkpoint_minutes() -> float:
    """MEMLIB_CHECKPOINT_MINUTES (default 10): how often a training run inside a cached
    computation checkpoints itself. ConfigError (one line) unless it is a number > 0."""
    raw = os.environ.get("MEMLIB_CHECKPOINT_MINUTES", "10")
    try:
        minutes = float(raw)
    except ValueError:
        minutes = math.nan
    if not minutes > 0:  # also rejects nan
        raise ConfigError(f"MEMLIB_CHECKPOINT_MINUTES={raw!r} must be a number of minutes > 0 "
                          "(default 10)")
    return minutes


CHECKPOINT_KEYS = ("modules", "optimizers", "epoch", "step", "stop", "history", "memo", "rng",
                   "loader_rng")


def _read_checkpoint(path: Path, modules: Mapping[str, nn.Module], optimizers: Sequence
                     ) -> dict | None:
    """The training state saved in `path`, or None, with a warning and the file removed, when
    it cannot be read (truncated, corrupted, from another version, or holding other modules
    or optimizers than this run's): the run starts over."""
    try:
        saved = load_entry(path)
        missing = set(CHECKPOINT_KEYS) - set(saved)
        if missing:
            raise ValueError(f"it lacks {', '.join(sorted(missing))}")
        if set(saved["modules"]) != set(modules) or len(saved["optimizers"]) != len(optimizers):
            raise ValueError(f"it holds the modules {', '.join(sorted(saved['modules']))} and "
                             f"{len(saved['optimizers'])} optimizers, this run "
                             f"{', '.join(sorted(modules))} and {len(optimizers)}")
        return saved
    except Exception as err:  # noqa: BLE001 - whatever is wrong with it, start over
        warnings.warn(f"discarding the unreadable checkpoint {path} ({err}); this training run "
                      "starts again from the beginning", RuntimeWarning, stacklevel=3)
        if distributed.is_main():
            path.unlink(missing_ok=True)
        return None


def rng_states() -> dict:
    """Every random stream a training step may draw from: Python's, numpy's and torch's global
    generators (CUDA's per device). The loaders' own generators are saved beside them."""
    import random

    import numpy as np

    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "numpy": [kind, torch.from_numpy(keys.astype("int64")), pos, has_gauss, gauss]}


def set_rng_states(states: Mapping[str, Any]) -> None:
    import random

    import numpy as np

    random.setstate(tuple(tuple(v) if isinstance(v, list) else v for v in states["python"]))
    torch.set_rng_state(states["torch"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])
    kind, keys, pos, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype("uint32"), pos, has_gauss, gauss))


def unsaved_parameters(optimizers: Sequence[torch.optim.Optimizer],
                       modules: Mapping[str, nn.Module]) -> int:
    """How many parameters the optimizers train that belong to none of `modules`: a checkpoint
    of those modules would resume them from their initial values."""
    held = {id(p) for module in modules.values() for p in module.parameters()}
    return sum(id(p) not in held for opt in optimizers for g in opt.param_groups
               for p in g["params"])


def show_progress() -> bool:
    """Progress bars in terminals and interactive notebooks; quiet under papermill and CI."""
    if os.environ.get("MEMLIB_PROGRESS") is not None:
        return os.environ["MEMLIB_PROGRESS"] not in ("0", "false", "")
    if os.environ.get("CI"):
        return False
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def train(model: nn.Module, data, spec: TrainSpec, *,
          step: Callable[[nn.Module, Batch], torch.Tensor] | None = None,
          params: Iterable[nn.Parameter] | None = None,
          eval_sets: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
          callbacks: Sequence[Callable[[State], None]] = (),
          step_callbacks: Sequence[Callable[[State], None]] = (),
          optimizers: Sequence[torch.optim.Optimizer] | None = None,
          checkpoint: str | Path | None = None,
          memo: dict | None = None,
          modules: Mapping[str, nn.Module] | None = None,
          desc: str = "train") -> pd.DataFrame:
    """Train `model` in place and return the per-epoch history.

    `params` defaults to the model's; pass more (e.g. probe heads) to train them too, and
    their modules as `modules` (by name) so that checkpoints hold them.
    Row keys: epoch, step, train_loss, then `<set>_acc` / `<set>_loss` per eval set,
    then whatever the callbacks add.

    `checkpoint`: a file written (atomically, by rank 0) after every epoch with everything
    the rest of the run depends on: the state of `model` and of every module in `modules`,
    every optimizer's, the random streams (Python, numpy, torch, CUDA, the loader's order
    and augmentation), the epoch, step, stop flag, history and `memo` (a dict in which the
    callbacks keep their running state: sums, the best epoch's tensors, logged frames); if
    it exists, training resumes from it, `memo` is restored in place, and the run ends
    bit-for-bit where an uninterrupted run would (on CPU). A run with a checkpoint refuses
    to start (ValueError) when its optimizers train a parameter of no checkpointed module,
    which a resumed run would restart from its initial value. Inside a `memlib.cache.cached`
    computation a checkpoint is automatic: written every MEMLIB_CHECKPOINT_MINUTES (10)
    minutes and removed once the result is cached, so a killed study run restarts from its
    last checkpoint. Random labels and noise masks are functions of their seeds.
    Under torch.distributed (torchrun) gradients are averaged over ranks every step.
    """
    from tqdm.auto import tqdm

    device = resolve_device(spec.device)
    model.to(device, memory_format=torch.channels_last if spec.channels_last else
             torch.preserve_format)
    forward = torch.compile(model) if spec.compile else model
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16)
                if spec.precision == "bf16" else None)
    loader = batches(data, spec)
    step = step or cross_entropy_step(spec.label_smoothing)
    # in-memory tensors are on the device already; DataLoader batches move per step
    move = not isinstance(loader, TensorBatches) or spec.channels_last
    if optimizers is None:
        optimizers = make_optimizers(params if params is not None else model.parameters(), spec)
    factor = lr_factor(spec, len(loader))
    base_lrs = [[g["lr"] for g in opt.param_groups] for opt in optimizers]
    eval_sets = dict(eval_sets or {})
    state = State(model)
    history: list[dict[str, Any]] = []
    trained = [p for opt in optimizers for g in opt.param_groups for p in g["params"]]
    sync = distributed.active()
    if sync:
        distributed.broadcast_parameters(model)

    def end_epoch(losses: list[torch.Tensor]) -> None:
        mean_loss = torch.stack(losses).mean().item() if losses else math.nan
        if sync:
            mean_loss = distributed.all_sum([mean_loss])[0] / distributed.world_size()
        state.row = {"epoch": state.epoch, "step": state.step, "train_loss": mean_loss}
        for name, (x, y) in eval_sets.items():
            for metric, value in evaluate(model, x, y).items():
                state.row[f"{name}_{metric}"] = value
        for callback in callbacks:
            callback(state)
        history.append(state.row)

    every = 0.0
    if checkpoint is None:  # inside a cached computation: its automatic checkpoint, if any
        checkpoint = next_checkpoint()
        every = 60 * checkpoint_minutes()
    memo = memo if memo is not None else {}
    modules = {"model": model, **(modules or {})}
    if checkpoint is not None and (unsaved := unsaved_parameters(optimizers, modules)):
        raise ValueError(f"the optimizers train {unsaved} parameter tensors of no module the "
                         "checkpoint holds; pass their modules as train(..., modules={...})")
    start = last_save = time.monotonic()

    def save_checkpoint(final: bool = False) -> None:
        """Every epoch for an explicit checkpoint; every `every` seconds, and at the end of a
        run longer than that, for an automatic one."""
        nonlocal last_save, every
        if checkpoint is None or not distributed.is_main():
            return
        now = time.monotonic()
        if not (every > 0 and now - start >= every if final else now - last_save >= every):
            return
        last_save = now
        try:
            save_entry(Path(checkpoint), {
                "modules": {name: m.state_dict() for name, m in modules.items()},
                "optimizers": [o.state_dict() for o in optimizers],
                "epoch": state.epoch, "step": state.step, "stop": state.stop,
                "history": history, "memo": memo, "rng": rng_states(),
                "loader_rng": [g.get_state() for g in loader_generators(loader)],
            })
        except OSError as err:  # read-only or full: train on, without checkpoints
            warn_once("checkpoint", f"could not write the checkpoint {checkpoint} "
                      f"({err.strerror or err}); training goes on without checkpoints")
            every = math.inf

    saved = None
    if checkpoint is not None and distributed.broadcast_flag(Path(checkpoint).exists()):
        saved = _read_checkpoint(Path(checkpoint), modules, optimizers)
        if not distributed.broadcast_flag(saved is not None):
            saved = None
    if saved is not None:
        for name, module in modules.items():
            module.load_state_dict(saved["modules"][name])
        for opt, opt_state in zip(optimizers, saved["optimizers"], strict=True):
            opt.load_state_dict(opt_state)
        state.epoch, state.step, history = saved["epoch"], saved["step"], saved["history"]
        state.stop = saved["stop"]
        memo.clear()
        memo.update(saved["memo"])
        set_rng_states(saved["rng"])
        for g, rng in zip(loader_generators(loader), saved["loader_rng"], strict=True):
            g.set_state(rng)
    else:
        end_epoch([])
        save_checkpoint()
    bar = tqdm(range(state.epoch + 1, spec.epochs + 1), desc=desc,
               disable=not show_progress(), leave=False)
    for epoch in bar:
        if state.stop:
            break
        model.train()
        state.epoch = epoch
        losses = []
        if hasattr(getattr(loader, "sampler", None), "set_epoch"):
            loader.sampler.set_epoch(epoch)  # a new shard permutation per epoch, seeded
        for batch in loader:
            if move:
                batch = to_device(batch, device, spec.channels_last)
            if factor is not None:
                scale = factor(state.step)
                for opt, lrs in zip(optimizers, base_lrs):
                    for group, lr in zip(opt.param_groups, lrs):
                        group["lr"] = lr * scale
            if autocast is None:
                loss = step(forward, batch)
            else:
                with autocast:
                    loss = step(forward, batch)
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
            loss.backward()
            if sync:
                distributed.average_gradients(trained)
            for opt in optimizers:
                opt.step()
            state.step += 1
            losses.append(loss.detach())
            if step_callbacks:
                state.loss, state.batch = loss, batch
                for callback in step_callbacks:
                    callback(state)
            if spec.max_steps is not None and state.step >= spec.max_steps:
                break
        end_epoch(losses)
        save_checkpoint()
        bar.set_postfix(loss=f"{history[-1]['train_loss']:.3g}")
        if spec.max_steps is not None and state.step >= spec.max_steps:
            break
    save_checkpoint(final=True)  # a finished long run is not repeated if a later one is killed
    model.eval()
    return pd.DataFrame(history)
