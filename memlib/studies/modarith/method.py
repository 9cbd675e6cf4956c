"""Study 2's method: the modular-arithmetic task and its label noise, the two-layer net of R
runs at once, its training, frequency filtering, phases, neuron scores and sub-networks, as
pure functions on tensors and weight dicts.

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
from typing import Literal

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from memlib.seed import generator
from memlib.train import TrainSpec, resolve_device, train

__all__ = ["OPERATIONS", "NOISE_KINDS", "SUBSETS", "SUBSET_LABELS", "ACTIVATIONS", "Activation",
           "Weights", "is_prime", "true_labels", "Task", "primitive_root",
           "multiplication_task", "make_task", "split_test_pairs", "half_accuracies",
           "label_noise", "pre_activations",
           "RESULT_ONLY", "IN_PLACE", "activate", "readout", "forward", "predictions",
           "init_weights", "ModularNet", "per_run_cross_entropy", "subset_accuracies",
           "accuracy_tables", "accuracy_table", "neuron_spectra",
           "dominant_frequencies", "keep_frequency", "frequency_filter", "phases",
           "wrap_angle", "phase_error", "analytic_quadratic_solution", "ipr",
           "strength", "select_neurons", "top_fraction", "train_runs", "evaluate_parts",
           "partition_curves", "spectra_table", "noisy_first", "image_learning_order",
           "PairBatches"]


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
    """All P^2 pairs (a, b), their true labels, and a train/test split of the pairs: one split
    shared by every run (1-D indices) or one per run (R x n rows, row r run r's split, all of
    the same size)."""

    p: int
    operation: str
    pairs: Tensor  # (P^2, 2) long: row i is (i // P, i % P)
    labels: Tensor  # (P^2,) long
    train_idx: Tensor  # sorted indices into pairs, (n,) or (R, n)
    test_idx: Tensor

    def train_rows(self, runs: int) -> Tensor:
        """Each of `runs` runs' training indices (R, n)."""
        return _rows(self.train_idx, runs)

    def test_rows(self, runs: int) -> Tensor:
        """Each of `runs` runs' test indices (R, n)."""
        return _rows(self.test_idx, runs)


def _rows(idx: Tensor, runs: int) -> Tensor:
    if idx.dim() == 1:
        return idx.expand(runs, -1)
    if idx.shape[0] != runs:
        raise ValueError(f"the task has {idx.shape[0]} runs' splits, not {runs}")
    return idx


def primitive_root(p: int) -> int:
    """The smallest generator of the multiplicative group mod the prime p."""
    if p == 2:
        return 1
    factors = [q for q in range(2, p) if (p - 1) % q == 0 and is_prime(q)]
    return next(g for g in range(2, p) if all(pow(g, (p - 1) // q, p) != 1 for q in factors))


def multiplication_task(p: int, train_fraction: float = 0.8,
                        seed: int | Sequence[int] = 0) -> Task:
    """a * b mod p over the nonzero residues, in discrete-log coordinates.

    With a = g^i and b = g^j (g a primitive root), a * b = g^((i + j) mod (p - 1)): the pairs
    and labels are the logs i, j and (i + j) mod (p - 1), so the task is addition mod p - 1
    and the Fourier analysis applies unchanged. A net with one-hot inputs cannot tell a
    relabelled token from another (its initial weights are i.i.d. over tokens), so training
    in log coordinates is training on multiplication with its tokens renamed.
    """
    task = make_task(p - 1, "add", train_fraction, seed)
    return replace(task, operation="mul")


def make_task(p: int, operation: str = "add", train_fraction: float = 0.8,
              seed: int | Sequence[int] = 0) -> Task:
    """The task with a random split of its pairs drawn from `seed`, or, for a sequence of
    seeds, one split per run drawn from each run's seed (rows of train_idx and test_idx): the
    "data" of modular arithmetic is the table of pairs, so a replicate draws its own split."""
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], 1)
    labels = true_labels(pairs[:, 0], pairs[:, 1], p, operation)
    n_train = round(train_fraction * p * p)
    orders = torch.stack([torch.randperm(p * p, generator=generator(s))
                          for s in ([seed] if isinstance(seed, int) else seed)])
    train, test = orders[:, :n_train].sort().values, orders[:, n_train:].sort().values
    if isinstance(seed, int):
        train, test = train[0], test[0]
    return Task(p, operation, pairs, labels, train, test)


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
    """U e_a + V e_b of every run for `pairs` (N, 2), or run r for its own row of `pairs`
    (R, N, 2): a new (R, N, M) tensor."""
    U, V = weights["U"], weights["V"]
    if pairs.dim() == 3:
        # each run's rows of its token-major copy, flattened to (R * P, M): one embedding
        # lookup gathers every run's (as fast as the shared path below; index_select and
        # gather on this layout are about twice as slow, backward included)
        runs, p = U.shape[0], U.shape[2]
        offset = (torch.arange(runs, device=pairs.device) * p)[:, None]

        def gather(x, tokens):
            return F.embedding(tokens + offset, x.transpose(1, 2).reshape(runs * p, -1))

        return gather(U, pairs[..., 0]).add_(gather(V, pairs[..., 1]))
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
    """Logits (R, N, P) of every run for `pairs` (N, 2) or (R, N, 2) (`pre_activations`):
    W phi(U e_a + V e_b) + mu."""
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
    train_idx, test_idx = task.train_rows(len(predicted)), task.test_rows(len(predicted))
    rows = []
    for r in range(predicted.shape[0]):
        m, train = mask[r], train_idx[r]
        hits = {
            "clean_train": predicted[r, train][~m] == true[train][~m],
            "noisy_memorized": predicted[r, train][m] == noisy[r][m],
            "noisy_true": predicted[r, train][m] == true[train][m],
            "test": predicted[r, test_idx[r]] == true[test_idx[r]],
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
class PairBatches:
    """Mini-batches of every run's own training pairs, shuffled per run and epoch from the
    run's seed: pairs (R, B, 2), labels (R, B), positions (R, B)."""

    def __init__(self, pairs: Tensor, labels: Tensor, batch_size: int, seeds: Sequence[int]):
        self.pairs, self.labels, self.batch_size = pairs, labels, batch_size
        self.generators = [generator(s) for s in seeds]

    def __len__(self) -> int:
        return math.ceil(self.labels.shape[1] / self.batch_size)

    def __iter__(self):
        n = self.labels.shape[1]
        orders = torch.stack([torch.randperm(n, generator=g) for g in self.generators])
        orders = orders.to(self.labels.device)
        for start in range(0, n, self.batch_size):
            idx = orders[:, start:start + self.batch_size]
            yield (self.pairs.gather(1, idx[..., None].expand(-1, -1, 2)),
                   self.labels.gather(1, idx), idx)


def train_runs(task: Task, alphas: Sequence[float], seeds: Sequence[int], width: int,
               spec: TrainSpec, activation: str = "relu", noise: str = "wrong",
               log_every: int = 50) -> dict:
    """Train one run per (alpha, seed) pair together, full batch (or in mini-batches of
    `spec.batch_size`, each run's shuffled from its seed: `PairBatches`), through memlib.train
    (on the GPU when there is one).

    Returns {"weights": final weights (R, ...), "noisy": (R, n_train) labels, "mask": (R, n_train),
    "history": tidy DataFrame epoch x run x subset -> acc}. A run's initialisation depends only
    on its seed and its noise only on (alpha, seed, its training pairs), whatever the batch
    around it; with a split per run (`make_task` of the runs' seeds) each run trains on its own.
    """
    train_idx = task.train_rows(len(seeds))
    train_y, train_pairs = task.labels[train_idx], task.pairs[train_idx]
    drawn = [label_noise(train_y[r], train_pairs[r], a, task.p, noise,
                         seed=s + 7919 * round(a * 1000))
             for r, (a, s) in enumerate(zip(alphas, seeds, strict=True))]
    device = resolve_device(spec.device)
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

    batch = (train_pairs, noisy, torch.arange(train_y.shape[1], device=device))
    data = ((batch,) if spec.batch_size is None
            else PairBatches(train_pairs, noisy, spec.batch_size, seeds))
    train(model, data, spec, step=step, callbacks=[log], memo=memo,
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


def split_test_pairs(task: Task, seeds: Sequence[int]) -> list[tuple[Tensor, Tensor]]:
    """Per run, its test pairs split at random into two disjoint halves (selection, scoring),
    drawn from the run's seed: a sub-network chosen on the first half is scored on the second,
    so that the choice does not flatter the score."""
    halves = []
    for test, seed in zip(task.test_rows(len(seeds)), seeds, strict=True):
        order = test[torch.randperm(len(test), generator=generator(seed))]
        half = len(order) // 2
        halves.append((order[:half].sort().values, order[half:].sort().values))
    return halves


def half_accuracies(predicted: Tensor, task: Task, halves: Sequence[tuple[Tensor, Tensor]]
                    ) -> pd.DataFrame:
    """Accuracy of every run's predictions (R, P^2) on its two test halves (`split_test_pairs`):
    subsets "test_select" and "test_score", one row per (run, subset)."""
    rows = []
    for r, halves_r in enumerate(halves):
        for subset, idx in zip(("test_select", "test_score"), halves_r, strict=True):
            hit = predicted[r, idx] == task.labels[idx]
            rows.append({"run": r, "subset": subset,
                         "acc": hit.float().mean().item() if hit.numel() else math.nan})
    return pd.DataFrame(rows)


def partition_curves(weights: Weights, task: Task, noisy: Tensor, mask: Tensor,
                     fractions: Sequence[float], activations: Sequence[str],
                     halves: Sequence[tuple[Tensor, Tensor]] = ()) -> pd.DataFrame:
    """Sub-networks by IPR or strength: top-gamma (generalizing part), bottom-gamma
    (memorizing part) and FF applied to the top-gamma part, four accuracies each, and with
    `halves` (`split_test_pairs`, one pair per run) the accuracy on each run's two test halves."""
    scores = {"ipr": ipr(weights), "strength": strength(weights)}
    frames = []
    for score_name, score in scores.items():
        for gamma in fractions:
            top = select_neurons(weights, top_fraction(score, gamma, largest=True))
            bottom = select_neurons(weights, top_fraction(score, gamma, largest=False))
            variants = {"top": top, "bottom": bottom, "top + FF": frequency_filter(top)[0]}
            for variant, w in variants.items():
                predicted = predictions(w, task.pairs, activations)
                for act in activations:
                    frame = accuracy_table(predicted[act], task, noisy, mask)
                    if halves:
                        frame = pd.concat([frame, half_accuracies(predicted[act], task, halves)],
                                          ignore_index=True)
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

    device = resolve_device(spec.device)  # where train() puts the model: the log evaluates there
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
