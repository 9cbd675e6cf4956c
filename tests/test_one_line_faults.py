"""Faults that end in one line, not a traceback: memory that runs out during training, a
Ctrl-C while the book's libraries load, a terminal that cannot show a folder's name, an IDX
file of no images, training labels of one class, a notebook that could not keep its results."""

from __future__ import annotations

import contextlib
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
    # Ctrl-C's default action in the child, even when the tests were started in the background
    # by a shell, whose children inherit SIGINT ignored
    book = subprocess.Popen([sys.executable, "-m", "memlib", "book", "--scale", "smoke"],
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # inside the book's imports: once torch's library is mapped (a fixed sleep lands before
    # memlib's handlers on a slow machine and after the imports on a fast one)
    maps = Path(f"/proc/{book.pid}/maps")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and book.poll() is None:
        with contextlib.suppress(OSError):
            if "libtorch" in maps.read_text():
                break
        time.sleep(0.01)
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


def write_idx(folder: Path, split: str, images, labels) -> None:
    """Fashion-MNIST's two IDX files of `split` (uint8 images N x 28 x 28, labels N)."""
    import numpy as np

    names = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}[split]
    images, labels = np.asarray(images, np.uint8), np.asarray(labels, np.uint8)
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in zip(names, (images, labels), strict=True):
        header = bytes([0, 0, 8, array.ndim]) + b"".join(
            int(n).to_bytes(4, "big") for n in array.shape)
        (folder / name).write_bytes(header + array.tobytes())


@pytest.fixture
def fake_fashion_mnist(tmp_path, monkeypatch):
    """A Fashion-MNIST folder under MEMLIB_DATA; the test writes its files."""
    import numpy as np

    from memlib import data

    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path / "data"))
    data.clear_cache()
    folder = tmp_path / "data" / "fashion_mnist"
    rng = np.random.default_rng(0)
    write_idx(folder, "test", rng.integers(0, 255, (50, 28, 28)), np.arange(50) % 10)
    yield folder, rng
    data.clear_cache()


def test_an_idx_file_of_no_images_stops_in_one_line(fake_fashion_mnist, capsys):
    import numpy as np

    folder, _ = fake_fashion_mnist
    write_idx(folder, "train", np.zeros((0, 28, 28)), [])
    assert cli.main(["run", "rlp", "--scale", "smoke"]) == 1
    err = one_line(capsys.readouterr().err)
    assert "the train split of fashion_mnist holds no images" in err


def test_training_labels_of_one_class_stop_in_one_line(fake_fashion_mnist, capsys):
    folder, rng = fake_fashion_mnist
    write_idx(folder, "train", rng.integers(0, 255, (500, 28, 28)), [3] * 500)
    assert cli.main(["run", "rlp", "--scale", "smoke"]) == 2
    err = one_line(capsys.readouterr().err)
    assert "the training labels of fashion_mnist are all of one class (3) of its 10" in err


@pytest.mark.parametrize("command, fragment", [
    (["run", "rlp", "--set", "noise_rates=[0.0]"], "noise_rates=[0.0] has no rate above 0"),
    (["notebook", "notebooks/01_random_label_heads.py", "--set", "noise_rates=[0.0]"],
     "noise_rates=[0.0] has no rate above 0"),
    (["run", "probes", "--set", "train_per_class=6001"],
     "train_per_class=6001 asks for more than the 6000 training images of the smallest class "
     "of fashion_mnist"),
    (["run", "probes", "--set", "heatmap_train_per_class=7000", "--set", "datasets=[mnist]"],
     "heatmap_train_per_class=7000 asks for more than the"),
    (["run", "lens", "--set", "scatter_samples=301"],
     "scatter_samples=301 asks for more than the 300 training examples of each run on "
     "fashion_mnist"),
])
def test_a_setting_only_the_data_or_the_analysis_can_refuse_stops_before_any_work(
        command, fragment, capsys):
    from memlib import paths

    assert cli.main([*command, "--scale", "smoke"]) == 2
    captured = capsys.readouterr()
    assert one_line(captured.err).startswith("memlib: error: ") and fragment in captured.err
    assert not list(paths.cache_dir().rglob("*.pt"))  # nothing was computed


def test_a_cell_that_runs_out_of_memory_fails_the_notebook_in_one_line(tmp_path):
    from memlib.pipeline import NotebookError, run_notebook

    notebook = tmp_path / "too_wide.py"
    notebook.write_text('# %% tags=["parameters"]\nscale = "smoke"\n\n# %%\nraise RuntimeError('
                        '"CUDA out of memory. Tried to allocate 20.00 GiB.\\nIncluding '
                        'non-PyTorch memory, this process has 1 GiB in use.")\n')
    with pytest.raises(NotebookError) as failed:
        run_notebook(notebook, "smoke", params={})
    assert "\n" not in str(failed.value)
    assert "RuntimeError: CUDA out of memory. Tried to allocate 20.00 GiB. Including" in str(
        failed.value)
