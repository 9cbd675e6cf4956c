"""Multi-process training helpers over torch.distributed (NCCL on GPUs, gloo on CPU).

memlib averages gradients itself (one coalesced all-reduce per step) instead of wrapping
models in DistributedDataParallel, so that module names, and hence taps and probe heads
attached by name, stay the same in one process and in many.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def is_main() -> bool:
    """Only the main process writes files (cache entries, checkpoints, figures)."""
    return rank() == 0


def init_from_env() -> bool:
    """Join the process group torchrun describes in the environment; False when not under it."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return active()
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend)
    return True


def device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def broadcast_parameters(module: torch.nn.Module) -> None:
    """Start every rank from rank 0's weights and buffers."""
    if active():
        for tensor in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(tensor.data, src=0)


def average_gradients(params: list[torch.nn.Parameter]) -> None:
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = _flatten_dense_tensors(grads)
    dist.all_reduce(flat)
    flat /= world_size()
    for grad, synced in zip(grads, _unflatten_dense_tensors(flat, grads)):
        grad.copy_(synced)


def all_sum(values: list[float]) -> list[float]:
    """Sum floats over ranks (metrics); identity in one process."""
    if not active():
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=_wire())
    dist.all_reduce(tensor)
    return tensor.tolist()



def broadcast_flag(flag: bool) -> bool:
    """Rank 0's `flag` on every rank: decisions that lead into collectives must agree."""
    if not active():
        return flag
    tensor = torch.tensor([int(flag)], device=_wire())
    dist.broadcast(tensor, src=0)
    return bool(tensor.item())


def shard(n: int) -> slice:
    """This rank's rows of an n-row per-example computation (every world_size-th)."""
    return slice(rank(), n, world_size())


def _wire() -> torch.device:
    """Where collectives' tensors must live: the GPU for NCCL, the CPU for gloo."""
    return device() if dist.get_backend() == "nccl" else torch.device("cpu")


def gather_rows(part: torch.Tensor, n: int) -> torch.Tensor:
    """Reassemble an (n, ...) tensor from the ranks' `shard(n)` rows, on every rank."""
    if not active():
        return part
    world, size = world_size(), -(-n // world_size())
    padded = part.new_zeros((size, *part.shape[1:]), device=_wire())
    padded[:len(part)] = part
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    out = part.new_empty((n, *part.shape[1:]))
    for r, gathered in enumerate(parts):
        out[r::world] = gathered[:len(range(r, n, world))]
    return out
