"""Fault injection: overlapping runs, read-only, full or damaged files, bad input, Ctrl-C.

Each test reproduces, on a tiny run, a way users lose work or time: outputs are never
lost, no failure is sticky, and every mistake ends in one line and the right exit code
(0 done, 1 data or environment, 2 bad input, 130 interrupted).
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

import pandas as pd
import pytest
import torch
from test_data import write_cifar, write_mnist_like

from memlib import STUDIES, cache, cli, paths, studies
from memlib.config import ConfigError, build
from memlib.data import CorruptDataError
from memlib.data import load as load_data
from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.studies import fisher
from memlib.train import TrainSpec, train

ROOT = Path(__file__).resolve().parent.parent
HANDSHAKE = Path(__file__).parent / "fixtures" / "handshake_notebook.py"


def memlib_process(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def wait_for(condition, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def listing(folder: Path) -> list[Path]:
    """What `folder` holds besides the marker memlib leaves in a folder it made."""
    return [p for p in folder.iterdir() if p.name != paths.MARKER]


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def started(*args, **kwargs):
    raise AssertionError("work started before the error")


def no_work(monkeypatch):
    """Make starting any study or notebook fail the test: errors must come first."""
    import memlib.pipeline

    for study in STUDIES:
        monkeypatch.setattr(studies.module(study), "run", started)
    monkeypatch.setattr(memlib.pipeline, "run_notebook", started)


# --- 1. overlapping runs of one notebook -----------------------------------------------------


@pytest.mark.notebook
def test_overlapping_runs_of_a_notebook_keep_every_output(tmp_path):
    """Runs A and B of one notebook start together; B waits until A has saved its first
    figure, then finishes and publishes; A finishes last and must publish its complete set
    (B used to delete the staging folder the two shared, and A's first figure with it).
    The working folder a killed run left behind goes; the live run's stays until it ends."""
    build_dir, saved, go = tmp_path / "build", tmp_path / "a_saved", tmp_path / "go"
    killed = build_dir / ".handshake_notebook.killed.run"  # the folder of a run killed by SIGKILL
    killed.mkdir(parents=True)
    (killed / "output.ipynb").touch()
    script = ("import sys; from memlib.pipeline import run_notebook; "
              f"run_notebook({str(HANDSHAKE)!r}, 'smoke', build_dir={str(build_dir)!r}, "
              "params={'n': int(sys.argv[1]), 'ready_file': sys.argv[2], 'go_file': sys.argv[3]})")
    first = memlib_process("-c", script, "5", str(saved), str(go))
    second = memlib_process("-c", script, "7", "", str(saved))
    _, second_err = second.communicate(timeout=180)
    assert second.returncode == 0, second_err
    go.touch()
    _, first_err = first.communicate(timeout=180)
    assert first.returncode == 0, first_err
    out = paths.figures_dir("handshake_notebook", "smoke")
    assert {p.name for p in out.iterdir()} == {"first.txt", "second.txt", "manifest.json",
                                              "handshake_notebook.ipynb"}
    assert json.loads((out / "manifest.json").read_text())["parameters"]["n"] == 5
    assert (out / "first.txt").read_text() == (out / "second.txt").read_text() == "5\n"
    assert sorted(p.name for p in listing(build_dir)) == ["handshake_notebook.ipynb"]
    assert sorted(p.name for p in listing(out.parent)) == ["handshake_notebook"]
    for err in (first_err, second_err):  # the kernel talks over private Unix sockets
        assert "without encryption" not in err and "IPKernelApp" not in err


# --- 2. read-only or full cache --------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["run", "fisher", "--scale", "smoke"],
    ["notebook", "notebooks/03_fisher_rank_inflation.py", "--scale", "smoke"],
])
def test_unwritable_cache_stops_before_any_work(command, tmp_path, monkeypatch, capsys):
    (tmp_path / "a_file").touch()
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "a_file" / "cache"))
    no_work(monkeypatch)
    assert cli.main(command) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("memlib: error: cannot write to") and "MEMLIB_CACHE" in err


def test_failed_cache_writes_keep_results_in_memory_and_warn_once(monkeypatch):
    def read_only(path, data):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(cache, "atomic_write_bytes", read_only)
    calls = []

    def compute(n):
        calls.append(n)
        x, y = torch.randn(64, 5), torch.arange(64) % 2
        history = train(MLP(5, (8,), 2), (x, y), TrainSpec(epochs=2, batch_size=16),
                        checkpoint=paths.cache_dir() / f"run{n}.ckpt")  # its writes fail too
        return {"n": n, "epochs": len(history)}

    with pytest.warns(RuntimeWarning) as caught:
        assert cache.cached("exp", {"n": 1}, lambda: compute(1)) == {"n": 1, "epochs": 3}
        assert cache.cached("exp", {"n": 2}, lambda: compute(2))["n"] == 2
        assert cache.cached("exp", {"n": 1}, lambda: compute(1))["n"] == 1  # from memory
    assert calls == [1, 2]
    messages = [str(w.message) for w in caught]
    assert sum("could not write the cache entry" in m for m in messages) == 1
    assert sum("could not write the checkpoint" in m for m in messages) == 1


def test_full_disk_under_build_is_one_line(monkeypatch, capsys):
    """The disk fills while the notebook is written for papermill: one line, exit 1, and
    no working folder left behind."""
    import jupytext

    monkeypatch.setattr(jupytext, "write", full_disk)
    assert cli.main(["notebook", "notebooks/03_fisher_rank_inflation.py", "--scale", "smoke"]) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("memlib: error: no space left on device; stopped notebook 03_")
    assert "published outputs are unchanged" in err
    assert list(listing(paths.build_dir("smoke"))) == []


@pytest.mark.notebook
def test_publishing_copies_nothing_and_a_full_disk_keeps_the_outputs(tmp_path, monkeypatch,
                                                                     capsys):
    """The outputs are staged beside their folder, so publishing is renames that need no
    room on a full disk; a write that fails while publishing is one line, exit 1, and the
    published outputs stay as they were."""
    import memlib.presets
    import memlib.provenance

    preset = tmp_path / "handshake.yaml"
    preset.write_text("n: 5\n")
    monkeypatch.setattr(memlib.presets, "params_file", lambda notebook, scale: preset)
    for copy in ("move", "copy", "copy2", "copyfile", "copytree"):
        monkeypatch.setattr(shutil, copy, full_disk)  # no room for a second copy
    out = paths.figures_dir("handshake_notebook", "smoke")
    out.mkdir(parents=True)
    (out / "old.txt").write_text("old\n")
    write_manifest = memlib.provenance.write_manifest
    monkeypatch.setattr(memlib.provenance, "write_manifest", full_disk)
    command = ["notebook", str(HANDSHAKE), "--scale", "smoke"]
    assert cli.main(command) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("memlib: could not publish the outputs of handshake_notebook.py: "
                          "no space left on device; the published outputs were left as")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert [p.name for p in listing(out.parent)] == ["handshake_notebook"]  # no staging left
    monkeypatch.setattr(memlib.provenance, "write_manifest", write_manifest)
    assert cli.main(command) == 0
    assert sorted(p.name for p in out.iterdir()) == ["first.txt", "handshake_notebook.ipynb",
                                                  "manifest.json", "second.txt"]
    assert [p.name for p in listing(out.parent)] == ["handshake_notebook"]


@pytest.mark.notebook
def test_a_killed_run_leaves_nothing_behind_after_the_next_run(tmp_path, monkeypatch):
    """A run killed by SIGKILL cannot clean up its kernel's socket folder in the system temp
    folder nor its staging folder; the next run removes them (their lock died with it)."""
    import memlib.pipeline

    temp = Path(tempfile.mkdtemp(prefix="mk", dir="/tmp"))  # short: Unix socket paths
    try:
        saved, build_dir = tmp_path / "saved", tmp_path / "build"
        script = ("from memlib.pipeline import run_notebook; "
                  f"run_notebook({str(HANDSHAKE)!r}, 'smoke', build_dir={str(build_dir)!r}, "
                  f"params={{'n': 1, 'ready_file': {str(saved)!r}, 'go_file': 'never'}})")
        killed = memlib_process("-c", script, env={"TMPDIR": str(temp)},
                                start_new_session=True)
        wait_for(saved.exists)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate(timeout=60)
        out = paths.figures_dir("handshake_notebook", "smoke")
        assert list(temp.iterdir()) and len(list(listing(out.parent))) == 1
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        memlib.pipeline.run_notebook(HANDSHAKE, "smoke", build_dir=build_dir, params={"n": 2})
        assert list(temp.iterdir()) == []
        assert [p.name for p in listing(out.parent)] == ["handshake_notebook"]
        assert (out / "first.txt").read_text() == "2\n"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def computed_on_a_full_disk(n: int) -> dict:
    """Run in a prefetch worker whose cache disk is full: entry n, computed (and noted in the
    file FULL_DISK_LOG names) only if no process has it; training inside checkpoints."""
    cache.atomic_write_bytes = full_disk  # this worker process's cache writes fail

    def compute():
        with open(os.environ["FULL_DISK_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{n}\n")
        x, y = torch.randn(32, 5), torch.arange(32) % 2
        train(MLP(5, (8,), 2), (x, y), TrainSpec(epochs=1, batch_size=16),
              checkpoint=paths.cache_dir() / f"run{n}.ckpt")  # its writes fail too
        return {"n": n, "values": torch.full((3,), float(n)), "frame": pd.DataFrame({"x": [n]})}

    return cache.cached("exp", {"n": n}, compute)


def test_a_full_disk_keeps_what_the_workers_computed_and_says_so_once(tmp_path, monkeypatch,
                                                                      capfd):
    """Prefetch workers that cannot write their entries hand them to this process, which keeps
    them in memory for the run: nothing is computed twice, and each warning of the workers
    is given once, here (none in Python's two-line form from a worker)."""
    from memlib import parallel
    from memlib.runs import missing

    log = tmp_path / "computed.log"
    monkeypatch.setenv("FULL_DISK_LOG", str(log))
    monkeypatch.setattr(cache, "atomic_write_bytes", full_disk)  # this process's disk is full too
    monkeypatch.setattr(parallel, "COMPUTES_HERE", False)  # every run in a worker
    calls = [(computed_on_a_full_disk, n) for n in (1, 2, 3)]
    counts = cache.activity.copy()
    with pytest.warns(RuntimeWarning) as caught:
        parallel.prefetch(calls, processes=2)
    assert sorted(log.read_text(encoding="utf-8").split()) == ["1", "2", "3"]
    assert missing(calls) == []  # a second prefetch of the plan would compute nothing
    for n in (1, 2, 3):
        path = cache.entry_path("exp", {"n": n})
        assert cache.available(path) and not path.exists()
        kept = cache.cached("exp", {"n": n}, lambda: pytest.fail("computed again"))
        assert kept["n"] == n and torch.equal(kept["values"], torch.full((3,), float(n)))
        pd.testing.assert_frame_equal(kept["frame"], pd.DataFrame({"x": [n]}))
    # computed by the workers, read here from memory: counted as computed, not written
    assert cache.activity - counts == {"computed": 3, "not written": 3}
    messages = [str(w.message) for w in caught]
    assert sum("could not write the cache entry" in m for m in messages) == 1
    assert sum("could not write the checkpoint" in m for m in messages) == 1
    assert len(messages) == 2
    assert "Warning" not in capfd.readouterr().err


# --- 3. a damaged compiled kernel ------------------------------------------------------------


needs_a_compiler = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                      reason="no C compiler")
LAM, W = torch.tensor([0.5, 1.0, 3.0]), torch.tensor([[0.1, 0.2, 0.3]])


def solved_in_a_new_process() -> tuple[torch.Tensor, str]:
    """The C kernel's solution of (LAM, W) in a new process, and what that process warned."""
    run = memlib_process("-c", "import torch; from memlib.studies import fisher; "
                         f"print(fisher.downdated_eigenvalues(torch.tensor({LAM.tolist()}), "
                         f"torch.tensor({W.tolist()}), backend='c').tolist())")
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, (run.returncode, err)  # -7: SIGBUS
    return torch.tensor(json.loads(out), dtype=torch.float64), err


@needs_a_compiler
def test_damaged_kernel_is_rebuilt_and_no_compiler_falls_back(monkeypatch):
    lam, w = LAM, W
    expected = fisher.downdated_eigenvalues(lam, w, backend="torch")
    assert torch.allclose(solved_in_a_new_process()[0], expected)
    library, = paths.kernels_dir().glob("*.so")
    library.write_bytes(library.read_bytes()[:1000])  # truncated: loading it crashed Python
    assert torch.allclose(solved_in_a_new_process()[0], expected)

    library.write_bytes(b"not a shared library")
    monkeypatch.setenv("CC", "/nonexistent/cc")
    fisher._kernel.cache_clear()
    try:
        assert fisher._kernel() is None  # the torch path takes over
        assert torch.equal(fisher.downdated_eigenvalues(lam, w), expected)
    finally:
        fisher._kernel.cache_clear()


@needs_a_compiler
def test_damaged_kernel_with_a_matching_digest_is_rebuilt():
    """A library truncated and renamed to its new digest passes the digest check; loading it
    in process used to kill Python with SIGBUS on every run."""
    expected = fisher.downdated_eigenvalues(LAM, W, backend="torch")
    solved_in_a_new_process()
    library, = paths.kernels_dir().glob("*.so")
    damaged = library.read_bytes()[:4000]
    library.unlink()
    tag = library.name.rsplit("-", 1)[0]
    (library.parent / f"{tag}-{hashlib.sha256(damaged).hexdigest()[:32]}.so").write_bytes(damaged)
    solution, warned = solved_in_a_new_process()
    assert torch.allclose(solution, expected)
    assert "is damaged; rebuilding it" in warned
    assert solved_in_a_new_process()[1] == ""  # rebuilt whole: no warning since


@needs_a_compiler
def test_full_disk_while_building_the_kernel_leaves_nothing_and_falls_back(monkeypatch):
    def fills_the_disk(source, destination):
        Path(destination).touch()  # what a full disk leaves of a copy
        full_disk()

    monkeypatch.setattr(shutil, "move", fills_the_disk)
    fisher._kernel.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="could not build the compiled kernel"):
            assert fisher._kernel() is None  # the torch path takes over
    finally:
        fisher._kernel.cache_clear()
    assert [p for p in paths.kernels_dir().iterdir() if p.is_file()] == []


# --- 4. a damaged checkpoint -----------------------------------------------------------------


def test_damaged_checkpoint_is_discarded_and_the_run_starts_over(tmp_path):
    x, y = torch.randn(64, 5, generator=torch.Generator().manual_seed(0)), torch.arange(64) % 2

    def fit(epochs, checkpoint=None):
        seed_everything(0)
        model = MLP(5, (8,), 2)
        history = train(model, (x, y), TrainSpec(epochs=epochs, batch_size=16),
                        eval_sets={"train": (x, y)}, checkpoint=checkpoint)
        return history, model.state_dict()

    checkpoint = tmp_path / "run.ckpt"
    fit(2, checkpoint)
    checkpoint.write_bytes(checkpoint.read_bytes()[:-100])  # a truncated write
    with pytest.warns(RuntimeWarning, match="discarding the unreadable checkpoint"):
        history, state = fit(4, checkpoint)
    fresh_history, fresh_state = fit(4)
    assert history.equals(fresh_history)
    assert all(torch.equal(state[k], fresh_state[k]) for k in state)
    fit(5, checkpoint)  # the checkpoint written since is whole again: no warning, it resumes


# --- 5. damaged data files -------------------------------------------------------------------


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


@pytest.mark.parametrize("damage, what", [
    (lambda d: truncate(d / "mnist" / "train-images-idx3-ubyte.gz"), "end-of-stream"),
    (lambda d: (d / "mnist" / "train-labels-idx1-ubyte.gz").write_bytes(b"plain junk"),
     "Not a gzipped file"),
    (lambda d: (d / "mnist" / "train-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress(b"\x00\x00\x08\x05junk")), "not an IDX"),
    (lambda d: (d / "mnist" / "train-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress(b"\x00\x00\x08\x01\x00\x00")), "ends inside its header"),
])
def test_damaged_mnist_files_are_one_line(damage, what, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    write_mnist_like(tmp_path / "mnist", 20, 20, gz=True)
    damage(tmp_path)
    with pytest.raises(CorruptDataError) as err:
        load_data("mnist", "train", download=False)
    message = str(err.value)
    assert "\n" not in message and what in message
    assert "-idx" in message and "get it again" in message and str(tmp_path) in message
    assert cli.main(["run", "fisher", "--scale", "smoke", "--set", "dataset=mnist"]) == 1
    assert "get it again" in one_line(capsys.readouterr().err)


def test_a_damaged_idx_file_read_in_a_worker_is_one_line_naming_it(tmp_path):
    write_mnist_like(tmp_path / "mnist", 40, 20, gz=True)
    labels = tmp_path / "mnist" / "train-labels-idx1-ubyte.gz"
    labels.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00"))  # a short header
    run = memlib_process("-m", "memlib", "run", "rlp", "--scale", "smoke", "--set",
                         "dataset=mnist", "--set", "parallel_runs=2", "--set", "epochs=1",
                         env={"MEMLIB_DATA": str(tmp_path)})
    out, err = run.communicate(timeout=300)
    assert run.returncode == 1, err
    assert str(labels) in one_line(err) and "ends inside its header" in err


def test_damaged_cifar_pickle_is_one_line(tmp_path):
    write_cifar(tmp_path, "cifar10", n_train=10, n_test=2)
    truncate(tmp_path / "cifar-10-batches-py" / "test_batch")
    with pytest.raises(CorruptDataError, match="test_batch cannot be read.*get it again"):
        load_data("cifar10", "test", root=tmp_path, download=False)


# --- 6, 7. bad input: environment and values -------------------------------------------------


@pytest.mark.parametrize("minutes", ["abc", "0", "-1", "nan", ""])
def test_bad_checkpoint_minutes_stop_at_start(minutes, monkeypatch, capsys):
    monkeypatch.setenv("MEMLIB_CHECKPOINT_MINUTES", minutes)
    no_work(monkeypatch)
    assert cli.main(["run", "modarith", "--scale", "smoke"]) == 2
    assert "MEMLIB_CHECKPOINT_MINUTES" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("study, setting, fragment", [
    ("fisher", "epochs=true", "epochs='true' is not an integer"),
    ("fisher", "lr=inf", "lr='inf' is not a finite number"),
    ("fisher", "seeds=[-1]", "seeds[0]=-1 must be >= 0"),
    ("fisher", "mlp_widths=[]", "mlp_widths=[] must not be empty"),
    ("fisher", "mlp_widths=[0]", "mlp_widths[0]=0 must be positive"),
    ("fisher", "seeds=[0,", "seeds='[0,' is not valid YAML"),
    ("rlp", "widths=[0, 8]", "widths[0]=0 must be positive"),
    ("rlp", "momentum=1.5", "momentum=1.5 must be in [0, 1)"),
    ("rlp", "wrn_depth=12", "wrn_depth=12 must be 6n + 4"),
    ("modarith", "p=-7", "p=-7 must be a prime"),
    ("modarith", "lr=nan", "not a finite number"),
    ("probes", "seeds=[-1]", "seeds[0]=-1 must be >= 0"),
    ("probes", "noise_log2_levels=[9]", "noise_log2_levels[0]=9.0 must be <= 4"),
    ("fisher", "epochs=1000000000000", "epochs=1000000000000 must be <= 10000"),
    ("modarith", "p=1000000000000000003", "p=1000000000000000003 must be <= 10000"),
    ("rlp", "device=cudafoo", "device='cudafoo' is not valid; choose auto, cpu, cuda"),
    ("rlp", "device=cuda:99", "device='cuda:99' is not available: this machine has"),
    ("rlp", "model=vit_bogus", "unknown model 'vit_bogus'; did you mean"),
    ("rlp", "layer_models=[mlp, smallcnnn]", "unknown model 'smallcnnn'; did you mean smallcnn"),
])
def test_nonsense_values_stop_at_config_time(study, setting, fragment, monkeypatch, capsys):
    no_work(monkeypatch)
    assert cli.main(["run", study, "--scale", "smoke", "--set", setting]) == 2
    assert fragment in one_line(capsys.readouterr().err)


def test_every_numeric_config_field_declares_its_domain():
    def numeric(hint) -> bool:
        args = typing.get_args(hint)
        return hint in (int, float) or any(numeric(a) for a in args if a is not type(None))

    for study in STUDIES:
        config = studies.module(study).Config
        # a derived field (the lens's seeds: study 1's and its own) is no parameter
        derived = {f.name for f in dataclasses.fields(config) if not f.init}
        for name, hint in typing.get_type_hints(config, include_extras=True).items():
            if typing.get_origin(hint) is not typing.Annotated and name not in derived:
                assert not numeric(hint), f"{study}.Config.{name} declares no domain"
        seeds = "extra_seeds" if "seeds" in derived else "seeds"
        with pytest.raises(ConfigError):  # direct construction is checked as well
            config(**{seeds: (-1,)})
        build(config, {})


def test_every_integer_config_field_has_a_ceiling():
    """A slip like epochs=1000000000000 must stop at once, not start a run that never ends."""
    def integers(hint) -> bool:
        return hint is int or (typing.get_origin(hint) is not typing.Literal
                               and any(integers(a) for a in typing.get_args(hint)))

    for study in STUDIES:
        config = studies.module(study).Config
        hints = typing.get_type_hints(config, include_extras=True)
        for field in dataclasses.fields(config):
            if field.init and integers(hints[field.name]):
                default = field.default
                value = [10**12] * max(len(default), 1) if isinstance(default, tuple) else 10**12
                with pytest.raises(ConfigError, match=r"must be (<=|in \[)"):
                    build(config, {field.name: value})


def test_timm_vits_are_models_and_typos_get_the_nearest_names():
    from memlib.models import unknown_model

    assert unknown_model("vit_small_patch16_224") is None and unknown_model("wrn") is None
    assert "did you mean vit_base_patch32_224" in unknown_model("vit_base_patch32_244")


@pytest.mark.parametrize("content, fragment", [
    (b"epochs: 3\n# caf\xe9\n", "overrides.yaml is not UTF-8 text (byte 15)"),
    (b"1: 2\nfoo: 3\n", "unknown parameter 1 for Config"),
])
def test_unreadable_params_files_are_bad_input(content, fragment, tmp_path, monkeypatch,
                                               capsys):
    overrides = tmp_path / "overrides.yaml"
    overrides.write_bytes(content)
    no_work(monkeypatch)
    assert cli.main(["run", "fisher", "--scale", "smoke", "--params", str(overrides)]) == 2
    assert fragment in one_line(capsys.readouterr().err)


# --- 8. make sync ----------------------------------------------------------------------------


def test_make_sync_leaves_git_clean_and_nothing_to_rebuild(tmp_path):
    venv = Path(sys.executable).parent.parent
    if not (shutil.which("make") and shutil.which("git") and (venv / "bin/jupytext").exists()):
        pytest.skip("needs make, git and jupytext")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    for tracked in ("Makefile", "jupytext.toml", *map(str, sorted(
            p.relative_to(ROOT) for p in (ROOT / "notebooks").glob("[0-9]*.py")))):
        shutil.copy2(ROOT / tracked, clone / tracked)  # the working tree's versions
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "--quiet", "--allow-empty", "-am", "tree"], check=True)
    (clone / "build" / "small").mkdir(parents=True)
    for notebook in (clone / "notebooks").glob("[0-9]*.py"):
        (clone / "build" / "small" / f"{notebook.stem}.ipynb").touch()
    (clone / "figures" / "CLAIMS.md").touch()
    make = ["make", "-C", str(clone), f"VENV={venv}", "-o", f"{venv}/.installed",
            f"MEMLIB_BUILD={clone / 'build'}", f"MEMLIB_FIGURES={clone / 'figures'}"]

    def nothing_to_do() -> bool:
        out = subprocess.run([*make, "-n", "figures"], capture_output=True, text=True)
        return "Nothing to be done" in out.stdout and "memlib" not in out.stdout

    assert nothing_to_do()
    # every notebook, then again two of them, with and without a header, over their .ipynb
    for notebooks in ([], ["NOTEBOOKS=notebooks/01_random_label_heads.py "
                           "notebooks/03_fisher_rank_inflation.py"]):
        subprocess.run([*make, "sync", *notebooks], check=True, capture_output=True)
        status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
        assert status.stdout == ""
        assert nothing_to_do()
        assert len(list((clone / "notebooks").glob("*.ipynb"))) == len(STUDIES)


# --- 9. notebook paths -----------------------------------------------------------------------


@pytest.mark.parametrize("path, fragment", [
    ("notebooks/05_nothing.py", "the notebooks are notebooks/01_random_label_heads.py"),
    ("elsewhere/03_fisher_rank_inflation.py",
     "did you mean notebooks/03_fisher_rank_inflation.py"),
])
def test_missing_notebook_is_bad_input(path, fragment, capsys):
    assert cli.main(["notebook", path, "--scale", "smoke"]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"no such notebook {path}" in err and fragment in err


def test_repository_notebook_paths_work_from_any_folder(tmp_path, monkeypatch, capsys):
    import memlib.pipeline

    ran = []

    def fake_run(notebook, scale, params):
        ran.append(notebook)
        return paths.build_dir(scale) / "x.ipynb"

    monkeypatch.setattr(memlib.pipeline, "run_notebook", fake_run)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["notebook", "notebooks/03_fisher_rank_inflation.py", "--scale", "smoke"]) == 0
    assert ran == [ROOT / "notebooks" / "03_fisher_rank_inflation.py"]


def test_notebook_without_a_parameters_cell_is_bad_input(tmp_path, monkeypatch, capsys):
    """papermill would run it with its own values, ignoring --scale and --set."""
    import memlib.pipeline

    untagged = tmp_path / "03_fisher_rank_inflation.py"
    source = (ROOT / "notebooks" / untagged.name).read_text()
    untagged.write_text(source.replace('# %% tags=["parameters"]', "# %%"))
    monkeypatch.setattr(memlib.pipeline, "_execute", started)
    assert cli.main(["notebook", str(untagged), "--scale", "smoke", "--set", "epochs=3"]) == 2
    assert "has no cell tagged parameters" in one_line(capsys.readouterr().err)


# --- 10. Ctrl-C ------------------------------------------------------------------------------


def default_sigint() -> None:
    """In the child: Ctrl-C's default action, even when the tests themselves were started in
    the background by a shell, whose children inherit SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(process: subprocess.Popen) -> tuple[int, str]:
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: the whole process group
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def test_ctrl_c_during_a_run_is_one_line_and_130():
    run = memlib_process("-m", "memlib", "run", "fisher", "--scale", "smoke", "--set",
                         "epochs=400", start_new_session=True, preexec_fn=default_sigint)
    wait_for(lambda: list(paths.cache_dir().glob("fisher-math-checks-*.pt")))
    code, err = interrupt(run)
    assert code == 130
    assert one_line(err).startswith("memlib: interrupted run fisher at smoke scale")
    assert "resume from the last checkpoint" in err


@pytest.mark.notebook
def test_ctrl_c_during_a_notebook_is_one_line_and_130():
    run = memlib_process("-m", "memlib", "notebook", "notebooks/03_fisher_rank_inflation.py",
                         "--scale", "smoke", "--set", "epochs=400", start_new_session=True,
                         preexec_fn=default_sigint, cwd=ROOT)
    build_dir = paths.build_dir("smoke")
    wait_for(lambda: list(build_dir.glob(".03_fisher_rank_inflation.*.run/output.ipynb")))
    time.sleep(1)
    code, err = interrupt(run)
    assert code == 130
    assert one_line(err).startswith("memlib: interrupted notebook 03_fisher_rank_inflation.py")
    assert list(listing(build_dir)) == []  # its working folder went with it
    assert not paths.figures_dir("03_fisher_rank_inflation", "smoke").exists()


# --- 11. what a run reports and records ------------------------------------------------------


def test_run_reports_time_and_place(monkeypatch, capsys):
    monkeypatch.setattr("memlib.studies.probes.run",
                        lambda config: cache.cached("probe", {"w": config.width}, lambda: 1))
    assert cli.main(["run", "probes", "--scale", "smoke", "--set", "width=3"]) == 0
    out = one_line(capsys.readouterr().out)
    assert "probes at smoke scale done in" in out and "1 computed" in out
    assert str(paths.cache_dir()) in out


def test_notebook_parameters_are_recorded_typed(monkeypatch, capsys):
    import memlib.pipeline

    seen = {}

    def fake_run(notebook, scale, params):
        seen.update(params)
        return paths.build_dir(scale) / "x.ipynb"

    monkeypatch.setattr(memlib.pipeline, "run_notebook", fake_run)
    assert cli.main(["notebook", "notebooks/03_fisher_rank_inflation.py", "--scale", "smoke",
                     "--set", "epochs=3", "--set", "seeds=[0, 2]", "--set", "lr=1e-2"]) == 0
    assert seen["epochs"] == 3 and seen["seeds"] == [0, 2] and seen["lr"] == 0.01
