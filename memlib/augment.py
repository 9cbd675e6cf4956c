"""Batched, seeded image augmentation on tensors (N, C, H, W), for in-memory datasets.

Each function draws from the generator it is given, so augmented runs stay
reproducible and resumable (the generator state is checkpointed with the loader).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def crop_flip(x: torch.Tensor, generator: torch.Generator, padding: int = 4) -> torch.Tensor:
    """Random crop after zero padding, and horizontal flip with probability 1/2 (CIFAR style)."""
    n, _, h, w = x.shape
    padded = F.pad(x, (padding,) * 4)
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    rows = (dy[:, None] + torch.arange(h)[None]).to(x.device)  # (n, h)
    cols = (dx[:, None] + torch.arange(w)[None]).to(x.device)  # (n, w)
    batch = torch.arange(n, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)
    flip = (torch.rand(n, generator=generator) < 0.5).to(x.device)
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def cutout(x: torch.Tensor, generator: torch.Generator, size: int = 16) -> torch.Tensor:
    """Zero one size x size square per image at a random centre (DeVries & Taylor 2017)."""
    n, _, h, w = x.shape
    cy = torch.randint(0, h, (n,), generator=generator).to(x.device)
    cx = torch.randint(0, w, (n,), generator=generator).to(x.device)
    ys, xs = torch.arange(h, device=x.device), torch.arange(w, device=x.device)
    inside_y = (ys[None] - cy[:, None]).abs() < (size + 1) // 2
    inside_x = (xs[None] - cx[:, None]).abs() < (size + 1) // 2
    mask = inside_y[:, :, None] & inside_x[:, None, :]
    return x.masked_fill(mask[:, None], 0.0)


def cifar(x: torch.Tensor, generator: torch.Generator, use_cutout: bool = True) -> torch.Tensor:
    x = crop_flip(x, generator)
    return cutout(x, generator) if use_cutout else x


AUGMENTATIONS = {"none": None, "crop_flip": crop_flip, "cifar_cutout": cifar}
