"""Study 3's runs: the data and model of a training run, what one run computes (er every
epoch, the attribution at its peak and at its end) and the registered computations that
cache it."""

from __future__ import annotations

import functools
import math
import time

import pandas as pd
import torch
import torch.nn.functional as F

from memlib import data as mdata
from memlib import models
from memlib.config import to_dict
from memlib.runs import computation
from memlib.seed import generator, seed_everything
from memlib.studies.fisher.config import HUMAN_SETS, Config
from memlib.studies.fisher.method import (
    decompose,
    effective_rank,
    gradient_norms,
    kernel_backend,
    last_layer,
    loo_direct,
    loo_exact,
    loo_first_order,
    margins,
    math_checks,
    peak_epoch,
    rank_bound,
    scatter_effective_rank,
)
from memlib.train import FitCriterion, TrainSpec, fit_tracker, train

__all__ = [
    "SUBSET_STREAM", "subset_seed", "run_data", "human_labels", "build_model", "train_run",
    "cached_run", "cached_checks"
]

# offsets a run's seed into the stream that draws its training and test subsets
SUBSET_STREAM = 3_000_017


def subset_seed(seed: int) -> int:
    """The seed of run `seed`'s training and test subsets: each replicate draws its own, so
    that a claim about the method is not a claim about one sample of the data."""
    return SUBSET_STREAM + seed


@functools.lru_cache(maxsize=4)
def run_data(dataset: str, n_train: int, n_test: int, inputs: str, seed: int):
    """Run `seed`'s stratified training and test subsets (`subset_seed`; 0: the whole split,
    the same for every run), their images scaled as `inputs` says (memlib.data.scale_inputs),
    and the training subset's indices (None: the whole split). A size larger than its split is
    a DataRequestError naming both numbers, never clamped to what is there."""
    train_split, test_split = mdata.load(dataset, "train"), mdata.load(dataset, "test")
    tr = mdata.sized_subset(train_split.y, n_train or None, subset_seed(seed), "n_train",
                            f"training images of {dataset}")
    te = mdata.sized_subset(test_split.y, n_test or None, subset_seed(seed) + 1, "n_test",
                            f"test images of {dataset}")
    train_split = train_split.subset(tr) if tr is not None else train_split
    test_split = test_split.subset(te) if te is not None else test_split
    scaled = [mdata.Split(mdata.scale_inputs(dataset, part.x, inputs), part.y, part.classes)
              for part in (train_split, test_split)]
    return *scaled, tr


def human_labels(label_set: str, indices=None) -> torch.Tensor:
    """CIFAR-10N human labels (Wei et al. 2022) in torchvision's CIFAR-10 training order."""
    labels = mdata.cifar10n_labels(HUMAN_SETS[label_set])
    n = len(mdata.load("cifar10", "train"))
    if len(labels) != n:  # a label per training image, in the same order, or nothing is right
        raise ValueError(f"CIFAR-10N file has {len(labels)} {HUMAN_SETS[label_set]} entries but "
                         f"CIFAR-10 train has {n} images; it must be the file for this set")
    return labels if indices is None else labels[indices]


def build_model(config: Config, name: str, num_classes: int, in_shape) -> torch.nn.Module:
    if name == "mlp":
        return models.build("mlp", num_classes, in_shape, widths=config.mlp_widths)
    if name == "smallcnn":
        return models.build("smallcnn", num_classes, in_shape, channels=config.cnn_channels)
    if name == "resnet18":  # CIFAR-sized inputs get the CIFAR stem (3x3, no max-pool)
        return models.build(name, num_classes, in_shape, cifar_stem=in_shape[-1] <= 32)
    return models.build(name, num_classes, in_shape)


def train_run(config: Config, model_name: str, noise: str, corruption: float, seed: int,
              epochs: int) -> dict:
    """Train once, tracking er on the scatter set every epoch; attribution at the peak."""
    train_split, test_split, subset = run_data(config.dataset, config.n_train, config.n_test,
                                            config.inputs, seed)
    num_classes = train_split.num_classes
    true = train_split.y
    if noise == "symmetric":
        labels, flipped = mdata.symmetric_noise(true, corruption, num_classes, seed=1000 + seed)
    else:
        labels = human_labels(noise, subset)
        flipped = labels != true
    scatter = torch.randperm(len(true), generator=generator(2000 + seed))[:config.n_scatter]
    scatter = scatter.sort().values
    xs, ys = train_split.x[scatter], labels[scatter]
    seed_everything(seed)
    model = build_model(config, model_name, num_classes, tuple(train_split.x.shape[1:]))
    spec = TrainSpec(epochs=epochs, batch_size=config.batch_size, optimizer=config.optimizer,
                     lr=config.lr, weight_decay=config.weight_decay, seed=seed,
                     augment=config.augment, device=config.device)
    # the callback's running state, checkpointed with the model so a resumed run keeps it
    state = {"best": -math.inf, "margin_sum": torch.zeros(len(ys), dtype=torch.float64)}
    flip_s = flipped[scatter]

    def track(s):
        h, z = last_layer(s.model, model_name, xs)
        start = time.perf_counter()
        er = scatter_effective_rank(h, z, ys, config.bias, config.spectrum)
        s.row["er_seconds"] = time.perf_counter() - start
        pred = z.argmax(1)
        loss = F.cross_entropy(z.double(), ys, reduction="none")
        s.row["er"] = er
        s.row["clean_fit"] = (pred == ys)[~flip_s].float().mean().item()
        s.row["noisy_fit"] = (pred == ys)[flip_s].float().mean().item() if flip_s.any() else None
        s.row["noisy_true"] = ((pred == true[scatter])[flip_s].float().mean().item()
                               if flip_s.any() else None)
        s.row["scatter_fit"] = (pred == ys).float().mean().item()
        if s.epoch >= 1:
            state["margin_sum"] += margins(z, ys)
        if s.epoch == config.early_epoch:
            state["loss_early"] = loss
        if s.epoch >= 1 and er > state["best"]:
            state.update(best=er, h=h, z=z, loss_peak=loss)
        state["final_loss_true"] = F.cross_entropy(z.double(), true[scatter], reduction="none")
        state.update(h_last=h, z_last=z)

    fit = fit_tracker(FitCriterion(config.fit_train_acc, config.fit_flipped_acc,
                                   config.epochs_after_fit),
                      lambda s: (s.row["scatter_fit"], s.row["noisy_fit"]), state)
    start = time.perf_counter()
    history = train(model, (train_split.x, labels), spec, callbacks=[track, fit], memo=state,
                    eval_sets={"test": (test_split.x, test_split.y)},
                    desc=f"{model_name} {noise} {corruption:g} seed {seed}")
    train_seconds = time.perf_counter() - start
    epochs_trained = int(history["epoch"].iloc[-1])
    peak = peak_epoch(history["er"].to_numpy())
    h, z = state["h"], state["z"]
    timings = {}
    start = time.perf_counter()
    lam, coords = decompose(h, z, ys, config.bias)
    timings["decompose"] = time.perf_counter() - start
    start = time.perf_counter()
    exact = loo_exact(lam, coords, config.spectrum, device=config.device)
    timings["loo_exact"] = time.perf_counter() - start + timings["decompose"]
    start = time.perf_counter()
    first = loo_first_order(lam, coords, config.spectrum)
    timings["loo_first_order"] = time.perf_counter() - start + timings["decompose"]
    start = time.perf_counter()
    norms = gradient_norms(h, z, ys, config.bias)
    timings["grad_norm"] = time.perf_counter() - start
    direct_error = math.nan
    checked = corruption == config.attribution_corruption and noise == "symmetric"
    if checked and config.direct_checks:
        pick = torch.randperm(len(ys), generator=generator(seed))[:config.direct_checks]
        start = time.perf_counter()
        direct = effective_rank(lam, config.spectrum) - loo_direct(h, z, ys, pick, config.bias,
                                                                   config.spectrum)
        timings["loo_direct_per_example"] = (time.perf_counter() - start) / len(pick)
        direct_error = (direct - exact[pick]).abs().max().item()
    # the same attribution at the last epoch, after the noise has been (partly) fitted
    lam_last, coords_last = decompose(state["h_last"], state["z_last"], ys, config.bias)
    exact_last = loo_exact(lam_last, coords_last, config.spectrum, device=config.device)
    examples = pd.DataFrame({
        "index": scatter.numpy(), "true": true[scatter].numpy(), "label": ys.numpy(),
        "flipped": flip_s.numpy(), "delta_exact": exact.numpy(), "delta_first": first.numpy(),
        "delta_last": exact_last.numpy(),
        "loss_peak": state["loss_peak"].numpy(),
        "loss_early": state.get("loss_early", state["loss_peak"]).numpy(),
        "grad_norm": norms.numpy(), "aum": (state["margin_sum"] / epochs_trained).numpy(),
        "final_loss_true": state["final_loss_true"].numpy()})
    return {"history": history, "examples": examples, "peak_epoch": peak,
            "fit_epoch": state["fit_epoch"], "epochs_trained": epochs_trained,
            "er_full": effective_rank(lam, config.spectrum).item(), "rank": len(lam),
            "rank_bound": rank_bound(num_classes, h.shape[1], config.bias),
            "direct_error": direct_error, "train_seconds": train_seconds, "timings": timings}


def _run_key(config: Config, model_name: str, noise: str, corruption: float, seed: int,
             epochs: int) -> dict:
    shared = {k: v for k, v in to_dict(config).items()
              if k not in ("corruptions", "seeds", "attribution_seeds", "arch_models",
                           "arch_epochs", "arch_seeds", "human_label_sets", "human_seeds",
                           "synthetic_n", "top_k", "attribution_corruption",
                           "parallel_runs",  # which process computes a run, not what
                           "direct_checks")}
    return {**shared, "dataset": config.dataset, "model": model_name,
            "noise": noise, "corruption": corruption,
            "seed": seed, "epochs": epochs,
            "direct_checks": config.direct_checks
            if corruption == config.attribution_corruption else 0,
            "attribution_corruption": config.attribution_corruption,
            "fisher_kernel": kernel_backend(config.device)}


# --- the registered computations ---------------------------------------------------------


@computation("fisher-run", 1, spec=lambda item: _run_key(*item))
def cached_run(item: tuple) -> dict:
    """The training run `item` = (config, *one of training_runs(config))."""
    config, *spec = item
    return train_run(config, *spec)


@computation("fisher-math-checks", 1,
             spec=lambda config: {"n": config.synthetic_n, "fisher_kernel": kernel_backend("cpu")})
def cached_checks(config: Config) -> pd.DataFrame:
    """The math checks."""
    return math_checks(config.synthetic_n)
