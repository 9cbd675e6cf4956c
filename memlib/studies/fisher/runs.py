"""Study 3's runs: the data and model of a training run, what one run trains and stores (er
every epoch; the scatter set's last-layer inputs and logits at its er peak and at its end),
the measures over what it stored (exact and first-order leave-one-out attribution, gradient
norms, the direct check of exact LOO), each a registered computation of its own, and the
per-example table they make."""

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
    "cached_run", "cached_checks", "STORED_EPOCHS", "exact_attribution", "cached_loo_exact",
    "first_order_attribution", "cached_first_order", "gradient_norm_scores",
    "cached_grad_norms", "direct_check", "cached_loo_direct", "checked", "measures_of",
    "run_result"
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
    """Train once, tracking er on the scatter set every epoch, and store what the measures
    read: the scatter set (its indices, true labels, labels as trained and flip mask), its
    last-layer inputs `h` and logits `z` (float32, as computed) at the er peak and at the last
    epoch, its logits at `early_epoch` (None when the run stopped before it) and its label
    margins summed over epochs >= 1 (the AUM's numerator). er itself is computed here, as the
    run trains: it picks the peak, and keeping every epoch's features instead would take up
    to 20 MB an epoch at full scale."""
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
        s.row["er"] = er
        s.row["clean_fit"] = (pred == ys)[~flip_s].float().mean().item()
        s.row["noisy_fit"] = (pred == ys)[flip_s].float().mean().item() if flip_s.any() else None
        s.row["noisy_true"] = ((pred == true[scatter])[flip_s].float().mean().item()
                               if flip_s.any() else None)
        s.row["scatter_fit"] = (pred == ys).float().mean().item()
        if s.epoch >= 1:
            state["margin_sum"] += margins(z, ys)
        if s.epoch == config.early_epoch:
            state["z_early"] = z
        if s.epoch >= 1 and er > state["best"]:  # the first maximum, as peak_epoch picks it
            state.update(best=er, h=h, z=z)
        state.update(h_last=h, z_last=z)

    fit = fit_tracker(FitCriterion(config.fit_train_acc, config.fit_flipped_acc,
                                   config.epochs_after_fit),
                      lambda s: (s.row["scatter_fit"], s.row["noisy_fit"]), state)
    start = time.perf_counter()
    history = train(model, (train_split.x, labels), spec, callbacks=[track, fit], memo=state,
                    eval_sets={"test": (test_split.x, test_split.y)},
                    desc=f"{model_name} {noise} {corruption:g} seed {seed}")
    train_seconds = time.perf_counter() - start
    return {"history": history, "peak_epoch": peak_epoch(history["er"].to_numpy()),
            "fit_epoch": state["fit_epoch"], "epochs_trained": int(history["epoch"].iloc[-1]),
            "train_seconds": train_seconds, "num_classes": num_classes,
            "scatter": {"index": scatter, "true": true[scatter], "label": ys, "flipped": flip_s},
            "peak": {"h": state["h"], "z": state["z"]},
            "last": {"h": state["h_last"], "z": state["z_last"]},
            "early_z": state.get("z_early"), "margin_sum": state["margin_sum"]}


def _run_key(config: Config, model_name: str, noise: str, corruption: float, seed: int,
             epochs: int) -> dict:
    shared = {k: v for k, v in to_dict(config).items()
              if k not in ("corruptions", "seeds", "attribution_seeds", "arch_models",
                           "arch_epochs", "arch_seeds", "human_label_sets", "human_seeds",
                           "synthetic_n", "top_k", "attribution_corruption",
                           "parallel_runs",  # which process computes a run, not what
                           "direct_checks")}  # read by the measures, not by the training
    return {**shared, "dataset": config.dataset, "model": model_name,
            "noise": noise, "corruption": corruption,
            "seed": seed, "epochs": epochs}


# --- the registered computations ---------------------------------------------------------


@computation("fisher-run", 1, spec=lambda item: _run_key(*item))
def cached_run(item: tuple) -> dict:
    """The training run `item` = (config, *one of training_runs(config)) and what it stores."""
    config, *spec = item
    return train_run(config, *spec)


@computation("fisher-math-checks", 1,
             spec=lambda config: {"n": config.synthetic_n, "fisher_kernel": kernel_backend("cpu")})
def cached_checks(config: Config) -> pd.DataFrame:
    """The math checks."""
    return math_checks(config.synthetic_n)


# --- the measures over what a run stored --------------------------------------------------

STORED_EPOCHS = ("peak", "last")  # the epochs whose last-layer inputs and logits a run stores


def _measure_key(item: tuple, **settings) -> dict:
    """A measure's key: the training run's own key (whatever re-keys the training re-keys its
    measures) and the measure's settings."""
    return {"run": cached_run.key(item), **settings}


def exact_attribution(h: torch.Tensor, z: torch.Tensor, labels: torch.Tensor,
                      config: Config) -> dict:
    """Exact LOO Delta of every example of (h, z, labels), the scatter's er and rank, and the
    seconds they took (the eigendecomposition included)."""
    start = time.perf_counter()
    lam, coords = decompose(h, z, labels, config.bias)
    delta = loo_exact(lam, coords, config.spectrum, device=config.device)
    return {"delta": delta, "er": effective_rank(lam, config.spectrum).item(), "rank": len(lam),
            "seconds": time.perf_counter() - start}


def _exact_key(argument: tuple) -> dict:
    (config, *_), at = argument
    return _measure_key(argument[0], at=at, spectrum=config.spectrum, bias=config.bias,
                        device=config.device, fisher_kernel=kernel_backend(config.device))


@computation("fisher-loo-exact", 1, spec=_exact_key)
def cached_loo_exact(argument: tuple) -> dict:
    """Exact LOO attribution at the stored epoch `at` of the training run `item`
    (`argument` = (item, at), `at` one of STORED_EPOCHS), on the config's device."""
    item, at = argument
    result = cached_run(item)
    return exact_attribution(result[at]["h"], result[at]["z"], result["scatter"]["label"],
                             item[0])


def first_order_attribution(h: torch.Tensor, z: torch.Tensor, labels: torch.Tensor,
                            config: Config) -> dict:
    """First-order LOO Delta of every example and the seconds it took (the eigendecomposition
    included)."""
    start = time.perf_counter()
    lam, coords = decompose(h, z, labels, config.bias)
    return {"delta": loo_first_order(lam, coords, config.spectrum),
            "seconds": time.perf_counter() - start}


@computation("fisher-loo-first-order", 1,
             spec=lambda item: _measure_key(item, spectrum=item[0].spectrum, bias=item[0].bias))
def cached_first_order(item: tuple) -> dict:
    """First-order LOO attribution at the er peak of the training run `item` (on the CPU)."""
    result = cached_run(item)
    peak = result["peak"]
    return first_order_attribution(peak["h"], peak["z"], result["scatter"]["label"], item[0])


def gradient_norm_scores(h: torch.Tensor, z: torch.Tensor, labels: torch.Tensor,
                  config: Config) -> dict:
    """Each example's last-layer gradient norm and the seconds they took."""
    start = time.perf_counter()
    norms = gradient_norms(h, z, labels, config.bias)
    return {"norms": norms, "seconds": time.perf_counter() - start}


@computation("fisher-grad-norms", 1, spec=lambda item: _measure_key(item, bias=item[0].bias))
def cached_grad_norms(item: tuple) -> dict:
    """The gradient norms at the er peak of the training run `item` (on the CPU)."""
    result = cached_run(item)
    peak = result["peak"]
    return gradient_norm_scores(peak["h"], peak["z"], result["scatter"]["label"], item[0])


def checked(config: Config, noise: str, corruption: float) -> bool:
    """Whether a run's exact LOO is checked against direct eigensolves: its symmetric-noise
    runs at attribution_corruption, when direct_checks asks for any."""
    return (config.direct_checks > 0 and noise == "symmetric"
            and corruption == config.attribution_corruption)


def direct_check(h: torch.Tensor, z: torch.Tensor, labels: torch.Tensor, exact: dict,
                 pick: torch.Tensor, config: Config) -> dict:
    """The largest difference between exact LOO (`exact_attribution`'s result) and one direct
    eigensolve per example of `pick`, and the seconds a direct solve takes per example."""
    start = time.perf_counter()
    direct = exact["er"] - loo_direct(h, z, labels, pick, config.bias, config.spectrum)
    seconds = (time.perf_counter() - start) / len(pick)
    return {"max_abs_error": (direct - exact["delta"][pick]).abs().max().item(),
            "seconds_per_example": seconds}


def _direct_key(item: tuple) -> dict:
    return {"exact": cached_loo_exact.key((item, "peak")), "checks": item[0].direct_checks}


@computation("fisher-loo-direct", 1, spec=_direct_key)
def cached_loo_direct(item: tuple) -> dict:
    """Exact LOO at the er peak of the training run `item` against `direct_checks` direct
    eigensolves, of examples drawn from the run's seed."""
    config, seed = item[0], item[4]
    result = cached_run(item)
    labels = result["scatter"]["label"]
    pick = torch.randperm(len(labels), generator=generator(seed))[:config.direct_checks]
    return direct_check(result["peak"]["h"], result["peak"]["z"], labels,
                        cached_loo_exact((item, "peak")), pick, config)


def measures_of(item: tuple) -> list[list[tuple]]:
    """The measures of the training run `item`, in the order they can be computed: exact LOO
    (at each stored epoch), first-order LOO and the gradient norms; then the direct check,
    which reads exact LOO."""
    config, _, noise, corruption, _, _ = item
    first = ([(cached_loo_exact, (item, at)) for at in STORED_EPOCHS]
             + [(cached_first_order, item), (cached_grad_norms, item)])
    return [first, [(cached_loo_direct, item)] if checked(config, noise, corruption) else []]


def _losses(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(z.double(), labels, reduction="none")


def run_result(item: tuple) -> dict:
    """The training run `item` with its measures: its history, one row per scatter example
    (the attributions, the losses at the peak, early and (on the true labels) last epochs, the
    gradient norm and AUM), where er peaks, its rank and bound there, the direct check's error
    (nan where not checked) and the measures' seconds."""
    config, _, noise, corruption, _, _ = item
    result = cached_run(item)
    scatter, peak, last = result["scatter"], result["peak"], result["last"]
    labels = scatter["label"]
    exact, exact_last = (cached_loo_exact((item, at)) for at in STORED_EPOCHS)
    first, norms = cached_first_order(item), cached_grad_norms(item)
    direct = cached_loo_direct(item) if checked(config, noise, corruption) else None
    early_z = peak["z"] if result["early_z"] is None else result["early_z"]
    examples = pd.DataFrame({
        "index": scatter["index"].numpy(), "true": scatter["true"].numpy(),
        "label": labels.numpy(), "flipped": scatter["flipped"].numpy(),
        "delta_exact": exact["delta"].numpy(), "delta_first": first["delta"].numpy(),
        "delta_last": exact_last["delta"].numpy(),
        "loss_peak": _losses(peak["z"], labels).numpy(),
        "loss_early": _losses(early_z, labels).numpy(), "grad_norm": norms["norms"].numpy(),
        "aum": (result["margin_sum"] / result["epochs_trained"]).numpy(),
        "final_loss_true": _losses(last["z"], scatter["true"]).numpy()})
    timings = {"loo_exact": exact["seconds"], "loo_first_order": first["seconds"],
               "grad_norm": norms["seconds"]}
    if direct is not None:
        timings["loo_direct_per_example"] = direct["seconds_per_example"]
    return {"history": result["history"], "examples": examples,
            "peak_epoch": result["peak_epoch"], "fit_epoch": result["fit_epoch"],
            "epochs_trained": result["epochs_trained"], "rank": exact["rank"],
            "rank_bound": rank_bound(result["num_classes"], peak["h"].shape[1], config.bias),
            "direct_error": math.nan if direct is None else direct["max_abs_error"],
            "train_seconds": result["train_seconds"], "timings": timings}
