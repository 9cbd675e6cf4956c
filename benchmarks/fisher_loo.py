"""Fast exact leave-one-out er (secular equation) vs a direct eigensolve per example.

A random scatter problem with a decaying spectrum (n = 4000 rows, D = 650, then D = 1290):
the fast solver computes er(S_-i) for all n examples from one eigendecomposition; the
direct method recentres without i and eigensolves, timed on 50 random examples and scaled
to n. Prints the max abs error on er over those 50, the speedup for each D, the time of
the first-order attribution for n = 10k at D = 1290, and last the speedup at D = 650.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fisher_loo.py [--n 4000] [--sample 50]
"""

from __future__ import annotations

import argparse
import time

import torch

from memlib.studies import fisher


def scatter_problem(n: int, dim: int, seed: int = 0) -> torch.Tensor:
    """Rows c_i with a power-law (decaying) covariance spectrum, float64."""
    g = torch.Generator().manual_seed(seed)
    scales = torch.arange(1, dim + 1, dtype=torch.float64) ** -1.0
    basis = torch.linalg.qr(torch.randn(dim, dim, generator=g, dtype=torch.float64))[0]
    return (torch.randn(n, dim, generator=g, dtype=torch.float64) * scales) @ basis.T


def er_of_rows(x: torch.Tensor) -> torch.Tensor:
    c = x - x.mean(0)
    return fisher.effective_rank(torch.linalg.eigvalsh(c.T @ c))


def compare(n: int, dim: int, sample: int) -> tuple[float, float]:
    x = scatter_problem(n, dim)
    start = time.perf_counter()
    c = x - x.mean(0)
    lam, v = torch.linalg.eigh(c.T @ c)
    keep = lam > fisher.DROP * lam.clamp(min=0).sum()
    lam, z = lam[keep], (c @ v)[:, keep]
    fast = fisher.effective_rank(lam) - fisher.loo_exact(lam, z)
    fast_seconds = time.perf_counter() - start
    pick = torch.randperm(n, generator=torch.Generator().manual_seed(1))[:sample].tolist()
    start = time.perf_counter()
    direct = torch.stack([er_of_rows(torch.cat([x[:i], x[i + 1:]])) for i in pick])
    direct_seconds = (time.perf_counter() - start) / sample * n
    error = (direct - fast[pick]).abs().max().item()
    speedup = direct_seconds / fast_seconds
    print(f"D = {dim}: fast exact LOO for n = {n}: {fast_seconds:.2f} s; direct per-example "
          f"eigensolve: {direct_seconds / n * 1e3:.1f} ms x {n} = {direct_seconds:.1f} s")
    print(f"D = {dim}: max abs error: {error:.3g}; speedup: {speedup:.1f}")
    return error, speedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--sample", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    fisher.downdated_eigenvalues(torch.ones(1, dtype=torch.float64),
                                 torch.ones(1, 1, dtype=torch.float64))  # compile outside timing
    error_650, speedup_650 = compare(args.n, 650, args.sample)
    error_1290, _ = compare(args.n, 1290, args.sample)
    x = scatter_problem(10_000, 1290, seed=2)
    start = time.perf_counter()
    c = x - x.mean(0)
    lam, v = torch.linalg.eigh(c.T @ c)
    fisher.loo_first_order(lam, c @ v)
    print(f"first-order attribution, n = 10000, D = 1290: {time.perf_counter() - start:.2f} s")
    print(f"max abs error: {max(error_650, error_1290):.3g}")
    print(f"speedup: {speedup_650:.1f}")


if __name__ == "__main__":
    main()
