"""Bad input that used to get through: data files that run code, values that pass each field's
check but not the rules between fields, a Makefile that ignores its folders, and noise on the
way to one line.

Every case ends in one line and the right exit code (1 for a damaged or unsafe file, 2 for bad
input) before any work.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import pickletools
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from memlib import cli, studies
from memlib.data import CorruptDataError, UnsafeDataError
from memlib.data import load as load_data

ROOT = Path(__file__).resolve().parent.parent


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text


def memlib_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "memlib", "run", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


# --- data files that would run code ----------------------------------------------------------


class Python2Pickler(pickle._Pickler):
    """Pickles as Python 2's cPickle wrote the CIFAR files: every string (bytes and str alike,
    as Python 2 had one type) as a BINSTRING, and NumPy's arrays rebuilt by
    numpy.core.multiarray._reconstruct."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_python2_string(self, obj) -> None:
        raw = obj.encode("latin1") if isinstance(obj, str) else obj
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[bytes] = save_python2_string
    dispatch[str] = save_python2_string


def python2_pickle(value) -> bytes:
    out = io.BytesIO()
    Python2Pickler(out, protocol=2).dump(value)
    return out.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


def pickle_globals(raw: bytes) -> set[str]:
    return {arg for op, arg, _ in pickletools.genops(raw) if op.name == "GLOBAL"}


def write_original_cifar(root: Path, which: str, n_train: int, n_test: int):
    """CIFAR-10 or CIFAR-100 as their original archives hold them (every key of every file,
    NumPy uint8 images, Python 2 strings); returns {split: (images, labels)}, class names."""
    rng = np.random.default_rng(0)
    ten = which == "cifar10"
    folder = root / ("cifar-10-batches-py" if ten else "cifar-100-python")
    folder.mkdir(parents=True)
    classes = [f"{which}_{i}".encode() for i in range(10 if ten else 100)]
    files = ({"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]} if ten
             else {"train": ["train"], "test": ["test"]})
    written = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 3 * 32 * 32), dtype=np.uint8)
        labels = rng.integers(0, len(classes), n).tolist()
        for file, part in zip(files[split], np.array_split(np.arange(n), len(files[split])),
                              strict=True):
            batch = {b"batch_label": f"{file} of 1".encode(), b"data": images[part],
                     b"filenames": [f"img_{i}.png".encode() for i in part]}
            if ten:
                batch[b"labels"] = [labels[i] for i in part]
            else:
                batch[b"fine_labels"] = [labels[i] for i in part]
                batch[b"coarse_labels"] = [labels[i] // 5 for i in part]
            (folder / file).write_bytes(python2_pickle(batch))
        written[split] = images.reshape(-1, 3, 32, 32), np.array(labels)
    meta = ({b"num_cases_per_batch": 10000, b"label_names": classes, b"num_vis": 3072} if ten
            else {b"fine_label_names": classes,
                  b"coarse_label_names": [f"super_{i}".encode() for i in range(20)]})
    (folder / ("batches.meta" if ten else "meta")).write_bytes(python2_pickle(meta))
    return written, tuple(c.decode() for c in classes)


@pytest.mark.parametrize("which", ["cifar10", "cifar100"])
def test_original_cifar_files_are_read(which, tmp_path):
    written, classes = write_original_cifar(tmp_path, which, n_train=15, n_test=5)
    first = next(p for p in sorted(tmp_path.rglob("*")) if p.is_file() and "meta" not in p.name)
    assert pickle_globals(first.read_bytes()) == {
        "numpy.core.multiarray _reconstruct", "numpy ndarray", "numpy dtype"}
    for split in ("train", "test"):
        loaded = load_data(which, split, root=tmp_path, download=False)
        images, labels = written[split]
        assert loaded.classes == classes
        assert np.array_equal(loaded.y.numpy(), labels)
        assert np.array_equal((loaded.x * 255).round().byte().numpy(), images)


class RunsACommand:
    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@pytest.mark.parametrize("payload", [
    lambda marker: RunsACommand(f"touch {marker}"),
    lambda marker: {b"data": np.zeros((1, 3072), np.uint8), b"labels": [RunsACommand(
        f"touch {marker}")]},
])
def test_a_data_file_that_runs_code_is_refused_unrun(payload, tmp_path):
    marker = tmp_path / "it_ran"
    data = tmp_path / "data"
    write_original_cifar(data / "cifar10", "cifar10", n_train=20, n_test=10)
    planted = data / "cifar10" / "cifar-10-batches-py" / "data_batch_1"
    planted.write_bytes(pickle.dumps(payload(marker), protocol=2))
    with pytest.raises(UnsafeDataError, match="asks to run (posix|os).system"):
        load_data("cifar10", "train", root=data / "cifar10", download=False)
    assert not marker.exists()
    run = memlib_run("fisher", "--scale", "smoke", "--set", "dataset=cifar10", "--set",
                     "n_train=20", "--set", "n_scatter=10", "--set", "n_test=10",
                     env={"MEMLIB_DATA": str(data)})
    assert run.returncode == 1, run.stderr
    assert str(planted) in one_line(run.stderr) and "nothing of it ran" in run.stderr
    assert not marker.exists()


def test_other_globals_and_codecs_are_refused(tmp_path):
    """Python 3's protocol-2 pickles spell bytes as _codecs.encode(text, "latin1"): that one
    call is rebuilt, any other codec is refused, as is every other global."""
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in ("data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                 "batches.meta"):
        (folder / name).write_bytes(b"")
    cases = [
        (b"\x80\x02c_codecs\nencode\nX\x03\x00\x00\x00abcX\x05\x00\x00\x00rot13\x86R.",
         CorruptDataError, "cannot be read"),
        (b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", UnsafeDataError,
         "builtins.eval"),
        (b"\x80\x02cnumpy\nload\nX\x01\x00\x00\x001\x85R.", UnsafeDataError, "numpy.load"),
    ]
    for raw, error, fragment in cases:
        (folder / "data_batch_1").write_bytes(raw)
        with pytest.raises(error, match=fragment) as caught:
            load_data("cifar10", "train", root=tmp_path, download=False)
        assert "\n" not in str(caught.value)


# --- values that pass their own checks but not the rules between them ------------------------


def started(*args, **kwargs):
    raise AssertionError("work started before the error")


@pytest.mark.parametrize("study, sets, fragment", [
    ("rlp", ["validation_samples=5"], "validation_samples=5 is below the 10 classes"),
    ("rlp", ["long_tail_ratio=100000"], "long_tail_ratio=100000 exceeds the 30 samples"),
    ("fisher", ["n_test=5"], "n_test=5 is below the 10 classes of fashion_mnist"),
    ("fisher", ["seeds=[0, 0]"], "seeds=[0, 0] repeats 0"),
    ("probes", ["standin_train=5"], "standin_train=5 is below the 10 classes"),
    ("modarith", ["image_samples=5"], "image_samples=5 is below the 10 classes"),
    ("lens", ["extra_seeds=[5, 5]"], "extra_seeds=[5, 5] repeats 5"),
    ("lens", ["extra_seeds=[1, 5]"], "extra_seeds=[1, 5] repeats study 1's seed 1"),
])
def test_values_against_each_other_stop_before_any_work(study, sets, fragment, tmp_path):
    cache = tmp_path / "cache"
    run = memlib_run(study, "--scale", "smoke", *(f"--set={s}" for s in sets),
                     env={"MEMLIB_CACHE": str(cache)})
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert one_line(run.stderr).startswith("memlib: error: ") and fragment in run.stderr
    assert not list(cache.rglob("*.pt"))  # nothing was computed


def test_a_subset_only_the_data_can_refuse_stops_as_it_loads(tmp_path):
    """CIFAR-10 of 30 training images, where the config expects 50,000: the validation set of
    50 is refused as the first run loads its data, before any training."""
    cache, data = tmp_path / "cache", tmp_path / "data"
    write_original_cifar(data / "cifar10", "cifar10", n_train=30, n_test=10)
    run = memlib_run("rlp", "--scale", "smoke", "--set", "dataset=cifar10", "--set",
                     "validation_samples=50", "--set", "parallel_runs=1",
                     env={"MEMLIB_CACHE": str(cache), "MEMLIB_DATA": str(data)})
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert "a class-stratified subset of count=50 samples needs" in one_line(run.stderr)
    assert not list(cache.rglob("*.pt"))


def test_a_size_only_the_data_can_refuse_stops_as_it_loads_naming_both_numbers(tmp_path):
    """A CIFAR-10 copy of 200 training images, where the config expects 50,000: 190 training
    samples beside 20 validation samples are more than the 180 left, refused as the first run
    loads its data (never clamped to what is there)."""
    cache, data = tmp_path / "cache", tmp_path / "data"
    write_original_cifar(data / "cifar10", "cifar10", n_train=200, n_test=40)
    run = memlib_run("rlp", "--scale", "smoke", "--set", "dataset=cifar10", "--set",
                     "validation_samples=20", "--set", "train_samples=190", "--set",
                     "test_samples=20", "--set", "parallel_runs=1",
                     env={"MEMLIB_CACHE": str(cache), "MEMLIB_DATA": str(data)})
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert ("train_samples=190 asks for more than the 180 training samples of cifar10 left "
            "beside the 20 validation samples" in one_line(run.stderr))
    assert not list(cache.rglob("*.pt"))


def test_a_fisher_subset_larger_than_a_smaller_copy_stops_as_it_loads(tmp_path):
    """n_train=250 of a CIFAR-10 copy of 200 training images (the config expects 50,000):
    refused as the first run loads its data, naming both numbers, never used whole."""
    cache, data = tmp_path / "cache", tmp_path / "data"
    write_original_cifar(data / "cifar10", "cifar10", n_train=200, n_test=40)
    run = memlib_run("fisher", "--scale", "smoke", "--set", "dataset=cifar10", "--set",
                     "n_train=250", "--set", "n_scatter=100", "--set", "n_test=40",
                     env={"MEMLIB_CACHE": str(cache), "MEMLIB_DATA": str(data)})
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert ("n_train=250 asks for more than the 200 training images of cifar10"
            in one_line(run.stderr))
    assert not list(cache.rglob("fisher-run-*.pt"))  # no run trained (the math checks may)


@pytest.mark.parametrize("study, sets, fragment", [
    ("rlp", ["measure_samples=12", "dataset=cifar100"], "measure_samples=12 is below the 100"),
    ("rlp", ["seeds=[3, 1, 3]"], "seeds=[3, 1, 3] repeats 3"),
    ("rlp", ["train_samples=null", "long_tail_ratio=10000"],
     "long_tail_ratio=10000 exceeds the 5990 samples of the smallest of the 10 classes"),
    ("rlp", ["validation_samples=60000"], "leaves none of the 60000 training images"),
    ("rlp", ["dataset=mnist-5k", "train_samples=5000"],
     "train_samples=5000 asks for more than the 3900 training samples of mnist-5k left beside "
     "the 100 validation samples"),
    ("rlp", ["dataset=digits", "test_samples=500"],
     "test_samples=500 asks for more than the 360 test samples of digits"),
    ("lens", ["datasets=[digits]", "study1_sets=[train_samples=5000]"],
     "study 1's preset on digits: train_samples=5000 asks for more than the 1337"),
    ("fisher", ["n_train=50", "n_scatter=20", "dataset=cifar100"], "n_train=50 is below"),
    ("fisher", ["dataset=mnist-5k", "n_train=4001"],
     "n_train=4001 asks for more than the 4000 training images of mnist-5k"),
    ("fisher", ["dataset=mnist-5k", "n_test=1001"],
     "n_test=1001 asks for more than the 1000 test images of mnist-5k"),
    ("modarith", ["image_dataset=mnist-5k", "image_samples=4001"],
     "image_samples=4001 asks for more than the 4000 training images of mnist-5k"),
    ("probes", ["standin_test=10001"],
     "standin_test=10001 asks for more than the 10000 test images of fashion_mnist"),
    ("fisher", ["corruptions=[0.0, 0.4, 0.4]"], "corruptions=[0.0, 0.4, 0.4] repeats 0.4"),
    ("probes", ["standin_test=9"], "standin_test=9 is below the 10 classes"),
    ("probes", ["seeds=[1, 1]"], "seeds=[1, 1] repeats 1"),
    ("modarith", ["order_lrs=[0.001]"], "must have the same length"),
    ("modarith", ["train_fraction=0.0005"], "leaves the training or the test set empty"),
    ("lens", ["noise_rates=[0.4, 0.4]"], "noise_rates=[0.4, 0.4] repeats 0.4"),
    ("lens", ["datasets=[cifar100]", "scatter_samples=50"], "scatter_samples=50 is below the 100"),
    ("lens", ["datasets=[fashion_mnist, cifar100]", "study1_sets=[validation_samples=50]"],
     "study 1's preset on cifar100: validation_samples=50 is below the 100 classes"),
])
def test_every_rule_between_values_is_checked_when_the_config_is_built(study, sets, fragment,
                                                                       monkeypatch, capsys):
    monkeypatch.setattr(studies.module(study), "run", started)
    args = [a for s in sets for a in ("--set", s)]
    assert cli.main(["run", study, "--scale", "smoke", *args]) == 2
    assert fragment in one_line(capsys.readouterr().err)


# --- the Makefile's folders ------------------------------------------------------------------


def make_figures_dry_run(env: dict[str, str], scale: str = "smoke") -> str:
    venv = Path(sys.executable).parent.parent
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "figures", f"SCALE={scale}",
                          f"VENV={venv}", "-o", f"{venv}/.installed"],
                         env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return out.stdout


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
@pytest.mark.parametrize("scale", ["smoke", "small"])
def test_make_uses_the_build_and_figures_folders_memlib_uses(scale, tmp_path):
    """Executed notebooks and the claims report where MEMLIB_BUILD and MEMLIB_FIGURES put
    them, newer than their sources: nothing to rerun; without them, everything."""
    build, figures = tmp_path / "elsewhere" / "build", tmp_path / "elsewhere" / "figures"
    env = {"MEMLIB_BUILD": str(build), "MEMLIB_FIGURES": str(figures)}
    later = time.time() + 3600
    claims = figures / ("CLAIMS.md" if scale == "small" else f"{scale}/CLAIMS.md")
    outputs = [build / scale / f"{p.stem}.ipynb" for p in (ROOT / "notebooks").glob("[0-9]*.py")]
    for output in outputs:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.touch()
        os.utime(output, (later, later))
    dry_run = make_figures_dry_run(env, scale)
    assert "memlib notebook" not in dry_run and f"memlib claims --scale {scale}" in dry_run
    claims.parent.mkdir(parents=True, exist_ok=True)
    claims.touch()
    os.utime(claims, (later + 1, later + 1))
    assert "memlib" not in make_figures_dry_run(env, scale)
    outputs[0].unlink()  # a notebook whose output is missing there reruns, and only it
    dry_run = make_figures_dry_run(env, scale)
    assert dry_run.count("memlib notebook") == 1 and outputs[0].stem in dry_run


# --- one line, not thirty ----------------------------------------------------------------


@pytest.mark.notebook
def test_a_notebook_whose_parameters_cell_lacks_the_presets_keys_runs_quietly(tmp_path):
    """papermill warns of every parameter the cell does not name, and injects it anyway."""
    notebook = tmp_path / "03_fisher_rank_inflation.py"  # outside the repository
    notebook.write_text('# %% tags=["parameters"]\nx = 1\n\n# %%\nfrom memlib import paths\n'
                        'folder = paths.figures_dir("03_fisher_rank_inflation", scale)\n'
                        'folder.mkdir(parents=True)\n'
                        '(folder / "seeds.txt").write_text(str(seeds))\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "memlib", "notebook", str(notebook), "--scale",
                          "smoke", "--set", "seeds=[4, 5]"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert (run.returncode, run.stderr) == (0, ""), run.stderr
    assert one_line(run.stdout).startswith("memlib: executed")
    figures = Path(os.environ["MEMLIB_FIGURES"]) / "smoke" / "03_fisher_rank_inflation"
    assert (figures / "seeds.txt").read_text() == "[4, 5]"  # injected all the same


def test_a_foreign_cache_entry_is_recomputed_with_one_line(recwarn):
    import argparse

    from memlib import cache

    for n, save in ((1, lambda value, f: torch.save(value, f)), (2, pickle.dump)):
        path = cache.entry_path("exp", {"n": n})
        path.parent.mkdir(parents=True, exist_ok=True)
        foreign = io.BytesIO()
        save(argparse.Namespace(n=n), foreign)  # with the digest of a real entry
        path.write_bytes(foreign.getvalue() + hashlib.sha256(foreign.getvalue()).digest())
        assert cache.cached("exp", {"n": n}, lambda n=n: n * 10) == n * 10
    messages = [str(w.message) for w in recwarn]
    assert len(messages) == 2, messages  # one per entry, nothing else
    assert all("\n" not in m and "not an entry memlib wrote" in m for m in messages)
    assert "it holds argparse.Namespace" in messages[0]


def test_a_run_says_how_many_results_could_not_be_written(monkeypatch, capsys):
    from memlib import cache

    write = cache.atomic_write_bytes

    def half_full(path, data):
        if "full" in path.name:
            raise OSError(28, "No space left on device", str(path))
        write(path, data)

    def four_results(config):
        return [cache.cached(name, {"n": n}, lambda n=n: n)
                for name in ("kept", "full") for n in (1, 2)]

    monkeypatch.setattr(cache, "atomic_write_bytes", half_full)
    monkeypatch.setattr("memlib.studies.probes.run", four_results)
    with pytest.warns(RuntimeWarning, match="could not write the cache entry"):
        assert cli.main(["run", "probes", "--scale", "smoke"]) == 0
    out = one_line(capsys.readouterr().out)
    assert "results (4 computed) are in" in out
    assert "except 2 that could not be written there and will be computed again" in out


def test_an_entry_holding_another_keys_result_is_recomputed_with_one_line(recwarn):
    from memlib import cache

    assert cache.cached("exp", {"n": 1}, lambda: {"history": [1]}) == {"history": [1]}
    assert cache.cached("other", {"n": 2}, lambda: {"rows": [2]}) == {"rows": [2]}
    assert cache.cached("exp", {"n": 1}, lambda: {"history": [0]}) == {"history": [1]}  # a hit
    assert not recwarn.list
    mine, theirs = cache.entry_path("exp", {"n": 1}), cache.entry_path("other", {"n": 2})
    mine.write_bytes(theirs.read_bytes())  # intact bytes, another computation's result
    assert cache.cached("exp", {"n": 1}, lambda: {"history": [1]}) == {"history": [1]}
    (message,) = [str(w.message) for w in recwarn]
    assert "\n" not in message and f"it holds the result stored as {theirs.name}" in message
    assert cache.load(mine) == {"history": [1]}  # stored again, under its own name
