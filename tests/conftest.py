import memlib  # noqa: F401, I001 - first: it pins the CPU dispatch before numpy and torch load
import contextlib
import os
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True)
def isolated_outputs(tmp_path, monkeypatch):
    """Every test writes figures, cache entries and executed notebooks into its own temporary
    directories."""
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("MEMLIB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("MEMLIB_KERNELS", str(tmp_path / "kernels"))
    monkeypatch.setenv("MEMLIB_PROGRESS", "0")
    torch.use_deterministic_algorithms(False)
    # process-level memory starts afresh: a computation's code fingerprint taken while an
    # earlier test had patched a module would otherwise outlive the patch, and a warning
    # given once would not be given to the test that looks for it
    from memlib import process, runs

    for computation in runs.REGISTRY.values():
        computation.__dict__.pop("code", None)
    monkeypatch.setattr(process, "_WARNED", set())
    yield


@contextlib.contextmanager
def figures_root(root: Path):
    """Publish into (and read from) the figures root `root` for the duration."""
    saved = os.environ.get("MEMLIB_FIGURES")
    os.environ["MEMLIB_FIGURES"] = str(root)
    try:
        yield root
    finally:
        if saved is None:
            os.environ.pop("MEMLIB_FIGURES", None)
        else:
            os.environ["MEMLIB_FIGURES"] = saved


class SmokeRuns:
    """The smoke runs of the study notebooks, made once per session as the README documents
    them, `make -j2 figures SCALE=smoke` then `make book SCALE=smoke`, in a clean copy of the
    checkout (its tracked and unignored files: no .venv, results, build or figures of earlier
    runs), and published into one figures root, so the notebook and book tests read their
    outputs instead of executing the notebooks again. The runs use the cache of the test that
    asks for them first.

    make runs in an ASCII locale: there any file read or written without encoding="utf-8"
    fails on the first non-ASCII character, after the run it was to publish. It runs with the
    environment's Python (`VENV=`), the copy's memlib first on the path, and a stamp of its own
    (`STAMP=`), so that it never installs anything into that environment."""

    ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0"}  # Python's UTF-8 mode would hide it
    in_ascii_locale = frozenset({"05_memorization_lens"})  # every one, under make

    def __init__(self, root: Path):
        self.figures = root / "figures"
        self.build = root / "build"
        self.clone = root / "clone"
        self.made: dict[str, object] = {}  # target -> the finished make process

    def run(self, notebook: Path) -> Path:
        """The folder of `notebook`'s published smoke outputs (the pipeline made now if no
        test made it yet); a notebook the pipeline did not publish fails every test that asks
        for it, with make's last lines."""
        from memlib import paths

        figures = self.make("figures")
        with figures_root(self.figures):
            published = paths.figures_dir(notebook.stem, "smoke")
        if not (published / "manifest.json").is_file():
            raise RuntimeError(f"make -j2 figures SCALE=smoke published no {notebook.stem} "
                               f"(exit {figures.returncode}): {figures.stderr[-3000:]}")
        return published

    def make(self, target: str):
        """`make TARGET SCALE=smoke` in the clean copy (figures first), made once."""
        import subprocess
        import sys

        if target != "figures":
            self.make("figures")
        if target not in self.made:
            if not self.clone.exists():
                self._copy_checkout()
            stamp = self.clone / ".smoke-stamp"  # newer than pyproject.toml: nothing installs
            stamp.touch()
            root = Path(__file__).resolve().parent.parent
            env = {**os.environ, **self.ASCII_LOCALE, "MEMLIB_FIGURES": str(self.figures),
                   "MEMLIB_BUILD": str(self.build), "PYTHONPATH": str(self.clone),
                   # the datasets this checkout reads (the copy has no data/)
                   "MEMLIB_DATA": os.environ.get("MEMLIB_DATA") or str(root / "data")}
            env.pop("MAKEFLAGS", None)
            env.pop("MFLAGS", None)
            venv = Path(sys.executable).parent.parent
            self.made[target] = subprocess.run(
                ["make", *(["-j2"] if target == "figures" else []), target, "SCALE=smoke",
                 f"VENV={venv}", f"STAMP={stamp}"], cwd=self.clone, env=env,
                capture_output=True, text=True, encoding="utf-8", errors="replace")
        return self.made[target]

    def _copy_checkout(self) -> None:
        """The checkout's tracked and unignored files, as a fresh clone with this working
        tree's changes would hold them."""
        import shutil
        import subprocess

        root = Path(__file__).resolve().parent.parent
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=root, capture_output=True,
                                check=True).stdout.decode().split("\0")
        for name in filter(None, listed):
            source = root / name
            if source.is_file() and not source.is_symlink():
                (self.clone / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, self.clone / name)


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    return SmokeRuns(tmp_path_factory.mktemp("smoke-runs"))


def pytest_collection_modifyitems(items):
    # the book is built from the notebooks' smoke runs: its test goes after theirs
    items.sort(key=lambda item: item.get_closest_marker("book") is not None)


def pytest_configure(config):
    # tests import small helper scripts that live beside them (tests/ddp_worker.py)
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
