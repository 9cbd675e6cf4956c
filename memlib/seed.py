"""Seeding: one call makes a CPU run bitwise reproducible, and a CUDA run on the same GPU
model as far as its kernels allow (those that cannot be are recorded, for the manifest)."""

from __future__ import annotations

import random
import re
import warnings

import numpy as np
import torch

from memlib.process import cuda_determinism_env

# torch's words when an op without a deterministic kernel runs under warn_only
_NONDETERMINISTIC = re.compile(r"non-?deterministic|does not have a deterministic", re.I)
_warned: set[str] = set()
# In deterministic mode torch fills every new tensor with NaN (integers with their largest
# value) so that a kernel reading memory it never wrote shows up; memlib's kernels write every
# element they read, so the fill only costs time (6-11% of a study-1 SmallCNN run) and every
# result's bits are the same without it (tests/test_same_bits.py compares them)
FILL_UNINITIALIZED_MEMORY = False


def seed_everything(seed: int, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch; return a torch.Generator seeded with `seed`.

    Deterministic algorithms are requested with warn_only so that ops without a
    deterministic kernel (some CUDA scatter ops) warn instead of crashing a long run; the
    warnings are recorded (nondeterministic_kernels); new tensors are not filled with NaN
    (`FILL_UNINITIALIZED_MEMORY`). On CUDA, cuDNN picks deterministic
    algorithms without benchmarking, and attention runs on the math backend (the flash,
    memory-efficient and cuDNN backends' backward passes are not deterministic).
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        cuda_determinism_env()  # a no-op when memlib was imported first, as it should be
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = FILL_UNINITIALIZED_MEMORY
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        if torch.cuda.is_available():
            math_attention_only()
        record_nondeterministic_warnings()
    return generator(seed)


def math_attention_only() -> None:
    """Scaled-dot-product attention on its math backend alone. Only where CUDA is: the flags
    are global, and the CPU's choice reads the flash one too (its bits would change)."""
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)
    torch.backends.cuda.enable_math_sdp(True)


def nondeterministic_warning(message: str) -> str | None:
    """The kernel a torch warning names as non-deterministic ("<op> does not have a
    deterministic implementation, ..."; else the warning's first sentence), or None."""
    if not _NONDETERMINISTIC.search(message):
        return None
    named = message.strip().split(" does not have a deterministic")[0]
    return named.split(". ")[0].split("\n")[0][:200]


def record_nondeterministic_warnings() -> None:
    """Note every non-deterministic-kernel warning this process shows, then show it as
    before (installed once; warnings hidden by a filter are not seen)."""
    shown = warnings.showwarning
    if getattr(shown, "_memlib_records", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        kernel = nondeterministic_warning(str(message))
        if kernel:
            _warned.add(kernel)
        return shown(message, category, filename, lineno, file, line)

    show._memlib_records = True
    warnings.showwarning = show


def nondeterministic_kernels() -> list[str]:
    """The kernels this process warned are non-deterministic, sorted."""
    return sorted(_warned)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A private generator, so that drawing e.g. random labels never shifts the global stream."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
