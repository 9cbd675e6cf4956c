"""The study's configuration: Config (the preset's values), RunSpec (one training run's
settings: its cache key) and `spec`, which makes one from the other."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal

from memlib import data as datasets
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
from memlib.models import unknown_model
from memlib.presets import declare_defaults
from memlib.train import (
    device_name,
)

__all__ = [
    "REGULARIZED", "FOLDER_DATASETS", "STANDARD_REGULARIZERS", "Config", "RunSpec", "spec",
    "ProbeSpec", "probe_spec", "MODEL_SIZES", "model_sizes"
]


REGULARIZED = ("last", "all")
FOLDER_DATASETS = ("imagenet", "imagenet_lt")  # images stay on disk, read by a DataLoader
STANDARD_REGULARIZERS = ("dropout", "weight_decay", "label_smoothing")


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    01_random_label_heads.yaml gives the pilots' reasons for them and holds any change)."""

    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    dataset: Literal["fashion_mnist", "mnist", "mnist-5k", "cifar10", "cifar100", "digits",
                     "imagenet", "imagenet_lt"] = "fashion_mnist"
    # class-stratified subset of the train split; None: all
    train_samples: Annotated[int | None, AtLeast(20), AtMost(10**7)] = 1000
    # None: the whole test split, read at every run's last epoch (10,000 Fashion-MNIST images:
    # the binomial SE of an accuracy near 65% is 0.5 points, 1.5 over 1,000)
    test_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = None
    # test samples of the measured epochs before the last (a class-stratified subset; None:
    # the test set), where the curves only need the train-test divergence
    curve_test_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = 1000
    # class-stratified samples of the train split held out of training, with their clean
    # labels: the validation set on which every "best λ" is chosen (never the test set)
    validation_samples: Annotated[int, Positive, AtMost(10**7)] = 1000
    # train accuracy and RLP accuracy on a fixed class-stratified subset of the training
    # samples (None: all of them); an estimate that spares ImageNet a second pass per epoch
    measure_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = None
    model: str = "smallcnn"  # the model of every sweep
    # MLP
    widths: Annotated[tuple[int, ...], MinLength(2), Positive, AtMost(2**16)] = (
        256, 256, 256, 256, 256, 256)
    # SmallCNN
    cnn_channels: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**14)] = (32, 64, 128)
    wrn_depth: Annotated[int, Domain(lambda d: d >= 10 and (d - 4) % 6 == 0,
                                     "6n + 4 with n >= 1 (10, 16, 22, 28...)"), AtMost(1000)] = 16
    wrn_width: Annotated[int, Positive, AtMost(64)] = 4
    # blocks of every ViT; None: the model's
    vit_depth: Annotated[int | None, Positive, AtMost(1000)] = None
    # the layer-wise experiment adds the MLP, whose last layers do not memorize at this scale
    layer_models: Annotated[tuple[str, ...], NonEmpty] = ("smallcnn", "mlp")
    # epochs for layer_models other than model (the MLP's)
    layer_model_epochs: Annotated[int, Positive, AtMost(10**4)] = 150
    n_random: Annotated[int | None, AtLeast(2), AtMost(10**5)] = None  # None: the number of classes
    head_hidden: Annotated[int, NonNegative, AtMost(2**16)] = 0  # 0: linear heads
    # online RLP heads per probed layer, trained alongside the network as the paper's head
    # is, each with its own random-label draw (`method.head_labels`); the claims read their
    # mean accuracy, which averages away most of one head's noise (the penalty is their mean
    # too, so λ means what it does for one head); the frozen-initialisation control trains
    # the same K draws on the untrained network
    heads: Annotated[int, Positive, AtMost(256)] = 4
    # > 0: also a capacity-matched control head per layer, reading it through a fixed random
    # projection to this many dimensions (rlpproj_<layer>)
    head_project: Annotated[int, NonNegative, AtMost(2**16)] = 32
    head_lr: Annotated[float | None, Positive] = 3e-2  # None: lr
    epochs: Annotated[int, Positive, AtMost(10**4)] = 60
    # epochs between measurements of train/test/RLP accuracy (and always the last)
    measure_every: Annotated[int, Positive, AtMost(10**4)] = 2
    # runs at once, each in its own process on one CPU thread (None: the cores this process
    # may use; MEMLIB_WORKERS or --workers overrides it: `process.workers`); in no key;
    # ignored under torchrun
    parallel_runs: Annotated[int | None, Positive, AtMost(256)] = None
    batch_size: Annotated[int, Positive, AtMost(2**20)] = 64
    optimizer: Literal["sgd", "adam", "adamw", "muon"] = "adam"
    lr: Annotated[float, Positive] = 2e-3
    momentum: Annotated[float, Rate] = 0.9
    weight_decay: Annotated[float, NonNegative] = 0.0  # extractor and task head; RLP heads never
    schedule: Literal["constant", "cosine", "warmup_cosine"] = "cosine"
    warmup_epochs: Annotated[float, NonNegative, AtMost(10**4)] = 0.0
    # three strengths per grid (the paper's claim is a trend over strength), the strongest
    # the one the pilots kept, the others spaced below it
    dropouts: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.1, 0.3, 0.5)
    weight_decays: Annotated[tuple[float, ...], NonEmpty, NonNegative] = (1e-4, 3e-4, 1e-3)
    label_smoothings: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.1, 0.2, 0.3)
    # λ > 0 of the sweep (λ = 0 always runs): last-layer regularization, and all-layer
    # regularization (None: the same values), whose penalty sums over every probed layer and
    # so stops a network from training at a smaller λ
    # (pilots/rlp_sweep_pilot.py: λ = 3 trains fully and lowers the last block's RLP accuracy)
    lambdas: Annotated[tuple[float, ...], NonEmpty, Positive] = (3.0,)
    all_lambdas: Annotated[tuple[float, ...] | None, NonEmpty, Positive] = (3.0,)
    fractions: Annotated[tuple[float, ...], NonEmpty, Fraction] = (0.3, 1.0)  # of train
    long_tail_ratio: Annotated[float, AtLeast(1)] = 10.0  # largest / smallest class size
    # the sampling experiment (fractions x {0, best λ}, long tail x {0, best λ}), at its own
    # label noise: the paper's claims about well- and under-sampled data are about clean labels
    # left out at the small scale: on earlier runs its arms would have needed 13 or more seeds
    # and the tails difference about 12, beyond the notebook's 15-minute budget on 2 cores
    sampling_experiment: bool = False
    sampling_noise: Annotated[float, Rate] = 0.0
    # label-noise rate of the default setting (every experiment but the noise sweep): clean
    # labels, as the paper's depth, time-course, regularizer, shift and all-layer claims are;
    # the noise sweep runs at its own rates
    noise: Annotated[float, Rate] = 0.0
    # two rates and a λ grid of three (the noise rule's "consistently" and "λ chosen on
    # validation"), spanning the sweep pilot's λ (3 trains fully at 40% noise, 10 fits 97%)
    noise_rates: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.2, 0.4)
    noise_lambdas: Annotated[tuple[float, ...], NonEmpty, Positive] = (1.0, 3.0, 10.0)
    # every condition runs once per seed; the defaults are the confirmatory seeds registered in
    # register/01_random_label_heads.yaml (which lists the pilots' seeds and the earlier
    # confirmatory runs'); seven, the n its power analysis plans for its rows on the online
    # heads (pilots/power.py)
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (
        800, 801, 802, 803, 804, 805, 806)
    label_seed: Annotated[int, NonNegative, AtMost(SEED_MAX)] = 12345
    data_seed: Annotated[int, NonNegative, AtMost(SEED_MAX)] = 0
    device: str = "cpu"  # "cpu", "cuda", "cuda:N", "mps" or "auto" (cuda when available)
    # image folders (imagenet, imagenet_lt) only: the crop size and DataLoader worker processes
    image_size: Annotated[int, AtLeast(8), AtMost(4096)] = 224
    workers: Annotated[int, NonNegative, AtMost(256)] = 8
    precision: Literal["fp32", "bf16"] = "fp32"  # bf16: autocast the training forward pass
    # NHWC convolutions: faster on GPUs, and on CPUs with oneDNN (the SmallCNN about twice)
    channels_last: bool = True
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
    # post-hoc random-label probes, the values the claims read: every run stores its measured
    # training samples' features (float16), pooled on a feature_grid x feature_grid grid of
    # each conv map, before training and at its measured epochs; `probes` linear probes per
    # layer, each with its own random-label draw and initialisation, are then trained on
    # them for probe_epochs (Adam, probe_lr, batches of probe_batch) and averaged within the
    # run (pilots/rlp_probe_pilot.md: global pooling, as the concurrent heads read; K = 8
    # divides the per-seed SD of a layer's excess by about three)
    feature_grid: Annotated[int, Positive, AtMost(16)] = 1
    probes: Annotated[int, Positive, AtMost(256)] = 8
    probe_epochs: Annotated[int, Positive, AtMost(10**4)] = 30
    probe_lr: Annotated[float, Positive] = 1e-2
    probe_batch: Annotated[int, Positive, AtMost(2**20)] = 128

    DATASET_FIELDS = ("dataset",)  # resolved as the config is built (memlib.data.resolve)

    def __post_init__(self):
        check_fields(self)
        datasets.resolve_fields(self, self.DATASET_FIELDS)
        object.__setattr__(self, "device", device_name(self.device))  # frozen: set once
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
        left = size - self.validation_samples
        check(not self.train_samples or self.train_samples <= left,
              f"train_samples={self.train_samples} asks for more than the {left} training "
              f"samples of {self.dataset} left beside the {self.validation_samples} validation "
              f"samples; ask for at most {left}")
        tests = datasets.TEST_SIZES[self.dataset]
        check(not self.test_samples or self.test_samples <= tests,
              f"test_samples={self.test_samples} asks for more than the {tests} test samples "
              f"of {self.dataset}; ask for at most {tests}")
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
    # the sizes of the model that runs; another model's are None (`spec`)
    widths: tuple[int, ...] | None
    cnn_channels: tuple[int, ...] | None
    wrn_depth: int | None
    wrn_width: int | None
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
    # online heads per probed layer (`Config.heads`); 1: the paper's single head
    heads: int = 1
    measure_every: int = 1
    inputs: str = "standardized"
    fit_train_acc: float = 0.99
    fit_flipped_acc: float = 0.95
    epochs_after_fit: int | None = None
    # > 0: store the measured training samples' features pooled on this grid (float16) for
    # the post-hoc probes; 0: none (the concurrent heads alone)
    feature_grid: int = 0
    # whether the deepest layer's features are stored at the measured epochs between the
    # first and the last (the time course; the default model's runs only)
    feature_curve: bool = True
    curve_test_samples: int | None = 1000
    # the training labels: "clean" (the dataset's, with `noise` flipped), or "random": every
    # training sample's label replaced by a uniform draw over the classes, keyed by its index
    # (`runs.load_data`), the network then trained from scratch to memorize them (the
    # retraining the `retraining` row compares the probes with)
    labels: Literal["clean", "random"] = "clean"
    # the probed layers (None: the model's own, `make_model`) and the weights it starts from
    # (None: a random initialisation; else the file and its SHA-256, which keys the run)
    layers: tuple[str, ...] | None = None
    checkpoint: tuple[str, str] | None = None


# each model family's size fields in a RunSpec (the families not named read none)
MODEL_SIZES = {"mlp": ("widths",), "smallcnn": ("cnn_channels",),
               "wrn": ("wrn_depth", "wrn_width"), "vit": ("vit_depth",)}


def spec(config: Config, **overrides) -> RunSpec:
    """The RunSpec of one run: the config's values, `overrides`, and of the model sizes only
    those of the model that runs (the others None), so that a size no run of a model reads
    never moves its key."""
    shared = {f.name: getattr(config, f.name) for f in dataclasses.fields(RunSpec)
              if hasattr(config, f.name) and f.name != "long_tail_ratio"}
    shared["seed"] = config.seeds[0]
    out = RunSpec(**{**shared, **overrides})
    if out.model != config.model and "epochs" not in overrides:
        out = dataclasses.replace(out, epochs=config.layer_model_epochs)
    if out.model != config.model:  # no time course: features before and after training
        out = dataclasses.replace(out, feature_curve=False)
    read = model_sizes(out.model)
    return dataclasses.replace(out, **{name: None for sizes in MODEL_SIZES.values()
                                       for name in sizes if name not in read})


def model_sizes(model: str) -> tuple[str, ...]:
    """The RunSpec size fields that `model` reads."""
    return MODEL_SIZES.get("vit" if model.startswith("vit") else model, ())


@dataclass(frozen=True)
class ProbeSpec:
    """The post-hoc probes of one run's stored features: their cache key is the run's key
    and these settings, so a change to the probes re-computes the probes alone."""

    run: RunSpec
    probes: int
    epochs: int
    lr: float
    batch_size: int


def probe_spec(config: Config, run: RunSpec) -> ProbeSpec:
    return ProbeSpec(run, config.probes, config.probe_epochs, config.probe_lr,
                     config.probe_batch)


def check_before_a_run(config: Config) -> None:
    """ConfigError unless the label-noise arm has a rate to judge: it compares each rate
    above 0 with clean labels, and a run of `noise_rates` [0.0] alone has none."""
    check(any(rate > 0 for rate in config.noise_rates),
          f"noise_rates={list(config.noise_rates)} has no rate above 0; the label-noise arm "
          "compares each noisy rate with clean labels: give at least one (e.g. [0.2, 0.4])")


declare_defaults("rlp", Config)
