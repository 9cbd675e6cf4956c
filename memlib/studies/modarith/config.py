"""Study 2's Config: the task, the main runs, the analyses, the learning order, the width
sweep and the image runs, each field checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memlib.config import (
    SEED_MAX,
    AtMost,
    Distinct,
    Domain,
    Fraction,
    NonEmpty,
    NonNegative,
    Positive,
    Range,
    Rate,
    check,
    check_fields,
    check_stratified,
)
from memlib.data import NUM_CLASSES, TRAIN_SIZES, resolve_fields
from memlib.presets import declare_defaults
from memlib.studies.modarith.method import Activation, is_prime
from memlib.train import device_name

__all__ = ["Optimizer", "Config", "chance"]


Optimizer = Literal["sgd", "adam", "adamw", "muon"]


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    02_modular_arithmetic_noise.yaml gives the reasons for them and holds any change)."""

    # task and model
    # the ceiling first: the primality of a huge number takes long to check
    p: Annotated[int, AtMost(10**4),
                 Domain(is_prime, "a prime (the Fourier analysis needs it)")] = 59
    operation: Literal["add", "sub"] = "add"
    train_fraction: Annotated[float, Range(0, 1, lo_open=True, hi_open=True)] = 0.8  # not stated
    noise: Literal["wrong", "uniform", "symmetric"] = "wrong"
    width: Annotated[int, Positive, AtMost(2**16)] = 513
    activation: Activation = "relu"
    # main runs: one per (alpha, seed), trained together
    alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.0, 0.2, 0.5, 0.8)
    # the confirmatory seeds registered in register/02_modular_arithmetic_noise.yaml
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (
        800, 801, 802, 803, 804, 805)
    optimizer: Optimizer = "adamw"
    lr: Annotated[float, Positive] = 1e-3
    weight_decay: Annotated[float, NonNegative] = 0.1
    epochs: Annotated[int, Positive, AtMost(10**7)] = 600
    log_every: Annotated[int, Positive, AtMost(10**7)] = 50
    # analyses
    eval_activations: Annotated[tuple[Activation, ...], NonEmpty] = (
        "relu", "quadratic", "abs", "reverse_relu")
    partition_fractions: Annotated[tuple[float, ...], NonEmpty, Fraction] = (
        0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
    spectra_neurons: Annotated[int, Positive, AtMost(2**16)] = 48
    # learning order per optimizer
    order_alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.2, 0.5)
    # variants of the main run at the largest alpha: LeakyReLU nets, multiplication mod p
    variants: tuple[Literal["leaky_relu", "mul"], ...] = ("leaky_relu", "mul")
    order_epochs: Annotated[int, Positive, AtMost(10**7)] = 150
    order_log_every: Annotated[int, Positive, AtMost(10**7)] = 2
    order_optimizers: Annotated[tuple[Optimizer, ...], NonEmpty] = ("adamw", "adam", "muon", "sgd")
    order_lrs: Annotated[tuple[float, ...], Positive] = (1e-3, 1e-3, 0.02, 1.0)
    order_weight_decays: Annotated[tuple[float, ...], NonNegative] = (0.1, 0.0, 0.1, 0.0)
    # the same learning order in mini-batches of this many pairs (the first order optimizer,
    # the largest order alpha, the same epochs): full batch vs mini-batch; None: not run
    order_batch_size: Annotated[int | None, Positive, AtMost(10**7)] = 64
    # width sweep (double descent)
    sweep_widths: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**16)] = (8, 32, 128)
    sweep_alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.2, 0.5, 0.8)
    sweep_activations: Annotated[tuple[Activation, ...], NonEmpty] = ("relu", "quadratic", "gelu")
    sweep_weight_decays: Annotated[tuple[float, ...], NonEmpty, NonNegative] = (0.1, 1.0)
    sweep_epochs: Annotated[int, Positive, AtMost(10**7)] = 300
    # the width sweep runs the first this many seeds (None: all): below full scale no width
    # interpolates within its budget, so its figure needs no more than two; on fewer seeds
    # than a decided rule needs, its rows read "not run at this scale"
    sweep_seeds: Annotated[int | None, Positive, AtMost(10**4)] = 2
    # learning order on images: digits always, `image_dataset` when on disk (else its fallback)
    digits_alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.05, 0.2)
    digits_width: Annotated[int, Positive, AtMost(2**16)] = 256
    digits_lr: Annotated[float, Positive] = 1e-3
    digits_epochs: Annotated[int, NonNegative, AtMost(10**6)] = 300
    image_dataset: Literal["mnist", "mnist-5k", "fashion_mnist", "none"] = "mnist"
    image_fallback: Literal["fashion_mnist", "none"] = "fashion_mnist"
    # each seed's class-stratified subset of the image dataset's training images, drawn from
    # its own seed (runs.split_seed); None: every one of them (60,000 of MNIST, 4,000 of
    # mnist-5k), the same for every seed
    image_samples: Annotated[int | None, Positive, AtMost(10**7)] = 2000
    image_epochs: Annotated[int, NonNegative, AtMost(10**5)] = 100
    # where every run computes: "cpu", "cuda", "cuda:N", "mps", or "auto" (a GPU when there
    # is one), resolved as the config is built: the runs' cache keys name the device
    device: str = "auto"
    # runs at once, each in its own process on one CPU thread (None: the cores this process
    # may use; MEMLIB_WORKERS or --workers overrides it: `process.workers`); in no key
    parallel_runs: Annotated[int | None, Positive, AtMost(256)] = None

    DATASET_FIELDS = ("image_dataset", "image_fallback")  # resolved as the config is built

    def __post_init__(self):
        check_fields(self)
        resolve_fields(self, self.DATASET_FIELDS)
        object.__setattr__(self, "device", device_name(self.device))  # frozen: set once
        check(len(self.order_lrs) == len(self.order_optimizers) == len(self.order_weight_decays),
              "order_optimizers, order_lrs and order_weight_decays must have the same length")
        # multiplication mod p is addition mod p - 1 (multiplication_task)
        for n in (self.p, *([self.p - 1] if "mul" in self.variants else [])):
            check(0 < round(self.train_fraction * n * n) < n * n,
                  f"train_fraction={self.train_fraction} of the {n * n} pairs mod {n} leaves "
                  "the training or the test set empty")
        if self.image_dataset != "none" and self.image_epochs > 0:
            for name in sorted({self.image_dataset, self.image_fallback} - {"none"}):
                check_stratified("image_samples", self.image_samples, NUM_CLASSES[name], name)
                # never clamped to what is there: a run on fewer images is another run
                size = TRAIN_SIZES[name]
                check(self.image_samples is None or self.image_samples <= size,
                      f"image_samples={self.image_samples} asks for more than the {size} "
                      f"training images of {name}; ask for at most {size} (null: all of them)")


def chance(config: Config) -> float:
    return 1 / config.p


declare_defaults("modarith", Config)
