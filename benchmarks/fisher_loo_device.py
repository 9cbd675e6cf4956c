"""The exact leave-one-out solvers against the compiled kernel on one thread (today's path).

One scatter problem (n rows, D dimensions, a decaying spectrum, as benchmarks/fisher_loo.py
builds it), solved in one process by: the C kernel on one thread; the C kernel over all of
torch's threads (the same bits: the path on CPU tensors); with --torch-cpu, the vectorised
torch path on the CPU's threads (the fallback without a compiler, far slower); and, where
CUDA is at hand, the torch path on the GPU. Prints each time, its ratio to the first (above
1: faster), and the largest difference from the kernel's attribution.

    .venv/bin/python benchmarks/fisher_loo_device.py [--n 800] [--dim 300] [--threads N]
        [--torch-cpu]
"""

from __future__ import annotations

import argparse
import time

import torch
from fisher_loo import scatter_problem  # the script folder is on sys.path

from memlib.studies import fisher


def timed(lam, z, **kwargs) -> tuple[torch.Tensor, float]:
    if z.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fisher.loo_exact(lam, z, **kwargs)
    if z.is_cuda:
        torch.cuda.synchronize()
    return out.cpu(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=800)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--torch-cpu", action="store_true")
    args = parser.parse_args()
    x = scatter_problem(args.n, args.dim)
    c = x - x.mean(0)
    lam, v = torch.linalg.eigh(c.T @ c)
    keep = lam > fisher.DROP * lam.clamp(min=0).sum()
    lam, z = lam[keep], (c @ v)[:, keep]
    fisher.downdated_eigenvalues(lam[:2], z[:1, :2] ** 2, "c")  # compile outside timing
    torch.set_num_threads(1)
    reference, base = timed(lam, z, backend="c")
    print(f"n = {args.n}, K = {len(lam)}: C kernel, 1 thread: {base:.2f} s")
    torch.set_num_threads(args.threads)
    paths = [(f"C kernel, {args.threads} threads", z, {"backend": "c"})]
    if args.torch_cpu:
        paths.append((f"torch, CPU, {args.threads} threads", z, {"backend": "torch"}))
    if torch.cuda.is_available():
        timed(lam.cuda(), z[:8].cuda(), backend="torch")  # CUDA context outside timing
        paths.append(("torch, CUDA", z.cuda(), {"backend": "torch"}))
    for name, rows, kwargs in paths:
        out, seconds = timed(lam.to(rows.device), rows, **kwargs)
        error = (out - reference).abs().max().item()
        print(f"{name}: {seconds:.2f} s; ratio to the 1-thread kernel: {base / seconds:.2f}; "
              f"max abs difference: {error:.2g}{' (same bits)' if error == 0 else ''}")


if __name__ == "__main__":
    main()
