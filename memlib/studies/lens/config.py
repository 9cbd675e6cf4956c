"""The lens's Config, the spec of one watched run (LensRun) and of the measures over it
(LensMeasures), and the plan of runs: study 1's runs of one of its models (its preset at the
lens's scale, changed by `study1_sets`) on every dataset, noise rate and seed, the seeds
study 1's own and more, and study 1's own runs of that model, which the lens watches too."""

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
           "study1_runs", "lens_measures", "frozen_spec"]


DATASETS = ("fashion_mnist", "mnist", "mnist-5k", "cifar10", "cifar100", "digits")  # in memory


@dataclass(frozen=True)
class Config:
    """The study's settings; the defaults are the small run (params/small/
    05_memorization_lens.yaml gives the reasons for them and holds any change)."""

    # the scale of study 1's preset (params/<setting>/01_random_label_heads.yaml) that gives
    # every run's data size, model sizes, heads and training: the lens watches that very model
    setting: Literal["smoke", "small", "full"] = "small"
    # changes to that preset, as `key=value` like memlib's --set (e.g. "epochs=20"); a run
    # it changes is no longer one study 1 runs
    study1_sets: tuple[str, ...] = ()
    # the model watched, one of study 1's `layer_models`: every run is study 1's run of it
    # (`rlp.spec`; study 1's sweeps train its SmallCNN, and its layer-wise MLP, trained
    # `layer_model_epochs` to interpolation, is the lens's)
    model: str = "mlp"
    # "mnist" is the bundled 5,000-digit subset (mnist-5k) when the full set is not on disk
    datasets: Annotated[tuple[str, ...], NonEmpty, Distinct] = ("fashion_mnist", "mnist")
    noise_rates: Annotated[tuple[float, ...], NonEmpty, Distinct, Rate] = (0.4,)
    # the seeds after study 1's confirmatory seeds (`study1.seeds`, which every run uses
    # first): none, since every rule the lens can decide at its budget needs at most study
    # 1's seven (pilots/power.py)
    extra_seeds: Annotated[tuple[int, ...], Distinct, NonNegative, AtMost(SEED_MAX)] = ()
    # also watch study 1's own runs of `model` (its labels, noise rate, dataset and seeds)
    # where the lens runs that dataset, so that the identity check compares the lens's
    # training with what study 1 stored (`memlib measure` leaves them out)
    study1_runs: bool = True
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
    # every run's seeds: study 1's confirmatory seeds, then `extra_seeds` (derived)
    seeds: tuple[int, ...] = dataclasses.field(init=False, metadata={"derived": True})

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
        check(self.model in study1.layer_models,
              f"model={self.model!r} is not one of study 1's layer_models "
              f"({', '.join(study1.layer_models)}), whose runs the lens watches")
        again = [s for s in self.extra_seeds if s in study1.seeds]
        if again:
            raise ConfigError(f"extra_seeds={list(self.extra_seeds)} repeats study 1's seed "
                              f"{again[0]}, which every run uses already")
        object.__setattr__(self, "seeds", (*study1.seeds, *self.extra_seeds))
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
    """Every (dataset, noise rate, seed) run, then study 1's own runs of the model that are
    not among them (`study1_runs`)."""
    grid = [_run(config, name, noise, seed) for name in config.datasets
            for noise in config.noise_rates for seed in config.seeds]
    return list(dict.fromkeys([*grid, *study1_runs(config)]))


def study1_runs(config: Config) -> list[LensRun]:
    """Study 1's own runs of the lens's model, watched: at its noise rate, on its dataset
    (where the lens runs it) and its seeds; none unless `study1_runs`."""
    study1 = config.study1
    if not config.study1_runs or study1.dataset not in config.datasets:
        return []
    return [_run(config, study1.dataset, study1.noise, seed) for seed in study1.seeds]


def _run(config: Config, dataset: str, noise: float, seed: int) -> LensRun:
    """The watched run of study 1's recipe for `config.model` (`rlp.spec`, as study 1 makes
    its layer-wise runs) on `dataset` at label-noise rate `noise`."""
    return LensRun(rlp.spec(config.study1, model=config.model, dataset=dataset, noise=noise,
                            seed=seed),
                   scatter_samples=config.scatter_samples, measure_every=config.measure_every)


def lens_measures(config: Config) -> list[LensMeasures]:
    """The measures of every run of `lens_runs`, in its order."""
    return [LensMeasures(r, exact_loo_max=config.exact_loo_max, null_draws=config.null_draws)
            for r in lens_runs(config)]


def frozen_spec(s: rlp.RunSpec, study1: rlp.Config) -> rlp.RunSpec:
    """The run whose frozen-initialisation baseline `s` is compared with. The baseline does
    not depend on the label noise (the same initialisation, random labels and head
    training), so every noise rate shares the one at study 1's own noise rate, which study 1
    computes for its layer-wise runs of its dataset."""
    return dataclasses.replace(s, noise=study1.noise)


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
