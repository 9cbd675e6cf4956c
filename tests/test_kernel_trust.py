"""Native code runs only from a library this user built on this machine from memlib's own
source: a library planted in the cache (which a class kit packs) or in a folder others can
write is never executed, whatever checksum comes with it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from memlib import paths
from memlib.studies import fisher

needs_a_compiler = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                      reason="no C compiler")

PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("executed", f); fclose(f); }
}
int downdate_roots(int n, int k, const double *p, const double *w, double *out) { return 0; }
"""


def planted_library(tmp_path: Path, marker: Path) -> bytes:
    """A shared library whose constructor writes `marker` when anything loads it."""
    source = tmp_path / "planted.c"
    source.write_text(PLANTED % marker)
    out = tmp_path / "planted.so"
    subprocess.run([shutil.which("cc") or "gcc", "-shared", "-fPIC", str(source), "-o",
                    str(out)], check=True)
    return out.read_bytes()


def fresh_kernel():
    fisher._kernel.cache_clear()
    try:
        return fisher._kernel()
    finally:
        fisher._kernel.cache_clear()


@needs_a_compiler
def test_a_planted_library_is_never_executed(tmp_path):
    marker = tmp_path / "marker"
    evil = planted_library(tmp_path, marker)
    digest = hashlib.sha256(evil).hexdigest()
    built = fresh_kernel()  # the genuine kernel, to learn the name a planted one must take
    assert built is not None
    genuine, = paths.kernels_dir().glob("*.so")
    tag = genuine.name.rsplit("-", 1)[0]
    genuine.unlink()
    # where the kernel used to live: the cache's kernels/ folder, with a matching checksum
    cached = paths.cache_dir() / "kernels"
    cached.mkdir(parents=True)
    for name in (genuine.name, f"{tag}-{digest[:32]}.so", f"{tag.split('-')[0]}-x.so"):
        (cached / name).write_bytes(evil)
        (cached / f"{name}.sha256").write_text(digest)
    # in the kernels folder under the name its bytes hash to, but writable by others
    shared = paths.kernels_dir() / f"{tag}-{digest[:32]}.so"
    shared.write_bytes(evil)
    shared.chmod(0o777)
    assert fresh_kernel() is not None  # a genuine one, built again
    assert not marker.exists()
    assert fisher.kernel_backend("cpu").startswith("c ")


@needs_a_compiler
def test_a_kernels_folder_others_can_write_is_not_read(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    evil = planted_library(tmp_path, marker)
    folder = tmp_path / "shared-kernels"
    monkeypatch.setenv("MEMLIB_KERNELS", str(folder))
    assert fresh_kernel() is not None
    genuine, = folder.glob("*.so")
    tag = genuine.name.rsplit("-", 1)[0]
    genuine.unlink()
    (folder / f"{tag}-{hashlib.sha256(evil).hexdigest()[:32]}.so").write_bytes(evil)
    folder.chmod(0o777)
    try:
        lib = fresh_kernel()  # built in a private temporary folder instead
    finally:
        folder.chmod(0o700)
    assert lib is not None and not marker.exists()
    planted = folder / f"{tag}-{hashlib.sha256(evil).hexdigest()[:32]}.so"
    assert list(folder.glob("*.so")) == [planted]  # left alone, never opened


def test_no_compiler_means_the_torch_backend(monkeypatch):
    monkeypatch.setenv("MEMLIB_NO_CC", "1")
    fisher._kernel.cache_clear()
    try:
        assert fisher.kernel_backend("cpu") == "torch"
    finally:
        fisher._kernel.cache_clear()
    assert fisher.kernel_backend(torch.device("meta")) == "torch"


def test_the_kernel_lives_outside_the_cache():
    assert paths.cache_dir() not in paths.kernels_dir().parents
    assert os.environ["MEMLIB_KERNELS"] == str(paths.kernels_dir())
