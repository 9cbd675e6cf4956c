"""Any model through the four papers' lenses: `python -m memlib measure`.

A request (a model by name, a dataset, layers, a noise rate, epochs, seeds, a scale, a
checkpoint) becomes the lens's plan with the model and layers swapped in (`plan`): the runs
and measures are the lens's cached computations (`memlib.studies.lens.watch`), so they are
keyed, stored and resumed like any study's, and on study 1's MLP at the lens's settings they
are the lens's very entries. `measure` writes the tables as CSV and the report page
(`memlib.measure.report`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from memlib import STUDIES, cache, models, paths
from memlib import data as datasets
from memlib.config import ConfigError, build
from memlib.presets import params_file, read_params
from memlib.process import atomic_write_bytes
from memlib.studies import lens, rlp

__all__ = ["Request", "InputError", "SCALE_SETS", "SHAPES", "lens_config", "check_model",
           "plan", "layers_of", "measure", "tables"]

# what the smoke scale changes in the lens's smoke preset, so that a ViT at 224 x 224 or a
# ResNet runs end to end on a CPU in a few minutes: two images a class, two epochs, one null
# draw, the two seeds at once, and at most three of the model's natural stages where no
# layers are asked for (a check that everything runs, not a measurement)
SCALE_SETS = {"smoke": ("train_samples=20", "test_samples=10", "validation_samples=10",
                        "epochs=2", "batch_size=10")}
LENS_SETS = {"smoke": {"measure_every": 2, "null_draws": 1, "parallel_runs": 2}}
MAX_LAYERS = {"smoke": 3}
# each in-memory dataset's image shape (C, H, W), for what a model that refuses one can take
SHAPES = {"digits": (1, 8, 8), "fashion_mnist": (1, 28, 28), "mnist": (1, 28, 28),
          "mnist-5k": (1, 28, 28), "cifar10": (3, 32, 32), "cifar100": (3, 32, 32)}


class InputError(ValueError):
    """A request the command cannot run: one line saying what to pass instead."""


@dataclass(frozen=True)
class Request:
    model: str
    dataset: str
    layers: tuple[str, ...] | None = None  # None: the model's natural stages
    noise: float = 0.0
    epochs: int | None = None  # None: the scale's
    seeds: tuple[int, ...] | None = None  # None: the scale's
    scale: str = "smoke"
    checkpoint: str | None = None


def lens_config(r: Request) -> lens.Config:
    """The lens's Config at the request's scale (its preset, with SCALE_SETS and LENS_SETS
    at smoke) on the request's dataset, noise rate, seeds (study 1's, set as the lens's
    alone) and epochs, without study 1's own runs the lens also watches; study 1's MLP stays
    its model (the request's model is swapped into its runs by `plan`)."""
    preset = read_params(params_file(Path(STUDIES["lens"]), r.scale))
    sets = [*preset.get("study1_sets", lens.Config.study1_sets), *SCALE_SETS.get(r.scale, ())]
    if r.epochs is not None:
        sets.append(f"epochs={r.epochs}")
    values = {**preset, **LENS_SETS.get(r.scale, {}), "study1_sets": sets,
              "datasets": [r.dataset], "noise_rates": [r.noise], "study1_runs": False}
    if r.seeds is not None:
        sets.append(f"seeds={list(r.seeds)}")
        values["extra_seeds"] = []
    try:
        return build(lens.Config, values)
    except ConfigError as err:
        raise InputError(str(err)) from None


def check_model(r: Request, config: lens.Config, in_shape: tuple[int, ...],
                num_classes: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the layers measured, every natural stage) of the request's model on images of
    `in_shape`, after checking that the model exists, has the layers, takes the images and
    fits the checkpoint; InputError with one line otherwise."""
    problem = models.unknown_any(r.model)
    if problem:
        raise InputError(problem)
    spec = _spec(r, config)
    try:
        model, natural = rlp.make_model(dataclasses.replace(spec, checkpoint=None),
                                        num_classes, in_shape)
    except ValueError as err:
        raise InputError(f"{r.model}: {err}") from None
    if not _takes(model, in_shape):
        fits = [name for name, shape in SHAPES.items() if shape != in_shape and _takes(
            _built(spec, num_classes, shape), shape)]
        instead = (f"pass --data {' or '.join(dict.fromkeys(fits))}" if fits else
                   "pass a model for small images, e.g. resnet18 or "
                   "timm:vit_tiny_patch16_224 (which resizes them)")
        raise InputError(f"{r.model} cannot take {r.dataset}'s "
                         f"{'x'.join(map(str, in_shape))} images; {instead}")
    modules = dict(model.named_modules())
    unknown = [n for n in r.layers or () if n not in modules]
    if unknown:
        raise InputError(f"{r.model} has no layer {unknown[0]!r}; its layers: "
                         f"{', '.join(natural)} (or any module name it has)")
    if r.checkpoint is not None:
        if not Path(r.checkpoint).is_file():
            raise InputError(f"no checkpoint file {Path(r.checkpoint).name}; --checkpoint "
                             "takes a state dict saved with torch.save")
        try:
            models.load_checkpoint(model, r.checkpoint)
        except (ValueError, RuntimeError, OSError) as err:
            message = str(err).replace(str(r.checkpoint), Path(r.checkpoint).name)
            raise InputError(message.splitlines()[0]) from None
        except Exception as err:  # noqa: BLE001 - a file torch cannot read as weights
            raise InputError(f"checkpoint {Path(r.checkpoint).name} holds no weights "
                             f"torch can read safely ({type(err).__name__})") from None
    chosen = r.layers or _spaced(natural, MAX_LAYERS.get(r.scale))
    return tuple(chosen), tuple(natural)


def _spaced(layers: tuple[str, ...], most: int | None) -> tuple[str, ...]:
    """At most `most` of `layers`, evenly spaced, the first and the last kept."""
    if most is None or len(layers) <= most:
        return layers
    picks = sorted({round(i * (len(layers) - 1) / (most - 1)) for i in range(most)})
    return tuple(layers[i] for i in picks)


def _built(spec: rlp.RunSpec, num_classes: int, shape) -> torch.nn.Module:
    try:
        return rlp.make_model(dataclasses.replace(spec, checkpoint=None), num_classes, shape)[0]
    except ValueError:
        return None


@torch.no_grad()
def _takes(model: torch.nn.Module | None, shape) -> bool:
    """Whether the model computes logits for two images of `shape`."""
    if model is None:
        return False
    model.eval()
    try:
        model(torch.zeros(2, *shape))
    except (RuntimeError, ValueError, AssertionError):
        return False
    return True


def _spec(r: Request, config: lens.Config) -> rlp.RunSpec:
    """The request's first run with its model: study 1's sizes where the model is one of
    memlib's own, none where it is not."""
    read = rlp.model_sizes(r.model)
    sizes = {name: (getattr(config.study1, name) if name in read else None)
             for group in rlp.MODEL_SIZES.values() for name in group}
    return dataclasses.replace(lens.lens_runs(config)[0].run, model=r.model, **sizes)


def layers_of(r: Request, config: lens.Config | None = None
              ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the layers measured, the model's natural stages) on the request's dataset."""
    problem = models.unknown_any(r.model)
    if problem:
        raise InputError(problem)
    train = _dataset(r.dataset)
    config = config or lens_config(r)
    return check_model(r, config, tuple(train.x.shape[1:]), train.num_classes)


def _dataset(name: str):
    if name not in lens.DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose one of: {', '.join(lens.DATASETS)}")
    return datasets.load(datasets.resolve(name), "train")


def plan(r: Request, config: lens.Config | None = None
         ) -> tuple[lens.Config, list[lens.LensMeasures]]:
    """The lens's Config for the request (`lens_config`, unless given) and the measures of
    every seed's run: the lens's own runs with the request's model, layers and checkpoint
    swapped in (unchanged where the request names study 1's MLP and nothing else)."""
    config = config or lens_config(r)
    chosen, natural = layers_of(r, config)
    swap = {}
    if r.model != config.model:
        run = _spec(r, config)
        swap = {name: getattr(run, name) for group in rlp.MODEL_SIZES.values()
                for name in group} | {"model": r.model}
    if r.layers is not None or chosen != natural:
        swap["layers"] = chosen
    if r.checkpoint is not None:
        swap["checkpoint"] = (str(Path(r.checkpoint).resolve()), _sha256(r.checkpoint))
    measures = lens.lens_measures(config)
    if not swap:
        return config, measures
    return config, [dataclasses.replace(m, watched=dataclasses.replace(
        m.watched, run=dataclasses.replace(m.watched.run, **swap))) for m in measures]


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tables(results: dict) -> dict:
    """The CSV tables of `lens.watch`'s results: the runs, the layers, the curves over
    training, the per-example scores, their agreement and their AUROC."""
    return {name: results[name] for name in ("runs", "layers", "curves", "examples",
                                             "agreement", "auroc")}


def cost(measures: list[lens.LensMeasures], config: lens.Config) -> dict[str, float]:
    """The cold compute seconds of the entries the results come from, by kind."""
    calls = {"training": [(lens.cached_lens, m.watched) for m in measures],
             "frozen-initialisation control": [
                 (rlp.cached_frozen, lens.frozen_spec(m.watched.run, config.study1))
                 for m in measures],
             "measures": [(lens.cached_measures, m) for m in measures]}
    out = {}
    for kind, pairs in calls.items():
        seconds = []
        for computation, argument in dict.fromkeys(pairs):
            try:
                seconds.append(cache.own_seconds(computation.path(argument)) or 0.0)
            except (OSError, ValueError):
                seconds.append(0.0)
        out[kind] = sum(seconds)
    return out


def measure(r: Request, out: Path, config: lens.Config | None = None) -> dict:
    """Run (or read from the cache) every measure of the request and write the tables
    (CSV) and `report.html` into `out`; returns the results, the paths written and the
    wall-clock seconds."""
    from memlib.measure import report

    start = time.perf_counter()
    config, measures = plan(r, config)
    paths.require_writable(out, "--out")  # before the runs, not after them
    results = lens.watch(measures, config.study1, config.parallel_runs)
    wall = time.perf_counter() - start
    written = []
    for name, frame in tables(results).items():
        path = out / f"{name}.csv"
        atomic_write_bytes(path, frame.to_csv(index=False).encode())
        written.append(path)
    page = report.page(r, config, measures, results, wall, cost(measures, config))
    atomic_write_bytes(out / "report.html", page.encode("utf-8"))
    written.append(out / "report.html")
    return {"results": results, "written": written, "seconds": wall}
