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
    """The smoke runs of the study notebooks, each executed at most once per session and
    published into one figures root, so the book test builds from the notebook tests' outputs
    instead of executing them again. A run uses the cache of the test that asks for it first.

    The notebooks in `in_ascii_locale` run as a user runs them, through the command line, in
    an ASCII locale: there any file read or written without encoding="utf-8" fails on the
    first non-ASCII character, after the run it was to publish."""

    ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0"}  # Python's UTF-8 mode would hide it
    in_ascii_locale = frozenset({"05_memorization_lens"})

    def __init__(self, root: Path):
        self.figures = root / "figures"
        self.build = root / "build"
        self.outcomes: dict[str, Path | BaseException] = {}

    def run(self, notebook: Path) -> Path:
        """The folder of `notebook`'s published smoke outputs (run now if no test ran it
        yet); a run that failed fails every test that asks for it."""
        from memlib import paths
        from memlib.pipeline import run_notebook

        if notebook.stem not in self.outcomes:
            with figures_root(self.figures):
                try:
                    if notebook.stem in self.in_ascii_locale:
                        self._run_from_the_command_line(notebook)
                    else:
                        run_notebook(notebook, "smoke", build_dir=self.build)
                    self.outcomes[notebook.stem] = paths.figures_dir(notebook.stem, "smoke")
                except Exception as err:
                    self.outcomes[notebook.stem] = err
        outcome = self.outcomes[notebook.stem]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _run_from_the_command_line(self, notebook: Path) -> None:
        """`python -m memlib notebook NOTEBOOK --scale smoke` in the ASCII locale."""
        import subprocess
        import sys

        root = Path(__file__).resolve().parent.parent
        env = {**os.environ, **self.ASCII_LOCALE, "MEMLIB_BUILD": str(self.build),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                           os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-m", "memlib", "notebook", str(notebook),
                               "--scale", "smoke"], env=env, cwd=root, capture_output=True,
                              text=True, encoding="utf-8", errors="replace")
        if done.returncode != 0:
            raise RuntimeError(f"memlib notebook {notebook.name} in the ASCII locale exited "
                               f"{done.returncode}: {done.stderr.strip()}")


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
