"""Study 3's method: per-example last-layer gradients, the scatter's effective rank and its
exact and first-order leave-one-out attribution (the secular equation, solved by a small C
kernel compiled on first use, else by torch), and the scores they are compared with."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from memlib import distributed, models, paths
from memlib.config import check
from memlib.process import compiler_target_flags
from memlib.seed import generator

__all__ = [
    "SPECTRA", "DROP", "FEATURE_TAPS", "augment", "residuals", "per_example_gradients",
    "gradient_norms", "rank_bound", "ieee_sqrt", "effective_rank", "decompose",
    "scatter_eigenvalues",
    "scatter_effective_rank", "loo_direct", "SECULAR_C", "downdated_eigenvalues", "loo_exact",
    "first_order_weights", "loo_first_order", "margins", "ranking_metrics", "feature_tap",
    "last_layer", "onset_epoch", "peak_epoch", "math_checks", "kernel_backend"
]

SPECTRA = ("eig", "sv")
DROP = 1e-12  # eigenvalues <= DROP * trace are numerical zeros
FEATURE_TAPS = {"smallcnn": "pool", "wrn": "pool", "resnet18": "avgpool"}


# ----------------------------------------------------------------------------- gradients


def augment(h: torch.Tensor, bias: bool = True) -> torch.Tensor:
    """[h, 1] in float64 (the bias input), or h alone when the layer has no bias."""
    h = h.double().flatten(1)
    return torch.cat([h, h.new_ones(len(h), 1)], 1) if bias else h


def residuals(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """softmax(z) - onehot(y) in float64: the loss gradient w.r.t. the logits."""
    logits = logits.double()
    return logits.softmax(1) - F.one_hot(labels, logits.shape[1]).double()


def per_example_gradients(h: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor,
                          bias: bool = True) -> torch.Tensor:
    """Closed-form per-example cross-entropy gradients of the last affine layer, (n, C*(d+1)).

    Row i is vec(r_i [h_i; 1]^T): the weight gradient (C x d) with the bias gradient as its
    last column, flattened row-major, i.e. torch.cat([dW, db[:, None]], 1).flatten().
    """
    r, ht = residuals(logits, labels), augment(h, bias)
    return (r[:, :, None] * ht[:, None, :]).flatten(1)


def gradient_norms(h: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor,
                   bias: bool = True) -> torch.Tensor:
    """||g_i|| = ||r_i|| * ||[h_i; 1]|| (an outer product's norm) without forming g."""
    return residuals(logits, labels).norm(dim=1) * augment(h, bias).norm(dim=1)


def rank_bound(num_classes: int, width: int, bias: bool = True) -> int:
    """Residuals sum to zero, so gradients span at most (C - 1)(d + 1) dimensions."""
    return (num_classes - 1) * (width + int(bias))


# ----------------------------------------------------------------------------- spectra


def ieee_sqrt(x: torch.Tensor) -> torch.Tensor:
    """The square root rounded as IEEE 754 prescribes, the same bits on every processor.

    torch's CPU sqrt goes through MKL's vector math library, whose results are not correctly
    rounded (1.4% of random doubles, 17% of floats under memlib's pins) and, emulated, an AMD
    EPYC's differ from an Intel Xeon's; numpy's sqrt is the processor's exact instruction,
    the same everywhere. On a GPU torch's sqrt is exact already.
    """
    if x.device.type != "cpu":
        return x.sqrt()
    return _NumpySqrt.apply(x)


class _NumpySqrt(torch.autograd.Function):
    """numpy's square root with sqrt's derivative, 1 / (2 sqrt(x))."""

    @staticmethod
    def forward(ctx, x):
        root = torch.from_numpy(np.sqrt(x.detach().numpy()))
        ctx.save_for_backward(root)
        return root

    @staticmethod
    def backward(ctx, grad):
        (root,) = ctx.saved_tensors
        return grad / (2 * root)


def effective_rank(values: torch.Tensor, spectrum: str = "eig") -> torch.Tensor:
    """exp(entropy) of the normalised spectrum along the last axis (float64).

    `values` are eigenvalues of a scatter; "eig" normalises them, "sv" their square roots
    (the singular values of the centred matrix, Roy & Vetterli's effective rank). Values
    <= DROP * trace (and negative round-off) are dropped.
    """
    check(spectrum in SPECTRA, f"spectrum={spectrum!r}; choose one of: {', '.join(SPECTRA)}")
    lam = values.double().clamp(min=0)
    lam = torch.where(lam > DROP * lam.sum(-1, keepdim=True), lam, 0.0)
    q = ieee_sqrt(lam) if spectrum == "sv" else lam
    p = q / q.sum(-1, keepdim=True)
    entropy = -torch.special.xlogy(p, p).sum(-1)
    return entropy.exp()


def _centred_gram(r: torch.Tensor, ht: torch.Tensor) -> torch.Tensor:
    """J (G G^T) J with G G^T = (R R^T) * (H H^T): the Kronecker structure, no G formed."""
    k = (r @ r.T) * (ht @ ht.T)
    row = k.mean(0, keepdim=True)
    return k - row - row.T + k.mean()


def decompose(h: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor, bias: bool = True
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Nonzero eigenvalues lam (ascending) of S and coordinates Z (n x K), Z[i, k] = v_k^T c_i.

    D-space (eigh of the D x D scatter) when n > D; Gram form (n x n, from the Kronecker
    structure) otherwise, where Z = U sqrt(lam) because c_i^T v_k = sigma_k U[i, k].
    """
    r, ht = residuals(logits, labels), augment(h, bias)
    n, dim = len(r), r.shape[1] * ht.shape[1]
    if n > dim:
        c = (r[:, :, None] * ht[:, None, :]).flatten(1)
        c = c - c.mean(0)
        lam, v = torch.linalg.eigh(c.T @ c)
        z = c @ v
    else:
        lam, u = torch.linalg.eigh(_centred_gram(r, ht))
        z = u * ieee_sqrt(lam.clamp(min=0))
    keep = lam > DROP * lam.clamp(min=0).sum()
    return lam[keep], z[:, keep]


def scatter_eigenvalues(h: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor,
                        bias: bool = True) -> torch.Tensor:
    """Eigenvalues of the centred scatter (ascending), by the cheaper of D-space and Gram."""
    r, ht = residuals(logits, labels), augment(h, bias)
    n, dim = len(r), r.shape[1] * ht.shape[1]
    if n > dim:
        c = (r[:, :, None] * ht[:, None, :]).flatten(1)
        c = c - c.mean(0)
        return torch.linalg.eigvalsh(c.T @ c)
    return torch.linalg.eigvalsh(_centred_gram(r, ht))


def scatter_effective_rank(h, logits, labels, bias: bool = True, spectrum: str = "eig") -> float:
    return effective_rank(scatter_eigenvalues(h, logits, labels, bias), spectrum).item()


# ----------------------------------------------------------------------------- leave one out


def loo_direct(h, logits, labels, indices, bias: bool = True, spectrum: str = "eig"
               ) -> torch.Tensor:
    """Reference: er of the scatter recentred without example i, one eigensolve per i."""
    n = len(labels)
    out = []
    for i in torch.as_tensor(indices).tolist():
        keep = torch.arange(n) != i
        lam = scatter_eigenvalues(h[keep], logits[keep], labels[keep], bias)
        out.append(effective_rank(lam, spectrum))
    return torch.stack(out) if out else torch.empty(0, dtype=torch.float64)


SECULAR_C = r"""
#include <float.h>
#include <math.h>
#include <stdlib.h>

/* Root k of f(t) = 1 - sum_j w[j] / (p[j] - t) (p ascending, w > 0): the one in
   (p[k-1], p[k]), or in (p[0] - sum w, p[0]) for k = 0. dlaed4's "middle way": fit a pole
   plus constant to the left sum and to the right sum (value and slope), solve the
   quadratic, measure from the nearer pole; bisection keeps every step in the bracket. */
static double secular_root(int m, int k, const double *p, const double *w, double total) {
    const double a = k == 0 ? p[0] - total : p[k - 1], b = p[k];
    double mid = 0.5 * (a + b), f = 1.0;
    for (int j = 0; j < m; ++j) f -= w[j] / (p[j] - mid);
    const double origin = f > 0 ? b : a;
    double lo = f > 0 ? mid - origin : a - origin, hi = f > 0 ? b - origin : mid - origin;
    double tau = mid - origin;
    const double da0 = a - origin, db0 = b - origin;
    for (int it = 0; it < 100; ++it) {
        double left = 0, left2 = 0, right = 0, right2 = 0;
        for (int j = 0; j < k; ++j) {
            const double inv = 1.0 / ((p[j] - origin) - tau), t = w[j] * inv;
            left += t;
            left2 += t * inv;
        }
        for (int j = k; j < m; ++j) {
            const double inv = 1.0 / ((p[j] - origin) - tau), t = w[j] * inv;
            right += t;
            right2 += t * inv;
        }
        f = 1.0 - left - right;
        if (f == 0) break;
        if (f > 0) lo = tau; else hi = tau;
        const double da = da0 - tau, db = db0 - tau;
        const double sl = left2 * da * da, sr = right2 * db * db;
        const double c = 1.0 - (left - left2 * da) - (right - right2 * db);
        const double bq = c * (da + db) - sl - sr, cq = f * da * db;
        double eta;
        if (c == 0) {
            eta = cq / bq;
        } else {
            double disc = bq * bq - 4 * c * cq;
            disc = disc > 0 ? sqrt(disc) : 0;
            eta = bq >= 0 ? 2 * cq / (bq + disc) : 2 * cq / (bq - disc);
        }
        double next = tau + eta;
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        const double step = fabs(next - tau);
        tau = next;
        if (step <= 2 * DBL_EPSILON * fabs(tau) || hi - lo <= 2 * DBL_EPSILON * fabs(tau)) break;
    }
    return origin + tau;
}

/* p: K ascending poles shared by all rows; w: n x K weights; out: n x K roots. A weight
   too small to move any eigenvalue by more than round-off deflates: out = p[j]. */
int downdate_roots(int n, int K, const double *p, const double *w, double *out) {
    double *pp = malloc(sizeof(double) * (K + 1)), *ww = malloc(sizeof(double) * (K + 1));
    int *where = malloc(sizeof(int) * (K + 1));
    if (!pp || !ww || !where) { free(pp); free(ww); free(where); return -1; }
    const double pmax = K ? fabs(p[K - 1]) : 0;
    for (int r = 0; r < n; ++r) {
        const double *wr = w + (long)r * K;
        double *o = out + (long)r * K;
        double total = 0, kept = 0;
        for (int j = 0; j < K; ++j) total += wr[j];
        const double scale = (pmax > total ? pmax : total) * 2 * DBL_EPSILON;
        int m = 0;
        for (int j = 0; j < K; ++j) {
            if (wr[j] * total <= scale * scale) { o[j] = p[j]; continue; }
            pp[m] = p[j]; ww[m] = wr[j]; where[m] = j; kept += wr[j]; ++m;
        }
        for (int k = 0; k < m; ++k) o[where[k]] = secular_root(m, k, pp, ww, kept);
    }
    free(pp); free(ww); free(where);
    return 0;
}
"""


def _flags() -> list[str]:
    # Reassociation lets gcc vectorise the sums; no other fast-math liberties.
    return ["-O3", *compiler_target_flags(), "-fno-math-errno", "-fno-trapping-math",
            "-fassociative-math", "-fno-signed-zeros", "-shared", "-fPIC"]


@functools.lru_cache(maxsize=4)
def _compiler_version(compiler: str) -> str | None:
    """The compiler's own account of itself (`cc --version`'s first line); None when it
    does not run."""
    try:
        run = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout.splitlines()[0].strip() if run.returncode == 0 and run.stdout else None


def _compiler() -> tuple[str, str] | None:
    """(the C compiler, its version), or None: MEMLIB_NO_CC=1, no compiler, or one that does
    not run."""
    if os.environ.get("MEMLIB_NO_CC"):
        return None
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    version = compiler and _compiler_version(compiler)
    return (compiler, version) if version else None


def kernel_backend(device: str | torch.device) -> str:
    """Which secular solver computes on `device`, as cache keys name it: "c <compiler version>
    <flags>" for the compiled kernel, "torch" for the vectorised torch path (no compiler,
    MEMLIB_NO_CC=1, a failed build, or a GPU). The two agree to rounding, not bit for bit."""
    if torch.device(device).type != "cpu" or _kernel() is None:
        return "torch"
    compiler = _compiler()
    return f"c {compiler[1]} {' '.join(_flags())}" if compiler else "torch"


@functools.lru_cache(maxsize=1)
def _kernel():
    """The compiled secular kernel (ctypes); None when no C compiler is available
    (MEMLIB_NO_CC=1 forces the torch fallback) or the build fails.

    Native code runs only from a library this user built on this machine from memlib's own
    source: it lives in `paths.kernels_dir()` (never in the results cache, which a class kit
    packs), in a file named by the hash of the source, the compiler's version and the flags,
    and by the digest of its own bytes. It is opened once, refused unless the folder and the
    file are this user's and writable by no one else, hashed from that open file, and loaded
    from the same open file (no other file can be swapped in between). A library whose bytes
    do not match its name, that does not load and run in a child process (a damaged one
    kills the process that maps it with SIGBUS), or that solves a small problem wrongly is
    rebuilt, with a warning; a folder that is not private, read-only or full gets a build of
    this process's own."""
    compiler = _compiler()
    if compiler is None:
        return None
    tag = hashlib.sha256("\0".join([SECULAR_C, compiler[1], *_flags(), platform.node(),
                                     platform.machine()]).encode()).hexdigest()[:16]
    folder = paths.kernels_dir()
    found = sorted(folder.glob(f"secular-{tag}-*.so")) if _private(folder) else []
    lib = next((lib for lib in map(_load_kernel, found) if lib is not None), None)
    if lib is None and found:
        warnings.warn(f"the compiled kernel {found[0]} is damaged; rebuilding it",
                      RuntimeWarning, stacklevel=2)
        for library in found:
            library.unlink(missing_ok=True)
    if lib is None:
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not _private(folder):
                raise PermissionError(f"{folder} is not private to this user")
            built = _build_kernel(compiler[0], folder, tag)
            lib = built and _load_kernel(built)
        except OSError:  # a read-only, full or shared folder
            lib = _private_kernel(compiler[0], tag)
    return lib or None


def _private(path: Path) -> bool:
    """Whether `path` (a folder or file) is this user's and no one else can write it."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def _private_kernel(compiler: str, tag: str):
    """A kernel built for this process alone, in a temporary folder; None, with a warning,
    when that fails too (a full disk)."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            built = _build_kernel(compiler, Path(tmp), tag)
            return built and _load_kernel(built)  # loaded before its folder goes
    except OSError as err:
        warnings.warn(f"could not build the compiled kernel ({err.strerror or err}); the "
                      "slower torch path runs", RuntimeWarning, stacklevel=3)
        return None


def _build_kernel(compiler: str, folder: Path, tag: str) -> Path | None:
    """Compile SECULAR_C into `folder` (atomically), as secular-<tag>-<digest of its
    bytes>.so; None if the compiler fails."""
    with tempfile.TemporaryDirectory() as tmp:
        source, built = Path(tmp) / "secular.c", Path(tmp) / "secular.so"
        source.write_text(SECULAR_C, encoding="utf-8")
        try:
            result = subprocess.run([compiler, *_flags(), str(source), "-o", str(built), "-lm"],
                                    capture_output=True, text=True)
        except OSError:  # CC names no program
            return None
        if result.returncode:
            return None
        digest = hashlib.sha256(built.read_bytes()).hexdigest()[:32]
        library = folder / f"secular-{tag}-{digest}.so"
        staged = folder / f".{library.name}.{os.getpid()}.tmp"
        try:
            shutil.move(str(built), str(staged))
            os.chmod(staged, 0o700)
            os.replace(staged, library)
        finally:
            staged.unlink(missing_ok=True)  # what a full disk left half-written
    return library


def _load_kernel(library: Path):
    """The kernel in `library`, or None unless it is private to this user, the digest of the
    bytes of the very file opened matches its name, it loads and runs in a child process and
    it matches the torch path on a small problem."""
    try:
        fd = os.open(library, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:32]
        opened = f"/proc/self/fd/{fd}" if Path("/proc/self/fd").is_dir() else str(library)
        if not library.stem.endswith(f"-{digest}") or not _runs_in_a_child(opened, fd):
            return None
        lib = ctypes.CDLL(opened)
        lib.downdate_roots.restype = ctypes.c_int
        lib.downdate_roots.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 3
    except (OSError, AttributeError):
        return None
    finally:
        os.close(fd)  # the mapping stays; the descriptor is no longer needed
    poles = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    weights = torch.tensor([[0.1, 0.2, 0.3, 0.4]], dtype=torch.float64)
    out = torch.empty_like(weights)
    status = lib.downdate_roots(1, 4, poles.data_ptr(), weights.data_ptr(), out.data_ptr())
    ok = status == 0 and torch.allclose(out[0], _roots_torch(poles, weights)[0], rtol=1e-9)
    return lib if ok else None


_CHILD_RUN = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
poles, weights = (ctypes.c_double * 2)(1.0, 2.0), (ctypes.c_double * 2)(0.1, 0.2)
sys.exit(lib.downdate_roots(1, 2, poles, weights, (ctypes.c_double * 2)()))
"""


def _runs_in_a_child(library: str, fd: int) -> bool:
    """Whether `library` (the open file `fd`, checked already) loads and solves a small
    problem in a child process: a damaged library can kill the process that maps it."""
    try:
        child = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD_RUN, library],
                               capture_output=True, timeout=60, pass_fds=(fd,))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return child.returncode == 0


def _previous_live(live: torch.Tensor) -> torch.Tensor:
    """For each pole of each row, the index of the nearest live pole to its left (-1: none)."""
    index = torch.arange(live.shape[1], device=live.device).expand_as(live)
    marked = torch.where(live, index, -1).cummax(1).values
    return torch.cat([torch.full_like(marked[:, :1], -1), marked[:, :-1]], 1)


def _roots_torch(p: torch.Tensor, w: torch.Tensor, block: int | None = None) -> torch.Tensor:
    """The C kernel's iteration on w's device, vectorised over every (row, root) pair of
    w (n x K) at once. Pairs go in blocks of at most `block` // K (bounding each n-by-K
    temporary to `block` float64 values), and each iteration drops the pairs that have
    converged, so a few slow roots do not keep the whole block iterating."""
    n, k_poles = w.shape
    out = p.expand(n, k_poles).clone()
    if out.numel() == 0:
        return out
    eps = torch.finfo(torch.float64).eps
    total = w.sum(1, keepdim=True)
    scale = torch.maximum(p[-1].abs(), total) * 2 * eps
    live = w * total > scale**2  # the rest deflate: their eigenvalue stays
    live_w = torch.where(live, w, 0)
    kept = live_w.sum(1)
    previous = _previous_live(live)
    rows, roots = live.nonzero(as_tuple=True)
    block = block or (2**26 if w.is_cuda else 2**22)
    size = max(1, block // k_poles)
    for start in range(0, len(rows), size):
        r, k = rows[start:start + size], roots[start:start + size]
        left_of = previous[r, k]
        a = torch.where(left_of >= 0, p[left_of.clamp(min=0)], p[k] - kept[r])
        out[r, k] = _solve_pairs(p, live_w, live, r, k, a, p[k])
    return out


def _solve_pairs(p, live_w, live, r, k, a, b) -> torch.Tensor:
    """Root k of row r's secular equation in (a, b) for every pair (r, k): secular_root's
    steps in float64, each pair stopping as the C kernel's loop does."""
    eps = torch.finfo(torch.float64).eps
    mid = (a + b) / 2
    f = 1 - torch.where(live[r], live_w[r] / (p - mid[:, None]), 0).sum(1)
    right_side = f > 0
    origin = torch.where(right_side, b, a)
    lo = torch.where(right_side, mid, a) - origin
    hi = torch.where(right_side, b, mid) - origin
    tau = mid - origin
    da0, db0 = a - origin, b - origin
    poles = torch.arange(len(p), device=p.device)
    active = torch.arange(len(r), device=p.device)
    for _ in range(100):
        ra, ka, ta = r[active], k[active], tau[active]
        inv = torch.where(live[ra], 1 / ((p - origin[active, None]) - ta[:, None]), 0)
        t = live_w[ra] * inv
        t2 = t * inv
        on_left = poles < ka[:, None]
        left, left2 = torch.where(on_left, t, 0).sum(1), torch.where(on_left, t2, 0).sum(1)
        right, right2 = torch.where(on_left, 0, t).sum(1), torch.where(on_left, 0, t2).sum(1)
        f = 1 - left - right
        lo_a = torch.where(f > 0, ta, lo[active])
        hi_a = torch.where(f > 0, hi[active], ta)
        da, db = da0[active] - ta, db0[active] - ta
        c = 1 - (left - left2 * da) - (right - right2 * db)
        bq, cq = c * (da + db) - left2 * da * da - right2 * db * db, f * da * db
        disc = ieee_sqrt((bq * bq - 4 * c * cq).clamp(min=0))
        eta = torch.where(bq >= 0, 2 * cq / (bq + disc), 2 * cq / (bq - disc))
        eta = torch.where(c == 0, cq / bq, eta)
        nxt = ta + eta
        nxt = torch.where((nxt > lo_a) & (nxt < hi_a), nxt, (lo_a + hi_a) / 2)
        solved = f == 0
        nxt = torch.where(solved, ta, nxt)
        small = 2 * eps * nxt.abs()
        done = solved | ((nxt - ta).abs() <= small) | (hi_a - lo_a <= small)
        tau[active], lo[active], hi[active] = nxt, lo_a, hi_a
        active = active[~done]
        if len(active) == 0:
            break
    return origin + tau


def _kernel_rows(lib, lam: torch.Tensor, weights: torch.Tensor, threads: int) -> torch.Tensor:
    """The compiled kernel over the rows of `weights`, split into `threads` contiguous blocks
    solved at once (ctypes lets go of the GIL): every row is solved alone, so the result is
    the same bits for any number of threads."""
    out = torch.empty_like(weights)
    n, k_poles = weights.shape
    bounds = [n * i // threads for i in range(threads + 1)]
    step = weights.element_size() * k_poles

    def solve(lo_hi):
        lo, hi = lo_hi
        return lib.downdate_roots(hi - lo, k_poles, lam.data_ptr(), weights.data_ptr() + lo * step,
                                  out.data_ptr() + lo * step) if hi > lo else 0

    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))
    if threads == 1:
        statuses = [solve(b) for b in blocks]
    else:
        with ThreadPoolExecutor(threads) as pool:
            statuses = list(pool.map(solve, blocks))
    if any(statuses):
        raise MemoryError("secular kernel could not allocate its work arrays")
    return out


def downdated_eigenvalues(lam: torch.Tensor, weights: torch.Tensor, backend: str = "auto"
                          ) -> torch.Tensor:
    """Eigenvalues of diag(lam) - u u^T for each row of `weights` = u^2 (n x K), float64, on
    the tensors' device.

    lam must be ascending and distinct up to round-off. backend: "c" (compiled kernel, CPU,
    on torch.get_num_threads() threads), "torch" (vectorised, any device) or "auto" (the C
    kernel for CPU tensors when a compiler is available, else torch).
    """
    lam = lam.double().contiguous()
    weights = weights.double().contiguous()
    on_cpu = weights.device.type == "cpu"
    lib = _kernel() if backend in ("auto", "c") and on_cpu else None
    if backend == "c" and lib is None:
        raise RuntimeError("the secular kernel needs CPU tensors and a C compiler; use "
                           "backend='torch'")
    if lib is None:
        return _roots_torch(lam.to(weights.device), weights)
    return _kernel_rows(lib, lam, weights, max(1, min(torch.get_num_threads(), len(weights))))


def loo_exact(lam: torch.Tensor, z: torch.Tensor, spectrum: str = "eig", chunk: int = 512,
              backend: str = "auto", device: str | torch.device | None = None) -> torch.Tensor:
    """Exact leave-one-out attribution Delta_i = er(S) - er(S_-i) for every row of z.

    S_-i (recentred without i) = S - alpha c_i c_i^T with alpha = n / (n - 1); in the
    eigenbasis of S that is diag(lam) - alpha z_i z_i^T, whose eigenvalues are the roots
    of the secular equation, solved in chunks of rows on `device` (default: z's; "auto":
    this rank's GPU when there is one, else the CPU) and returned on z's device.
    """
    home = z.device
    device = (distributed.device() if device == "auto"
              else torch.device(device) if device is not None else home)
    lam, z = lam.to(device), z.to(device)
    n = len(z)
    alpha = n / (n - 1)
    full = effective_rank(lam, spectrum)
    out = []
    for start in range(0, n, chunk):
        roots = downdated_eigenvalues(lam, alpha * z[start:start + chunk].double() ** 2, backend)
        out.append(full - effective_rank(roots, spectrum))
    return (torch.cat(out) if out else torch.empty(0, dtype=torch.float64, device=device)).to(home)


def first_order_weights(lam: torch.Tensor, spectrum: str = "eig") -> torch.Tensor:
    """beta_k = d er / d lam_k; for "eig": (er / T)(-log p_k - H)."""
    lam = lam.double().clamp(min=0)
    q = ieee_sqrt(lam) if spectrum == "sv" else lam
    total = q.sum()
    p = q / total
    entropy = -torch.special.xlogy(p, p).sum()
    beta = entropy.exp() / total * (-torch.log(p) - entropy)
    return beta / (2 * q) if spectrum == "sv" else beta


def loo_first_order(lam: torch.Tensor, z: torch.Tensor, spectrum: str = "eig") -> torch.Tensor:
    """First-order attribution alpha sum_k beta_k z_ik^2 (the eigenvalues move by -alpha z^2).

    For "eig" the n values sum to zero exactly: sum_i z_ik^2 = lam_k and sum_k beta_k lam_k = 0.
    """
    n = len(z)
    return n / (n - 1) * (z.double() ** 2) @ first_order_weights(lam, spectrum)


# ----------------------------------------------------------------------------- scoring


def margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The logit of each example's label minus its largest other logit (float64): positive
    when the label is predicted. Averaged over epochs it is the area under the margin (AUM,
    Pleiss et al. 2020)."""
    z = logits.double()
    other = z.scatter(1, labels[:, None], -math.inf).amax(1)
    return z.gather(1, labels[:, None])[:, 0] - other


def ranking_metrics(score, positive, k: int = 100) -> dict[str, float]:
    """How well a high `score` finds the `positive` (corrupted) examples.

    precision@k (top-k fraction positive), precision@n_pos, enrichment = precision@k over
    the base rate, AUROC and AUPRC (average precision); nan where there are no positives.
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    score = np.asarray(score, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n, n_pos = len(score), int(positive.sum())
    order = np.argsort(-score, kind="stable")
    base = n_pos / n if n else math.nan
    k = min(k, n)
    p_at_k = positive[order[:k]].mean() if k else math.nan
    if n_pos == 0 or n_pos == n:
        return {"precision_at_100": float(p_at_k), "precision_at_npos": math.nan,
                "enrichment": math.nan, "auroc": math.nan, "auprc": math.nan,
                "base_rate": base}
    return {"precision_at_100": float(p_at_k),
            "precision_at_npos": float(positive[order[:n_pos]].mean()),
            "enrichment": float(p_at_k / base),
            "auroc": float(roc_auc_score(positive, score)),
            "auprc": float(average_precision_score(positive, score)),
            "base_rate": base}


# ----------------------------------------------------------------------------- features


def feature_tap(model: torch.nn.Module, name: str) -> str:
    """The module whose output is the input of the final affine layer (in eval mode)."""
    if name == "mlp":
        return model.probe_layers[-1]
    return FEATURE_TAPS.get(name, "head_drop")  # timm ViT: pool -> fc_norm -> head_drop -> head


@torch.no_grad()
def last_layer(model: torch.nn.Module, name: str, x: torch.Tensor, batch: int = 1024):
    """(features h, logits) in eval mode, batched, on the CPU; h is the input of the final
    affine layer. Under torch.distributed each rank computes its shard and all gather."""
    tap = feature_tap(model, name)
    model.eval()
    device = next(model.parameters()).device
    rows = x[distributed.shard(len(x))]
    hs, zs = [], []
    for start in range(0, len(rows), batch):
        logits, outputs = models.features(model, rows[start:start + batch].to(device), [tap])
        hs.append(models.pool(outputs[tap]).float().cpu())
        zs.append(logits.float().cpu())
    h, z = torch.cat(hs), torch.cat(zs)
    return distributed.gather_rows(h, len(x)), distributed.gather_rows(z, len(x))


# ----------------------------------------------------------------------------- epochs


def onset_epoch(er: np.ndarray, peak: int, fraction: float = 0.1) -> int:
    """First epoch after the pre-peak minimum (epochs >= 1) where er has risen by `fraction`
    of the way from that minimum to the peak."""
    low = 1 + int(np.argmin(er[1:peak + 1]))
    threshold = er[low] + fraction * (er[peak] - er[low])
    rising = [e for e in range(low, peak + 1) if er[e] >= threshold]
    return rising[0] if rising else peak


def peak_epoch(er) -> int:
    """argmax of er over epochs >= 1: epoch 0 is inflated by the random initialisation."""
    er = np.asarray(er, dtype=np.float64)
    return 1 + int(np.argmax(er[1:]))


# ----------------------------------------------------------------------------- checks


def math_checks(n: int = 300, width: int = 12, num_classes: int = 5, seed: int = 0
                ) -> pd.DataFrame:
    """The method's identities on synthetic features, each with its tolerance."""
    from torch.func import functional_call, grad, vmap

    g = generator(seed)
    h = torch.randn(n, width, generator=g, dtype=torch.float64)
    logits_w = torch.randn(num_classes, width, generator=g, dtype=torch.float64)
    bias_w = torch.randn(num_classes, generator=g, dtype=torch.float64)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    head = torch.nn.Linear(width, num_classes).double()
    params = {"weight": logits_w, "bias": bias_w}

    def loss(p, x, y):
        return F.cross_entropy(functional_call(head, p, (x[None],)), y[None])

    auto = vmap(grad(loss), in_dims=(None, 0, 0))(params, h, labels)
    auto = torch.cat([auto["weight"], auto["bias"][:, :, None]], 2).flatten(1)
    z = h @ logits_w.T + bias_w
    closed = per_example_gradients(h, z, labels)
    c = closed - closed.mean(0)
    scatter = c.T @ c
    i, alpha = 7, n / (n - 1)
    rest = torch.cat([closed[:i], closed[i + 1:]])
    rest = rest - rest.mean(0)
    lam, coords = decompose(h, z, labels)
    exact = loo_exact(lam, coords)
    direct = effective_rank(lam) - loo_direct(h, z, labels, range(n))
    first = loo_first_order(lam, coords)
    small = slice(0, (num_classes - 1) * (width + 1) // 3)  # n < D: the Gram form
    gram = scatter_eigenvalues(h[small], z[small], labels[small])
    cs = closed[small] - closed[small].mean(0)
    dspace = torch.linalg.eigvalsh(cs.T @ cs)
    top = len(gram)
    rows = [
        ("closed form = autograd (max abs diff)", (auto - closed).abs().max().item(), 1e-12),
        ("downdate identity S_-i = S - n/(n-1) c c^T", (rest.T @ rest - (
            scatter - alpha * torch.outer(c[i], c[i]))).abs().max().item() / scatter.abs().max()
         .item(), 1e-12),
        ("fast exact LOO = direct (max abs er diff)", (exact - direct).abs().max().item(), 1e-8),
        ("sum of first-order attributions (relative)",
         abs(first.sum().item()) / first.abs().sum().item(), 1e-10),
        ("Gram = D-space eigenvalues (relative)", ((gram - dspace[-top:]).abs().max()
                                                   / dspace.max()).item(), 1e-10),
        ("rank - (C-1)(d+1) (must be <= 0)", float(len(lam) - rank_bound(num_classes, width)), 0),
    ]
    table = pd.DataFrame(rows, columns=["check", "value", "tolerance"])
    table["passed"] = table["value"].abs() <= table["tolerance"]
    table.loc[5, "passed"] = rows[5][1] <= 0
    return table
