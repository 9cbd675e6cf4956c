"""Seeding: one call makes a CPU run bitwise reproducible."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch; return a torch.Generator seeded with `seed`.

    Deterministic algorithms are requested with warn_only so that ops without a
    deterministic kernel (some CUDA scatter ops) warn instead of crashing a long run.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    return generator(seed)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A private generator, so that drawing e.g. random labels never shifts the global stream."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
