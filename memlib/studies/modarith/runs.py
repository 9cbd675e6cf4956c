"""Study 2's runs: the trainings the cache keeps (the main runs, the learning order per
optimizer, the width sweep, the image runs, the variants), each registered on the function
that builds it."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from memlib.config import to_dict
from memlib.runs import inline
from memlib.studies.modarith.config import Config
from memlib.studies.modarith.method import (
    Task,
    accuracy_tables,
    evaluate_parts,
    frequency_filter,
    image_learning_order,
    make_task,
    multiplication_task,
    subset_accuracies,
    train_runs,
)
from memlib.train import TrainSpec

__all__ = ["SPLIT_STREAM", "split_seed", "main_key", "train_main", "learning_order",
           "minibatch_order", "width_sweep", "image_order", "variant_parts", "MAIN", "ORDER",
           "SWEEP", "IMAGES", "VARIANT", "MINIBATCH"]


# offsets a run's seed into the stream that draws its data: its split of the table of pairs,
# and its subset of the image runs' images
SPLIT_STREAM = 2_000_029


def split_seed(seed: int) -> int:
    """The seed of run `seed`'s train/test split (and image subset): each replicate draws its
    own, so that a claim about the method is not a claim about one split of the data."""
    return SPLIT_STREAM + seed


def _task(config: Config, seeds: Sequence[int]) -> Task:
    """The task with one split per run, run r's drawn from `seeds[r]` (the runs' seeds, in the
    order they train)."""
    return make_task(config.p, config.operation, config.train_fraction,
                     [split_seed(s) for s in seeds])


def _task_key(config: Config) -> dict:
    return {"p": config.p, "operation": config.operation, "noise": config.noise,
            "train_fraction": config.train_fraction, "split_stream": SPLIT_STREAM,
            "device": config.device}


def _label_runs(frame: pd.DataFrame, alphas: Sequence[float], seeds: Sequence[int]
                ) -> pd.DataFrame:
    return frame.assign(alpha=frame["run"].map(dict(enumerate(alphas))),
                        seed=frame["run"].map(dict(enumerate(seeds))))


def _grid(alphas: Sequence[float], seeds: Sequence[int]) -> tuple[list[float], list[int]]:
    pairs = [(a, s) for a in alphas for s in seeds]
    return [a for a, _ in pairs], [s for _, s in pairs]


def main_key(config: Config) -> dict:
    """What the main runs are computed from."""
    alphas, seeds = _grid(config.alphas, config.seeds)
    return {**_task_key(config), "width": config.width, "activation": config.activation,
            "alphas": alphas, "seeds": seeds, "optimizer": config.optimizer, "lr": config.lr,
            "weight_decay": config.weight_decay, "epochs": config.epochs,
            "log_every": config.log_every}


def train_main(config: Config) -> dict:
    """The main runs (one per alpha x seed), cached."""
    alphas, seeds = _grid(config.alphas, config.seeds)
    key = main_key(config)
    spec = TrainSpec(epochs=config.epochs, batch_size=None, optimizer=config.optimizer,
                     lr=config.lr, weight_decay=config.weight_decay, seed=seeds[0],
                     device=config.device)
    return MAIN.get(key, lambda: train_runs(
        _task(config, seeds), alphas, seeds, config.width, spec, config.activation, config.noise,
        config.log_every))


def learning_order(config: Config) -> pd.DataFrame:
    """Clean vs noisy train accuracy over the first epochs: per optimizer, one run per
    (order alpha, seed), trained together."""
    frames = []
    alphas, seeds = _grid(config.order_alphas, config.seeds)
    for opt, lr, wd in zip(config.order_optimizers, config.order_lrs,
                           config.order_weight_decays, strict=True):
        key = {**_task_key(config), "width": config.width, "activation": config.activation,
               "alphas": alphas, "seeds": seeds, "optimizer": opt, "lr": lr,
               "weight_decay": wd, "epochs": config.order_epochs,
               "log_every": config.order_log_every}
        spec = TrainSpec(epochs=config.order_epochs, batch_size=None, optimizer=opt, lr=lr,
                         weight_decay=wd, seed=seeds[0], device=config.device)
        out = ORDER.get(key, lambda spec=spec: train_runs(
            _task(config, seeds), alphas, seeds, config.width, spec, config.activation,
            config.noise, config.order_log_every)["history"])
        frames.append(out.assign(optimizer=opt, lr=lr, weight_decay=wd))
    return pd.concat(frames, ignore_index=True)


def minibatch_order(config: Config) -> pd.DataFrame:
    """The learning order of the first order optimizer at the largest order alpha, trained in
    mini-batches of `order_batch_size` pairs (one run per seed, together); empty where
    `order_batch_size` is None."""
    if config.order_batch_size is None:
        return pd.DataFrame()
    opt, lr, wd = (config.order_optimizers[0], config.order_lrs[0],
                   config.order_weight_decays[0])
    alphas, seeds = _grid((max(config.order_alphas),), config.seeds)
    key = {**_task_key(config), "width": config.width, "activation": config.activation,
           "alphas": alphas, "seeds": seeds, "optimizer": opt, "lr": lr, "weight_decay": wd,
           "epochs": config.order_epochs, "log_every": config.order_log_every,
           "batch_size": config.order_batch_size}
    spec = TrainSpec(epochs=config.order_epochs, batch_size=config.order_batch_size,
                     optimizer=opt, lr=lr, weight_decay=wd, seed=seeds[0], device=config.device)
    out = MINIBATCH.get(key, lambda: train_runs(
        _task(config, seeds), alphas, seeds, config.width, spec, config.activation,
        config.noise, config.order_log_every)["history"])
    return out.assign(optimizer=opt, lr=lr, weight_decay=wd,
                      batch_size=config.order_batch_size)


def width_sweep(config: Config) -> pd.DataFrame:
    """Raw and FF accuracies of nets of each width, activation and weight decay."""
    alphas, seeds = _grid(config.sweep_alphas, config.seeds[:config.sweep_seeds])
    task = _task(config, seeds)
    rows = []
    for act in config.sweep_activations:
        for wd in config.sweep_weight_decays:
            for width in config.sweep_widths:
                key = {**_task_key(config), "width": width, "activation": act, "alphas": alphas,
                       "seeds": seeds, "optimizer": config.optimizer, "lr": config.lr,
                       "weight_decay": wd, "epochs": config.sweep_epochs}
                spec = TrainSpec(epochs=config.sweep_epochs, batch_size=None,
                                 optimizer=config.optimizer, lr=config.lr, weight_decay=wd,
                                 seed=seeds[0], device=config.device)

                def compute(spec=spec, width=width, act=act):
                    out = train_runs(task, alphas, seeds, width, spec, act, config.noise,
                                     config.sweep_epochs)
                    g, _ = frequency_filter(out["weights"])
                    raw = subset_accuracies(out["weights"], task, out["noisy"], out["mask"], act)
                    ff, ffq = accuracy_tables(g, task, out["noisy"], out["mask"],
                                              (act, "quadratic"))
                    frames = [raw.assign(part="raw", eval_activation=act),
                              ff.assign(part="G", eval_activation=act),
                              ffq.assign(part="G", eval_activation="quadratic")]
                    return pd.concat(frames, ignore_index=True)

                frame = SWEEP.get(key, compute)
                rows.append(_label_runs(frame, alphas, seeds).assign(
                    width=width, activation=act, weight_decay=wd))
    return pd.concat(rows, ignore_index=True)


def image_order(config: Config) -> tuple[pd.DataFrame, str]:
    """Learning order on digits and on `image_dataset` (or its fallback when not on disk),
    one run per seed. MNIST without its IDX files is the bundled mnist-5k subset
    (resolved as the config is built), and the results carry that name."""
    from memlib import data

    frames, notes = [], []
    spec = TrainSpec(epochs=config.digits_epochs, batch_size=None, optimizer="adam",
                     lr=config.digits_lr, seed=config.seeds[0], device=config.device)
    names = ["digits"]
    if config.image_dataset != "none" and config.image_epochs > 0:
        wanted = config.image_dataset
        try:
            data.load(wanted, "train", download=False)
            names.append(wanted)
        except data.MissingDataError as err:
            fallback = config.image_fallback
            notes.append(f"{wanted} is not on disk ({str(err).split(';')[0]}); "
                         + (f"using {fallback} instead." if fallback != "none" else "skipped."))
            if fallback != "none":
                names.append(fallback)
    for name in names:
        split = data.load(name, "train", download=False)
        images = name != "digits"  # digits: every image, the same for every seed
        epochs = config.image_epochs if images else config.digits_epochs
        run_spec = TrainSpec(**{**to_dict(spec), "epochs": epochs})
        for seed in config.seeds:
            # each seed's own subset (image_samples None: every training image), never
            # clamped to what is there
            keep = data.sized_subset(split.y, config.image_samples, split_seed(seed),
                                     "image_samples", f"training images of {name}"
                                     ) if images else None
            x, y = (split.x, split.y) if keep is None else (split.x[keep], split.y[keep])
            x = data.scale_inputs(name, x)  # the training split's per-channel statistics
            key = {"dataset": name, "n": len(y), "alphas": list(config.digits_alphas),
                   "width": config.digits_width, "lr": config.digits_lr, "epochs": epochs,
                   "seed": seed, "subset_seed": None if keep is None else split_seed(seed),
                   "inputs": "standardized", "device": config.device}
            frame = IMAGES.get(key,
                               lambda x=x, y=y, s=run_spec, n=split.num_classes, seed=seed:
                               image_learning_order(x, y, n, config.digits_alphas,
                                                    config.digits_width, s,
                                                    log_every=max(1, s.epochs // 60),
                                                    seed=seed))
            frames.append(frame.assign(dataset=name, seed=seed))
    return pd.concat(frames, ignore_index=True), " ".join(notes)


def variant_parts(config: Config) -> pd.DataFrame:
    """Raw, G and R accuracies of each variant of the main run (one run per seed at the
    largest alpha): "leaky_relu" trains with LeakyReLU, "mul" learns a * b mod p (in
    discrete-log coordinates, see multiplication_task). Evaluated with the training
    activation and x^2."""
    alpha = max(config.alphas)
    frames = []
    for variant in config.variants:
        activation = "leaky_relu" if variant == "leaky_relu" else config.activation
        alphas, seeds = [alpha] * len(config.seeds), list(config.seeds)
        task = (multiplication_task(config.p, config.train_fraction,
                                    [split_seed(s) for s in seeds])
                if variant == "mul" else _task(config, seeds))
        key = {**_task_key(config), "variant": variant, "width": config.width,
               "activation": activation, "alphas": alphas, "seeds": seeds,
               "optimizer": config.optimizer, "lr": config.lr,
               "weight_decay": config.weight_decay, "epochs": config.epochs}
        spec = TrainSpec(epochs=config.epochs, batch_size=None, optimizer=config.optimizer,
                         lr=config.lr, weight_decay=config.weight_decay, seed=seeds[0],
                         device=config.device)

        def compute(task=task, activation=activation, alphas=alphas, seeds=seeds, spec=spec):
            out = train_runs(task, alphas, seeds, config.width, spec, activation, config.noise,
                             config.epochs)
            return evaluate_parts(out["weights"], task, out["noisy"], out["mask"],
                                  tuple(dict.fromkeys((activation, "quadratic"))))

        frame = VARIANT.get(key, compute)
        frames.append(_label_runs(frame, alphas, seeds).assign(variant=variant,
                                                               train_activation=activation,
                                                               classes=task.p))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# the cached computations, each keyed by the code of the function that builds it
MAIN = inline("modarith-main", 1, train_main)
ORDER = inline("modarith-order", 1, learning_order)
SWEEP = inline("modarith-sweep", 1, width_sweep)
IMAGES = inline("modarith-images", 1, image_order)
VARIANT = inline("modarith-variant", 1, variant_parts)
MINIBATCH = inline("modarith-minibatch", 1, minibatch_order)
