"""Study 4's configuration: the Config of the task-complexity probes, and the datasets, class
pairs and names it chooses among."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

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
from memlib.data import NUM_CLASSES, TEST_SIZES, TRAIN_SIZES, resolve_fields
from memlib.presets import declare_defaults
from memlib.train import device_name

DATASETS = ("fashion_mnist", "mnist", "mnist-5k")
TASKS = ("easy", "hard")
# The authors' pairs: "hard" is the most similar pair (smallest 1 - SSIM distance).
AUTHORS_PAIRS = {"fashion_mnist": {"easy": (3, 2), "hard": (3, 1)},
                 "mnist": {"easy": (0, 7), "hard": (7, 9)}}
# Without the MNIST IDX files, "mnist" runs on the bundled 5,000 digits (resolved as the config
# is built):
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
DISTILBERT = "dslim/distilbert-NER"


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    04_task_complexity_probes.yaml gives the reasons for them and holds any change)."""

    datasets: Annotated[tuple[str, ...], NonEmpty, Distinct] = ("fashion_mnist", "mnist")
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
    # (the confirmatory seeds registered in register/04_task_complexity_probes.yaml)
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = tuple(
        range(800, 854))
    # each run's training images per class, drawn from its own seed (runs.subset_seed); None:
    # every training image of the two classes
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
    # one ViT stand-in per seed: its initialisation, batch order, training subset and probe
    # draws; seeds of their own, none of `seeds`
    standin_seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative,
                             AtMost(SEED_MAX)] = tuple(range(854, 859))
    # each stand-in's training and test images, class-stratified draws from its own seed
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
    # where every run computes: "cpu", "cuda", "cuda:N", "mps", or "auto" (a GPU when there
    # is one), resolved as the config is built: the runs' cache keys name the device
    device: str = "auto"
    # runs at once, each in its own process on one CPU thread (None: the cores this process
    # may use; MEMLIB_WORKERS or --workers overrides it: `process.workers`); in no key
    parallel_runs: Annotated[int | None, Positive, AtMost(256)] = None

    # the stand-in's replicates run on seeds of their own, registered with `seeds`
    ARM_SEEDS = ("standin_seeds",)
    DATASET_FIELDS = ("datasets",)  # resolved as the config is built (memlib.data.resolve)

    def __post_init__(self):
        check_fields(self)
        for name in self.datasets:
            check(name in DATASETS,
                  f"unknown dataset {name!r}; choose from: {', '.join(DATASETS)}")
        resolve_fields(self, self.DATASET_FIELDS)
        object.__setattr__(self, "device", device_name(self.device))  # frozen: set once
        sizes = {"standin_train": (TRAIN_SIZES["fashion_mnist"], "training"),
                 "standin_test": (TEST_SIZES["fashion_mnist"], "test")}
        for name, (size, split) in sizes.items():  # stand-in: 10-class Fashion-MNIST
            count = getattr(self, name)
            check_stratified(name, count, NUM_CLASSES["fashion_mnist"], "fashion_mnist")
            check(count <= size, f"{name}={count} asks for more than the {size} {split} images "
                                 f"of fashion_mnist; ask for at most {size}")
        shared = sorted(set(self.seeds) & set(self.standin_seeds))
        check(not shared, f"seeds and standin_seeds both hold {', '.join(map(str, shared))}: the "
                          "stand-in's models need seeds of their own")
        check(self.heatmap_runs <= len(self.seeds),
              f"heatmap_runs={self.heatmap_runs} exceeds the {len(self.seeds)} seeds")
        check(0.0 in self.prune_levels and 0.0 in self.flip_levels,
              "prune_levels and flip_levels must include 0.0 (the unprobed reference)")

    @property
    def runs(self) -> int:
        return len(self.seeds)

    @property
    def seed(self) -> int:
        """The first seed: the draws of the SSIM pairs, of the heatmaps' null models and of
        DistilBERT's probes."""
        return self.seeds[0]


def check_before_a_run(config: Config) -> None:
    """ConfigError when `train_per_class` or `heatmap_train_per_class` asks for more training
    images of a class than a dataset the run reads holds (the smallest class counts): the
    subset would be every image unseen, and the key and the manifest would record a size never
    used. The bundled MNIST subset's sizes are those of the full set it stands in for
    (`runs.pair_epochs` trains as many steps), so its bound is the full set's."""
    from memlib import data

    for name in config.datasets:
        if name == MNIST_5K:
            most, where = MNIST_PER_CLASS, "the full MNIST set the bundled subset stands in for"
        else:
            counts = data.load(name, "train", download=False).y.bincount()
            most, where = int(counts.min()), f"the smallest class of {name}"
        for field in ("train_per_class", "heatmap_train_per_class"):
            wanted = getattr(config, field)
            check(wanted is None or wanted <= most,
                  f"{field}={wanted} asks for more than the {most} training images of {where}; "
                  f"ask for at most {most}, or null for every image")


declare_defaults("probes", Config)
