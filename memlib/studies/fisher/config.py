"""Study 3's configuration: the Config every run and claim reads, and the models and
CIFAR-10N label sets it may name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memlib import data as mdata
from memlib.config import (
    SEED_MAX,
    AtLeast,
    AtMost,
    Distinct,
    Fraction,
    NonEmpty,
    NonNegative,
    Positive,
    Rate,
    check,
    check_fields,
    check_stratified,
)
from memlib.presets import declare_defaults
from memlib.train import device_name

__all__ = [
    "MODEL_NAMES", "HUMAN_SETS", "Config"
]

MODEL_NAMES = ("mlp", "smallcnn", "resnet18", "vit_tiny", "vit_base_patch32_224")
HUMAN_SETS = {"aggre": "aggre_label", "random1": "random_label1", "worst": "worse_label"}


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    03_fisher_rank_inflation.yaml gives the reasons for them and holds any change)."""

    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    dataset: Literal["fashion_mnist", "mnist", "mnist-5k", "cifar10", "cifar100",
                     "digits"] = "fashion_mnist"
    # each run's class-stratified subsets, drawn from its seed (runs.subset_seed), so that the
    # replicates vary the data; 0: the whole split, the same for every run
    n_train: Annotated[int, NonNegative, AtMost(10**7)] = 2000
    n_test: Annotated[int, NonNegative, AtMost(10**7)] = 2000
    # the fixed scatter (and attribution) set, a subset of training
    n_scatter: Annotated[int, AtLeast(10), AtMost(10**7)] = 1000
    model: Literal["mlp", "smallcnn", "resnet18", "vit_tiny", "vit_base_patch32_224"] = "mlp"
    mlp_widths: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**16)] = (256, 64)
    cnn_channels: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**14)] = (8, 16, 32)
    corruptions: Annotated[tuple[float, ...], NonEmpty, Distinct, Rate] = (0.0, 0.2, 0.4, 0.6)
    # the confirmatory seeds registered in register/03_fisher_rank_inflation.yaml
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = tuple(
        range(800, 812))
    # the attribution arm: seeds of its own that run only the clean run and the run at
    # attribution_corruption, read only by the first_order and difficulty_control rules
    attribution_seeds: Annotated[tuple[int, ...], Distinct, NonNegative,
                                 AtMost(SEED_MAX)] = tuple(range(812, 826))
    epochs: Annotated[int, AtLeast(2), AtMost(10**4)] = 100
    batch_size: Annotated[int, Positive, AtMost(2**20)] = 32
    optimizer: Literal["sgd", "adam", "adamw"] = "adam"
    lr: Annotated[float, Positive] = 1e-3
    weight_decay: Annotated[float, NonNegative] = 0.0
    bias: bool = True
    spectrum: Literal["eig", "sv"] = "eig"
    attribution_corruption: Annotated[float, Rate] = 0.4
    early_epoch: Annotated[int, Positive, AtMost(10**4)] = 2
    top_k: Annotated[int, Positive, AtMost(10**7)] = 100
    # examples re-solved by direct eigensolve in the attribution run
    direct_checks: Annotated[int, NonNegative, AtMost(10**5)] = 10
    arch_models: tuple[str, ...] = ("smallcnn",)  # at attribution_corruption
    arch_epochs: Annotated[int, AtLeast(2), AtMost(10**4)] = 15
    # the first arch_seeds of seeds, per extra model (small: the SmallCNN on every seed, the
    # replicates the first_order rule reads)
    arch_seeds: Annotated[int, Positive, AtMost(10**4)] = 7
    human_label_sets: tuple[str, ...] = ()  # CIFAR-10N: aggre, random1, worst
    # each label set runs on the first human_seeds of seeds: its rows' replicates
    human_seeds: Annotated[int, Positive, AtMost(10**4)] = 1
    synthetic_n: Annotated[int, AtLeast(20), AtMost(10**7)] = 300
    # seeded batched crop + flip (+ cutout) of the training batches (memlib.augment); er and
    # the attribution are measured on the un-augmented scatter set in eval mode
    augment: Literal["none", "crop_flip", "cifar_cutout"] = "none"
    # standardized by the training split's per-channel statistics, or the stored [0, 1] pixels
    inputs: Literal["standardized", "unit"] = "standardized"
    # the declared fit (memlib.train.FitCriterion), checked every epoch on the scatter set:
    # accuracy on the labels as trained and the fit of the flipped ones; `epochs` and
    # `arch_epochs` are the maximum, and with `epochs_after_fit` a run stops that many epochs
    # after its fit (None: every run trains all its epochs, the fit only recorded)
    fit_train_acc: Annotated[float, Fraction] = 0.99
    fit_flipped_acc: Annotated[float, Fraction] = 0.95
    epochs_after_fit: Annotated[int | None, NonNegative, AtMost(10**4)] = 10
    # where every run computes: "cpu", "cuda", "cuda:N", "mps", or "auto" (a GPU when there
    # is one), resolved as the config is built: the runs' cache keys name the device
    device: str = "auto"
    # runs at once, each in its own process on one CPU thread (None: the cores this process
    # may use; MEMLIB_WORKERS or --workers overrides it: `process.workers`); in no key
    parallel_runs: Annotated[int | None, Positive, AtMost(256)] = None

    # the fields holding an arm's seeds, registered with `seeds` (memlib.config.confirmatory_seeds)
    ARM_SEEDS = ("attribution_seeds",)
    DATASET_FIELDS = ("dataset",)  # resolved as the config is built (memlib.data.resolve)

    def __post_init__(self):
        check_fields(self)
        mdata.resolve_fields(self, self.DATASET_FIELDS)
        object.__setattr__(self, "device", device_name(self.device))  # frozen: set once
        both = [s for s in self.attribution_seeds if s in self.seeds]
        check(not both, f"seeds {both} are in both seeds and attribution_seeds: the attribution "
                        "arm needs seeds of its own")
        check(self.attribution_corruption in self.corruptions,
              f"attribution_corruption={self.attribution_corruption} must be one of "
              f"corruptions {self.corruptions}")
        check(self.n_train == 0 or self.n_scatter <= self.n_train,
              f"n_scatter={self.n_scatter} exceeds n_train={self.n_train}")
        sizes = {"n_train": (mdata.TRAIN_SIZES[self.dataset], "training"),
                 "n_test": (mdata.TEST_SIZES[self.dataset], "test")}
        for name, (size, split) in sizes.items():
            count = getattr(self, name)
            check_stratified(name, count, mdata.NUM_CLASSES[self.dataset], self.dataset)
            # never clamped to what is there: a run of fewer images is another run
            check(count <= size, f"{name}={count} asks for more than the {size} {split} images "
                                 f"of {self.dataset}; ask for at most {size} (0: all of them)")
        check(self.n_train or self.n_scatter <= sizes["n_train"][0],
              f"n_scatter={self.n_scatter} asks for more than the {sizes['n_train'][0]} "
              f"training images of {self.dataset}")
        check(self.early_epoch <= self.epochs,
              f"early_epoch must be in 1..epochs, got {self.early_epoch}")
        bad = [m for m in self.arch_models if m not in MODEL_NAMES]
        check(not bad, f"unknown model {bad[:1]}; choose from: {', '.join(MODEL_NAMES)}")
        bad = [s for s in self.human_label_sets if s not in HUMAN_SETS]
        check(not bad, f"unknown human label set {bad[:1]}; choose from: {', '.join(HUMAN_SETS)}")
        check(self.human_seeds <= len(self.seeds),
              f"human_seeds={self.human_seeds} exceeds the {len(self.seeds)} seeds")
        check(not self.human_label_sets or self.dataset == "cifar10",
              "human_label_sets (CIFAR-10N) need dataset=cifar10")


declare_defaults("fisher", Config)
