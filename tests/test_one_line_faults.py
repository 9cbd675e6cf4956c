"""Faults that end in one line, not a traceback: memory that runs out during training, a
Ctrl-C while the book's libraries load, a terminal that cannot show a folder's name, an IDX
file of no images, training labels of one class, a notebook that could not keep its results."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlib import cli

ROOT = Path(__file__).resolve().parent.parent


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text


@pytest.mark.parametrize("error", [
    MemoryError(),
    RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough "
                 "memory: you tried to allocate 68719476736 bytes."),
    RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB\nmore advice"),
])
def test_training_that_runs_out_of_memory_ends_in_one_line(error, monkeypatch, capsys):
    def too_wide(config):
        raise error

    monkeypatch.setattr("memlib.studies.probes.run", too_wide)
    assert cli.main(["run", "probes", "--scale", "smoke"]) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("memlib: error: probes at smoke scale ran out of memory")


def test_another_runtime_error_is_not_taken_for_memory(monkeypatch):
    def broken(config):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr("memlib.studies.probes.run", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        cli.main(["run", "probes", "--scale", "smoke"])


def test_a_folder_name_an_ascii_terminal_cannot_show_does_not_end_the_run(monkeypatch,
                                                                          tmp_path):
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "résultats"))
    monkeypatch.setattr("memlib.studies.probes.run", lambda config: None)
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="ascii"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="ascii"))
    assert cli.main(["run", "probes", "--scale", "smoke"]) == 0
    sys.stdout.flush()
    assert "r\\xe9sultats" in one_line(out.getvalue().decode("ascii"))


def test_ctrl_c_while_the_book_loads_ends_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    book = subprocess.Popen([sys.executable, "-m", "memlib", "book", "--scale", "smoke"],
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)  # inside the imports of torch and pandas, which take seconds
    book.send_signal(signal.SIGINT)
    out, err = book.communicate(timeout=120)
    assert book.returncode == 130, err
    assert one_line(err).startswith("memlib: interrupted") and "Traceback" not in err


KERNEL_NOTEBOOK = '''# %% tags=["parameters"]
scale = "smoke"

# %%
import warnings

import pandas as pd

import memlib
from memlib.tables import save_table

save_table(pd.DataFrame({"memlib": [memlib.__file__]}), "imported", "kernel_check", scale)
warnings.warn("could not write the cache entry x.pt (No space left on device); results are "
              "kept in memory for this run only", RuntimeWarning)
'''


def test_the_kernel_runs_this_checkouts_memlib_and_its_warnings_are_said_outside(
        tmp_path, monkeypatch, recwarn):
    from memlib import paths
    from memlib.pipeline import run_notebook

    notebook = tmp_path / "kernel_check.py"
    notebook.write_text(KERNEL_NOTEBOOK)
    # the environment's own memlib may be an editable install of another checkout
    monkeypatch.delenv("PYTHONPATH", raising=False)
    run_notebook(notebook, "smoke", params={})
    (message,) = [str(w.message) for w in recwarn]
    assert message.startswith("kernel_check.py: could not write the cache entry x.pt")
    table = paths.figures_dir("kernel_check", "smoke") / "imported.csv"
    assert str(ROOT / "memlib" / "__init__.py") in table.read_text()


def test_a_kernel_importing_another_checkouts_memlib_stops_in_one_line(monkeypatch, tmp_path):
    from memlib.pipeline import RUN_BY_PIPELINE, NotebookStop, notebook_config

    monkeypatch.setenv(RUN_BY_PIPELINE, str(tmp_path))  # the checkout that runs the notebook
    with pytest.raises(NotebookStop, match="this kernel imports memlib from") as stop:
        notebook_config("modarith", {"scale": "smoke"})
    assert "\n" not in str(stop.value)
