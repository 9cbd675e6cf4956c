"""The lens's Config, the spec of one watched run (LensRun) and of the measures over it
(LensMeasures), and the plan of runs: study 1's preset at the lens's scale, changed by
`study1_sets`, on every dataset, noise rate and seed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal

from memlib import data as datasets
from memlib.config import (
    SEED_MAX,
    AtLeast,
    AtMost,
    ConfigError,
    Distinct,
    NonEmpty,
    NonNegative,
    Positive,
    Rate,
    build,
    check,
    check_fields,
    check_stratified,
    to_dict,
)
from memlib.presets import declare_defaults, preset_of
from memlib.studies import rlp

__all__ = ["DATASETS", "Config", "LensRun", "LensMeasures", "study1_config", "lens_runs",
           "lens_measures", "LENS_OWN", "lens_test_samples", "frozen_spec"]


DATASETS = ("fashion_mnist", "mnist", "mnist-5k", "cifar10", "cifar100", "digits")  # in memory


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    05_memorization_lens.yaml gives the reasons for them and holds any change)."""

    # the scale of study 1's preset (params/<setting>/01_random_label_heads.yaml) that gives
    # every run's data size, model, heads and training: the lens watches that very model
    setting: Literal["smoke", "small", "full"] = "small"
    # changes to that preset, as `key=value` like memlib's --set (e.g. "epochs=20")
    # (by default study 1's layer-wise MLP and its 150 epochs; study 1's sweeps train a SmallCNN)
    study1_sets: tuple[str, ...] = ("model=mlp", "epochs=150")
    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    datasets: Annotated[tuple[str, ...], NonEmpty, Distinct] = ("fashion_mnist", "mnist")
    noise_rates: Annotated[tuple[float, ...], NonEmpty, Distinct, Rate] = (0.4,)
    # the seeds of study 1's confirmatory run it was registered with (study 1's replication
    # runs on fresh ones) and four more (two rules need nine: pilots/power.py)
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = tuple(
        range(600, 609))
    # training examples scored and forming the gradient scatter (a fixed class-stratified
    # subset); None: every training example
    scatter_samples: Annotated[int | None, AtLeast(10), AtMost(10**7)] = None
    # epochs between the measurements over training (er, the fits, head and test accuracy;
    # and always the last); each example's margin is recorded every epoch
    measure_every: Annotated[int, Positive, AtMost(10**4)] = 2
    exact_loo_max: Annotated[int, NonNegative, AtMost(10**7)] = 20000  # exact LOO up to this size
    null_draws: Annotated[int, Positive, AtMost(10**4)] = 3  # null-model B shuffles per layer
    # runs at once, each in its own process on one CPU thread (None: the cores this process
    # may use; MEMLIB_WORKERS or --workers overrides it: `process.workers`); in no key
    parallel_runs: Annotated[int | None, Positive, AtMost(256)] = None
    # study 1's config that every run starts from: its preset at `setting` changed by
    # `study1_sets`, read once as this config is built (not a parameter of its own)
    study1: rlp.Config = dataclasses.field(init=False, repr=False, metadata={"derived": True})

    DATASET_FIELDS = ("datasets",)  # resolved as the config is built (memlib.data.resolve)

    def __post_init__(self):
        check_fields(self)
        bad = [d for d in self.datasets if d not in DATASETS]
        check(not bad, f"dataset {bad[:1]} is not available to the lens (its images must fit "
                       f"in memory); choose from: {', '.join(DATASETS)}")
        datasets.resolve_fields(self, self.DATASET_FIELDS)
        bad = [s for s in self.study1_sets if "=" not in s]
        check(not bad, f"study1_sets expects key=value items, got {bad[:1]}")
        study1 = _read_study1(self.setting, self.study1_sets)
        object.__setattr__(self, "study1", study1)  # frozen: set once, here
        for name in self.datasets:  # on every dataset the lens runs it on
            check_stratified("scatter_samples", self.scatter_samples, datasets.NUM_CLASSES[name],
                             name)
            try:
                dataclasses.replace(study1, dataset=name)
            except ConfigError as err:
                raise ConfigError(f"study 1's preset on {name}: {err}") from None


@dataclass(frozen=True)
class LensRun:
    """One training run and how it is watched: the spec of `lens_run`."""

    run: rlp.RunSpec
    scatter_samples: int | None
    measure_every: int


@dataclass(frozen=True)
class LensMeasures:
    """The per-example scores and layer probes of one watched run: the spec of
    `lens_measures`, which reads what the run stored."""

    watched: LensRun
    exact_loo_max: int
    null_draws: int


def study1_config(config: Config) -> rlp.Config:
    """Study 1's config: its preset at `config.setting`, changed by `config.study1_sets`."""
    return config.study1


def _read_study1(setting: str, study1_sets: tuple[str, ...]) -> rlp.Config:
    preset = to_dict(preset_of(rlp.Config, "rlp", setting))
    sets = dict(item.split("=", 1) for item in study1_sets)
    try:  # the lens runs no long tail: its ratio need not fit the samples (none, unless set)
        return build(rlp.Config, {**preset, "long_tail_ratio": 1.0, **sets})
    except ConfigError as err:
        raise ConfigError(f"study1_sets: {err}") from None


def lens_runs(config: Config) -> list[LensRun]:
    """Every (dataset, noise rate, seed) run."""
    base = study1_config(config)
    watch = dict(scatter_samples=config.scatter_samples, measure_every=config.measure_every)
    return [LensRun(rlp.spec(base, dataset=name, noise=noise, seed=seed,
                             **{**LENS_OWN,
                                "test_samples": lens_test_samples(name, base.test_samples)}),
                    **watch)
            for name in config.datasets for noise in config.noise_rates for seed in config.seeds]


def lens_measures(config: Config) -> list[LensMeasures]:
    """The measures of every run of `lens_runs`, in its order."""
    return [LensMeasures(r, exact_loo_max=config.exact_loo_max, null_draws=config.null_draws)
            for r in lens_runs(config)]


# what the lens's runs set apart from study 1's: its per-epoch test accuracy and its
# binarization probes read a 1,000-image test set every measured epoch (the whole split would
# cost about ten training epochs per measurement), it keeps no features for post-hoc probes
# (it reads the deepest concurrent head's curve), and study 1's own measurements come every
# 5 epochs (the lens's observer measures on its own schedule)
LENS_OWN = {"test_samples": 1000, "feature_grid": 0, "measure_every": 5}


def lens_test_samples(dataset: str, study1_test_samples: int | None) -> int | None:
    """The lens's test set: the size study 1's preset asks for, where it asks for one; else
    (study 1 reads the whole split) LENS_OWN's 1,000 images, or the whole test split (None)
    of a dataset that holds no more (the 360 test digits): never more than the data."""
    if study1_test_samples is not None:
        return study1_test_samples
    wanted = LENS_OWN["test_samples"]
    return wanted if datasets.TEST_SIZES[dataset] > wanted else None


def frozen_spec(s: rlp.RunSpec, study1: rlp.Config) -> rlp.RunSpec:
    """The run whose frozen-initialisation baseline `s` is compared with. The baseline does
    not depend on the label noise (the same initialisation, random labels and head
    training), so every noise rate shares the one at study 1's own noise rate, which study 1
    has computed already for its dataset."""
    return dataclasses.replace(s, noise=study1.noise,
                               **{k: getattr(study1, k) for k in LENS_OWN})


def check_before_a_run(config: Config) -> None:
    """ConfigError when `scatter_samples` asks for more examples than a run of the lens
    trains on (study 1's training samples of that dataset): every example would be scored
    unseen, and the key and the manifest would record a size never used."""
    if config.scatter_samples is None:
        return
    for name in config.datasets:
        study1 = config.study1
        trained = study1.train_samples or (datasets.TRAIN_SIZES[name]
                                           - study1.validation_samples)
        check(config.scatter_samples <= trained,
              f"scatter_samples={config.scatter_samples} asks for more than the {trained} "
              f"training examples of each run on {name}; ask for at most {trained}, or null "
              "for every one")


declare_defaults("lens", Config)
