"""What one run of study 4 computes: a class pair's data and its MLPs (one per seed, trained
side by side), their probe sweeps, the SSIM distances and heatmaps, the ViT stand-ins (one per
stand-in seed), and the cached computations that keep each."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from memlib import train as training
from memlib.runs import inline
from memlib.seed import generator
from memlib.studies.probes.config import (
    AUTHORS_PAIRS,
    MNIST_5K,
    MNIST_5K_PER_CLASS,
    MNIST_PER_CLASS,
    UNTRAINED,
    Config,
)
from memlib.studies.probes.method import (
    MODES,
    NULL_MODELS,
    ProbeSpec,
    accuracy_metric,
    accuracy_of_variants,
    apply_probe,
    binarize,
    difficulty_matrix,
    flip,
    fold,
    gaussian_noise,
    mlp_layers,
    null_model,
    null_sweep,
    probe_parameter,
    prune,
    sweep,
)

# --- the Fig. 1 grid -----------------------------------------------------------------------


def fig1_grid(config: Config) -> list[ProbeSpec]:
    specs = []
    for mode in MODES:
        forms = ("float", "signed", "scaled") if mode == "smallest" else ("float", "signed")
        specs += [ProbeSpec("prune", mode, p, f) for p in config.prune_levels for f in forms]
        specs += [ProbeSpec("flip", mode, q, f) for q in config.flip_levels
                  for f in ("float", "signed")]
    specs += [ProbeSpec("noise", "-", 2.0 ** k, f) for k in config.noise_log2_levels
              for f in ("float", "signed")]
    return specs


# --- data and training of many runs at once ------------------------------------------------


# offsets a run's seed into the stream that draws its training subset of a class pair
SUBSET_STREAM = 4_000_037


def subset_seed(seed: int) -> int:
    """The seed of run `seed`'s training subset: each replicate draws its own, so that a claim
    about the method is not a claim about one sample of the data."""
    return SUBSET_STREAM + seed


def pair_subset(labels: Tensor, per_class: int | None, seed: int) -> Tensor | None:
    """Positions of a class-stratified subset of `per_class` images per class of a pair's
    `labels`, drawn from `seed`; None where that is every image (`per_class` None, or at least
    the pair's images: a pair of the bundled MNIST subset trains on all of its, with more
    epochs, `pair_epochs`)."""
    from memlib import data

    if per_class is None or 2 * per_class >= len(labels):
        return None
    return data.stratified_subset(labels, count=2 * per_class, seed=seed)


def pair_data(dataset: str, pair: tuple[int, int], split: str, per_class: int | None = None,
              seed: int = 0) -> tuple[Tensor, Tensor]:
    """Flattened inputs in [-1, 1] (background -1, as the authors) and 0/1 labels (with
    `per_class`, the subset `pair_subset` draws from `seed`)."""
    from memlib import data

    part = data.class_pair(data.load(dataset, split), *pair)
    keep = pair_subset(part.y, per_class, seed)
    if keep is not None:
        part = part.subset(keep)
    return data.to_symmetric_range(part.x).flatten(1), part.y


def run_subsets(labels: Tensor, per_class: int | None, seeds: Sequence[int]) -> Tensor | None:
    """Each run's training positions in a pair's `labels` (runs x images), drawn from its own
    seed (`subset_seed`); None where every run trains on every image."""
    picks = [pair_subset(labels, per_class, subset_seed(s)) for s in seeds]
    return None if picks[0] is None else torch.stack(picks)


def make_mlp(width: int, activation: str, seed: int, in_features: int = 784,
             num_classes: int = 2) -> nn.Module:
    from memlib.models import MLP

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return MLP(in_features, (width,), num_classes, activation=activation)


class Ensemble(nn.Module):
    """R copies of one architecture trained side by side: stacked parameters, vmapped forward.

    Adam is elementwise and the loss is a sum of per-run mean losses, so each run trains
    exactly as it would alone (up to float rounding).
    """

    def __init__(self, models: Sequence[nn.Module]):
        super().__init__()
        stacked, _ = stack_module_state(list(models))
        self.names = list(stacked)
        self.stacked = nn.ParameterList([nn.Parameter(stacked[n]) for n in self.names])
        self._base = [models[0]]  # a list, so its parameters are not the ensemble's

    def params(self) -> dict[str, Tensor]:
        return dict(zip(self.names, self.stacked, strict=True))

    def forward(self, x: Tensor) -> Tensor:  # x: (runs, batch, ...)
        base = self._base[0]
        return vmap(lambda p, xb: functional_call(base, p, (xb,)))(self.params(), x)


class RunBatches:
    """Minibatches with an independent shuffle per run: x (runs, batch, ...), y, idx.

    With `subsets` (runs x n positions into x and y, one row per run: `run_subsets`) each run
    draws its batches from its own training subset; the images stay one shared tensor, which
    each run's batch indexes."""

    def __init__(self, x: Tensor, y: Tensor, batch_size: int, seeds: Sequence[int],
                 subsets: Tensor | None = None):
        # Not .x/.y: memlib.train would wrap an object with those in its own batcher.
        self.inputs, self.labels, self.batch_size = x, y, batch_size
        self.generators = [generator(s) for s in seeds]
        if subsets is not None and subsets.shape[0] != len(seeds):
            raise ValueError(f"{subsets.shape[0]} training subsets for {len(seeds)} runs")
        self.subsets = subsets
        self.size = len(y) if subsets is None else subsets.shape[1]

    def __len__(self) -> int:
        return math.ceil(self.size / self.batch_size)

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        orders = torch.stack([torch.randperm(self.size, generator=g) for g in self.generators])
        if self.subsets is not None:
            orders = self.subsets.gather(1, orders)
        for start in range(0, self.size, self.batch_size):
            idx = orders[:, start:start + self.batch_size]
            yield self.inputs[idx], self.labels[idx], idx


def _ensemble_step(model: Ensemble, batch) -> Tensor:
    x, y, _ = batch
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten()) * logits.shape[0]


def train_runs(x: Tensor, y: Tensor, seeds: Sequence[int], width: int, activation: str,
               epochs: int, batch_size: int, lr: float, reinit_biases: bool = False,
               desc: str = "train", warmup_steps: int = 0, subsets: Tensor | None = None,
               device: str = "cpu"
               ) -> dict[str, Tensor]:
    """Train one MLP per seed (Adam, cosine annealing after a linear warmup over the first
    `warmup_steps` optimizer steps, final weights); stacked parameters. With `subsets`
    (`RunBatches`) each run trains on its own rows of (x, y).

    `reinit_biases` replaces the trained biases by a fresh random initialisation, as the
    authors' probe scripts effectively do when they reload weights only.
    """
    models = [make_mlp(width, activation, s, x.shape[1]) for s in seeds]
    ensemble = Ensemble(models)
    batches = RunBatches(x, y, batch_size, seeds, subsets)
    spec = training.TrainSpec(epochs=epochs, batch_size=batch_size, optimizer="adam", lr=lr,
                              schedule="warmup_cosine" if warmup_steps else "cosine",
                              warmup_epochs=warmup_steps / len(batches), seed=seeds[0],
                              device=device)
    training.train(ensemble, batches, spec, step=_ensemble_step, desc=desc)
    # trained where train() put them (a GPU if any); probed and evaluated on the CPU
    params = {k: v.detach().cpu().clone() for k, v in ensemble.params().items()}
    if reinit_biases:
        fresh = stack_module_state(
            [make_mlp(width, activation, s + 10_007, x.shape[1]) for s in seeds])[0]
        params.update({k: v.detach() for k, v in fresh.items() if k.endswith(".bias")})
    return params


def pair_epochs(dataset: str, epochs: int, per_class: int | None) -> int:
    """Epochs for a pair: `epochs`, except that a pair of the bundled MNIST subset (400
    training images per class) trains for proportionally more epochs, so that it takes as
    many optimizer steps as `epochs` would on the images the preset asks for from the full
    set (`per_class`, or all of them)."""
    if dataset != MNIST_5K:
        return epochs
    wanted = MNIST_PER_CLASS if per_class is None else min(per_class, MNIST_PER_CLASS)
    return math.ceil(epochs * max(wanted, MNIST_5K_PER_CLASS) / MNIST_5K_PER_CLASS)


def trained_pair(dataset: str, pair: tuple[int, int], seeds: Sequence[int], config: Config,
                 epochs: int, per_class: int | None) -> dict[str, Tensor]:
    epochs = pair_epochs(dataset, epochs, per_class)
    key = {"dataset": dataset, "pair": list(pair), "seeds": list(seeds), "width": config.width,
           "activation": config.activation, "epochs": epochs, "batch_size": config.batch_size,
           "lr": config.lr, "per_class": per_class, "reinit_biases": config.reinit_biases,
           "warmup_steps": config.warmup_steps, "device": config.device}

    def compute():
        x, y = pair_data(dataset, pair, "train")
        return train_runs(x, y, seeds, config.width, config.activation, epochs,
                          config.batch_size, config.lr, config.reinit_biases,
                          desc=f"{dataset} {pair}", warmup_steps=config.warmup_steps,
                          subsets=run_subsets(y, per_class, seeds), device=config.device)

    return TRAINED_PAIR.get(key, compute)


def run_params(stacked: dict[str, Tensor], r: int) -> dict[str, Tensor]:
    return {k: v[r] for k, v in stacked.items()}


def choose_pairs(distance: np.ndarray, dataset: str, choice: str) -> dict[str, tuple[int, int]]:
    if choice == "authors":
        return dict(AUTHORS_PAIRS[dataset])
    off = distance + np.diag(np.full(len(distance), np.nan))
    hard = np.unravel_index(np.nanargmin(off), off.shape)
    easy = np.unravel_index(np.nanargmax(off), off.shape)
    return {"easy": tuple(int(i) for i in easy), "hard": tuple(int(i) for i in hard)}


# --- per-matrix probes of a large model (the ViT stand-in; DistilBERT: distilbert.py) -----


def matrix_probes(config: Config) -> list[tuple[str, float, Callable]]:
    """(probe, level, transform(w, gen)) of the layer-wise case study."""
    probes = [("float", 0.0, lambda w, g: w), ("sign", 0.0, lambda w, g: binarize(w)),
              ("A", 0.0, lambda w, g: null_model(w, "A", g)),
              ("B", 0.0, lambda w, g: null_model(w, "B", g))]
    probes += [("prune", p, lambda w, g, p=p: prune(w, p)) for p in config.standin_prune_levels]
    probes += [("noise", s, lambda w, g, s=s: gaussian_noise(w, s * float(w.std()), g))
               for s in config.standin_noise_levels]
    probes += [("flip", q, lambda w, g, q=q: flip(w, q)) for q in config.standin_flip_levels]
    return probes


def layerwise_table(model: nn.Module, names: Sequence[str], metric: Callable[[Callable], float],
                    config: Config, seed: int = 0) -> pd.DataFrame:
    """The metric for every probe of `matrix_probes` on each named matrix, one at a time."""
    gen = generator(seed)
    rows = []
    for order, name in enumerate(names):
        for probe, level, transform in matrix_probes(config):
            # probes draw on a CPU generator: probe a CPU copy, evaluate where the model is
            value = probe_parameter(model, name,
                                    lambda w, t=transform: t(w.cpu(), gen).to(w.device), metric)
            rows.append({"order": order, "matrix": name, "probe": probe, "level": level,
                         "metric": value})
    return pd.DataFrame(rows)


def standin_matrices(model: nn.Module) -> list[str]:
    last = len(model.blocks) - 1
    return ["patch_embed.proj.weight", "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc2.weight",
            f"blocks.{last}.mlp.fc1.weight", f"blocks.{last}.mlp.fc2.weight", "head.weight"]


def _standin_data(split: str, n: int, seed: int, asked: str) -> tuple[Tensor, Tensor]:
    """A class-stratified subset of `n` images of Fashion-MNIST's `split`, drawn from `seed`;
    more than the split holds is a DataRequestError naming both numbers (`asked`: the
    setting), never clamped."""
    from memlib import data

    full = data.load("fashion_mnist", split)
    keep = data.sized_subset(full.y, n, seed, asked, f"{split} images of fashion_mnist")
    part = full if keep is None else full.subset(keep)
    return data.to_symmetric_range(part.x), part.y


def standin_model(config: Config, seed: int) -> nn.Module:
    """A small timm ViT trained on 10-class Fashion-MNIST (cached weights); `seed` fixes its
    initialisation, batch order and training subset."""
    from memlib.models import vit

    def fresh():
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return vit("vit_tiny", num_classes=10, image_size=28, in_channels=1)

    def compute():
        model = fresh()
        x, y = _standin_data("train", config.standin_train, seed, "standin_train")
        spec = training.TrainSpec(
            epochs=config.standin_epochs, batch_size=128, optimizer="adamw", lr=2e-3,
            weight_decay=0.05, schedule="warmup_cosine",
            warmup_epochs=min(1.0, config.standin_epochs / 4), seed=seed,
            device=config.device)
        training.train(model, (x, y), spec, desc=f"vit stand-in {seed}")
        return {k: v.detach().cpu() for k, v in model.state_dict().items()}

    key = {"train": config.standin_train, "epochs": config.standin_epochs, "seed": seed,
           "device": config.device}
    state = STANDIN_VIT.get(key, compute)
    model = fresh()
    model.load_state_dict(state)
    return model.eval()


# --- what one run computes ----------------------------------------------------------------


def _difficulty(dataset: str, config: Config) -> pd.DataFrame:
    from memlib import data

    def compute():
        test = data.load(dataset, "test")
        x = data.to_symmetric_range(test.x)
        d = difficulty_matrix(x, test.y, test.num_classes, config.ssim_pairs, config.seed)
        return pd.DataFrame([{"dataset": dataset, "a": a, "b": b, "distance": d[a, b]}
                             for a in range(len(d)) for b in range(len(d))])

    return DIFFICULTY.get({"dataset": dataset, "pairs": config.ssim_pairs, "seed": config.seed},
                          compute)


def _task_results(dataset: str, task: str, pair: tuple[int, int], config: Config) -> dict:
    seeds = list(config.seeds)
    stacked = trained_pair(dataset, pair, seeds, config, config.epochs, config.train_per_class)

    def compute():
        model = make_mlp(config.width, config.activation, 0)
        x, y = pair_data(dataset, pair, "test")
        specs = fig1_grid(config)
        baseline, sweeps, nulls = [], [], []
        for r, seed in enumerate(seeds):
            params = run_params(stacked, r)
            acc = accuracy_of_variants(model, [params], x, y, config.eval_batch_size)
            baseline.append({"run": r, "seed": seed, "acc": float(acc[0]),
                             **{f"sigma_{n.split('.')[0]}": float(params[n].std())
                                for n, _ in mlp_layers(model)}})
            # the probes' draws of run r come from its seed alone
            sweeps.append(sweep(model, params, x, y, specs, seed=7919 * seed,
                                batch_size=config.eval_batch_size).assign(run=r))
            null_at_zero = null_sweep(model, params, x, y, NULL_MODELS, [0.0],
                                      config.null_draws, 104729 * seed,
                                      config.curveball_trades, config.eval_batch_size)
            pruned_b = null_sweep(model, params, x, y, ["B"],
                                  [p for p in config.null_prune_levels if p > 0],
                                  max(1, config.null_draws // 2), 15485863 * seed,
                                  config.curveball_trades, config.eval_batch_size)
            nulls.append(pd.concat([null_at_zero, pruned_b]).assign(run=r))
        tag = {"dataset": dataset, "task": task, "pair": f"{pair[0]}/{pair[1]}"}
        return {"baseline": pd.DataFrame(baseline).assign(**tag),
                "sweep": pd.concat(sweeps, ignore_index=True).assign(**tag),
                "nulls": pd.concat(nulls, ignore_index=True).assign(**tag)}

    key = {k: getattr(config, k) for k in (
        "width", "activation", "epochs", "batch_size", "lr", "warmup_steps", "seeds",
        "train_per_class", "reinit_biases", "eval_batch_size", "prune_levels",
        "noise_log2_levels", "flip_levels", "null_draws", "null_prune_levels",
        "curveball_trades", "device")}
    return TASK.get({**key, "dataset": dataset, "pair": list(pair)}, compute)


def _heatmap(dataset: str, distance: pd.DataFrame, config: Config
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per class pair: means over every run (accuracies, Delta_bin, Delta_rand), and how many
    runs trained; and every run, marked `trained`."""
    from memlib import data

    classes = data.load(dataset, "test").classes
    seeds = list(config.seeds[:config.heatmap_runs])
    model = make_mlp(config.width, config.activation, 0)
    weights = [w for w, _ in mlp_layers(model)]
    names = [n for pair in mlp_layers(model) for n in pair if n is not None]
    d = distance.set_index(["a", "b"])["distance"]
    rows, per_run = [], []
    for a, b in itertools.combinations(range(config.heatmap_classes), 2):
        stacked = trained_pair(dataset, (a, b), seeds, config, config.heatmap_epochs,
                               config.heatmap_train_per_class)

        def compute(a=a, b=b, stacked=stacked):
            x, y = pair_data(dataset, (a, b), "test")
            gen = generator(config.seed + 31 * a + b)
            out = []
            for r in range(config.heatmap_runs):
                params = run_params(stacked, r)
                variants = [params, apply_probe(params, names, binarize)]
                variants += [apply_probe(params, weights, lambda w: null_model(w, "B", gen))
                             for _ in range(config.heatmap_null_draws)]
                acc = accuracy_of_variants(model, variants, x, y, config.eval_batch_size)
                out.append({"run": r, "acc": float(acc[0]), "acc_sign": float(acc[1]),
                            "acc_B": float(acc[2:].mean())})
            return pd.DataFrame(out)

        key = {"dataset": dataset, "pair": [a, b], "seeds": seeds, "width": config.width,
               "activation": config.activation, "epochs": config.heatmap_epochs,
               "per_class": config.heatmap_train_per_class, "lr": config.lr,
               "warmup_steps": config.warmup_steps,
               "batch_size": config.batch_size, "reinit_biases": config.reinit_biases,
               "draws": config.heatmap_null_draws, "eval": config.eval_batch_size,
               "device": config.device}
        runs = HEATMAP.get(key, compute)
        for name in ("acc", "acc_sign", "acc_B"):
            runs[name] = fold(runs[name].to_numpy(), config.fold_below_chance)
        runs = runs.assign(dataset=dataset, a=a, b=b, delta_bin=runs["acc"] - runs["acc_sign"],
                           delta_rand=runs["acc"] - runs["acc_B"])
        runs["trained"] = runs["acc"] > UNTRAINED
        per_run.append(runs)
        mean = runs[["acc", "acc_sign", "acc_B", "delta_bin", "delta_rand"]].mean()
        rows.append({"dataset": dataset, "a": a, "b": b,
                     "pair": f"{classes[a]}/{classes[b]}", "distance": float(d[(a, b)]),
                     **{k: float(v) for k, v in mean.items()},
                     "trained_runs": int(runs["trained"].sum())})
    return pd.DataFrame(rows), pd.concat(per_run, ignore_index=True)


# --- the cached computations --------------------------------------------------------------


def cached_difficulty(item: tuple[str, Config]) -> pd.DataFrame:
    """A dataset's SSIM distances between its classes."""
    return _difficulty(*item)


def cached_task(item: tuple[str, str, tuple[int, int], Config]) -> dict:
    """A task's runs and their probes (two entries: the training, then the probes)."""
    return _task_results(*item)


def cached_heatmap(item: tuple[str, Config]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A dataset's SSIM distances and every class pair's heatmap runs and probes."""
    dataset, config = item
    return _heatmap(dataset, _difficulty(dataset, config), config)


# offsets a stand-in's seed into the stream that draws its test images: each replicate is
# scored on a draw of its own (the same for every matrix it probes), and a preset's list of
# stand-in seeds never moves the images one stand-in is scored on
STANDIN_TEST_STREAM = 4_000_117


def cached_standin(item: tuple[int, Config]) -> pd.DataFrame:
    """The layer-wise table of the ViT stand-in trained from one seed (its `seed` column);
    the seed draws its probes too."""
    seed, config = item
    vit_model = standin_model(config, seed)
    x, y = _standin_data("test", config.standin_test, STANDIN_TEST_STREAM + seed,
                         "standin_test")
    key = {k: getattr(config, k) for k in ("standin_train", "standin_test", "standin_epochs",
                                           "standin_prune_levels", "standin_noise_levels",
                                           "standin_flip_levels", "device")}
    table = STANDIN_TABLE.get({**key, "seed": seed}, lambda: layerwise_table(
        vit_model, standin_matrices(vit_model), accuracy_metric(x, y), config, seed))
    return table.assign(seed=seed)


def standin_tables(config: Config) -> pd.DataFrame:
    """Every stand-in's layer-wise table, one per seed of `standin_seeds` (column `seed`)."""
    return pd.concat([cached_standin((seed, config)) for seed in config.standin_seeds],
                     ignore_index=True)


# each keyed by the code of the function that builds it
TRAINED_PAIR = inline("probes-train", 1, trained_pair)
STANDIN_VIT = inline("probes-standin-vit", 1, standin_model)
DIFFICULTY = inline("probes-difficulty", 1, _difficulty)
TASK = inline("probes-task", 1, _task_results)
HEATMAP = inline("probes-heatmap", 1, _heatmap)
STANDIN_TABLE = inline("probes-standin-table", 1, cached_standin)
