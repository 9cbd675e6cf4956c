"""The real pipeline (jupytext -> papermill -> staged outputs) on a tiny fixture notebook."""

import json
from pathlib import Path

import pandas as pd
import pytest

from memlib import STUDIES, cli, paths
from memlib.claims import collect
from memlib.pipeline import NotebookError, run_notebook

FIXTURE = Path(__file__).parent / "fixtures" / "tiny_notebook.py"


@pytest.mark.notebook
def test_success_writes_everything_and_failure_writes_nothing(tmp_path):
    build = tmp_path / "build"
    executed = run_notebook(FIXTURE, "smoke", params={"n": 4}, build_dir=build)
    out = paths.figures_dir("tiny_notebook", "smoke")
    assert executed == build / "tiny_notebook.ipynb" and executed.exists()
    assert {p.name for p in out.iterdir()} == {
        "line.pdf", "line.png", "numbers.csv", "numbers.md", "claims.csv", "claims.md",
        "claims_values.json",
        "manifest.json", "tiny_notebook.ipynb"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"] == {"n": 4, "scale": "smoke"}
    assert {"torch", "python"} <= set(manifest["versions"]) and manifest["wall_seconds"] > 0
    assert pd.read_csv(out / "claims.csv")["verdict"].tolist() == ["holds"]
    assert "injected-parameters" in executed.read_text()
    # published with the executed cells, and file names only where papermill kept paths
    published = json.loads((out / "tiny_notebook.ipynb").read_text())
    assert published["cells"] == json.loads(executed.read_text())["cells"]
    assert str(build) not in json.dumps(published["metadata"])

    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(NotebookError, match="failed in cell.*asked to fail"):
        run_notebook(FIXTURE, "smoke", params={"n": 9, "fail": True}, build_dir=build)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in build.iterdir() if p.name != paths.MARKER) == [
        "tiny_notebook.failed.ipynb", "tiny_notebook.ipynb"]


def test_missing_params_file_is_one_sentence(tmp_path):
    with pytest.raises(NotebookError, match="no parameter file"):
        run_notebook(FIXTURE, "smoke", build_dir=tmp_path)


def test_claims_report_lists_every_study(tmp_path):
    text = collect("smoke")
    assert "# Claims report (smoke scale)" in text
    assert text.count("No results yet") == len(STUDIES)
    assert paths.claims_report("smoke").read_text() == text


@pytest.mark.parametrize("argv, fragment", [
    (["run", "nosuch"], "unknown study 'nosuch'; choose one of: rlp"),
    (["run", "rlp", "--scale", "huge"], "unknown scale 'huge'; choose one of: smoke"),
    (["run", "rlp", "--set", "novalue"], "--set expects key=value"),
    (["frobnicate"], "invalid choice"),
])
def test_cli_bad_input_exits_2_with_one_line(argv, fragment, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_full_scale_notebooks_read_the_cache_and_name_the_command():
    from memlib.cache import MissingResultError
    from memlib.config import build
    from memlib.pipeline import run_command, study_results
    from memlib.presets import params_file, read_params
    from memlib.studies.fisher import Config

    preset = read_params(params_file(Path("03_fisher_rank_inflation.py"), "full"))
    # five seeds: the full preset runs each human label set on five of them
    config = build(Config, {**preset, "seeds": [4, 5, 6, 7, 8]})
    command = run_command("fisher", config, "full")
    assert command.startswith("torchrun --standalone --nproc_per_node=<GPUs> -m memlib run "
                              "fisher --scale full")
    assert command.endswith("--set 'seeds=[4, 5, 6, 7, 8]'") and command.count("--set") == 1
    assert cli.parse_sets(["seeds=[4, 5]"]) == {"seeds": "[4, 5]"}
    with pytest.raises(MissingResultError, match="compute it first with: torchrun"):
        study_results("fisher", config, "full")


def test_notebook_overrides_are_checked_before_the_kernel_starts(capsys):
    notebook = str(paths.repo_root() / "notebooks" / "03_fisher_rank_inflation.py")
    code = cli.main(["notebook", notebook, "--scale", "smoke",
                     "--set", "epochs_typo=3"])
    assert code == 2
    assert "unknown parameter 'epochs_typo'" in capsys.readouterr().err


def test_overrides_file_is_applied_before_sets_and_checked(tmp_path, capsys):
    overrides = tmp_path / "arm.yaml"
    overrides.write_text("epochs: 3\nseeds: [7]\n")
    params = cli.preset("03_fisher_rank_inflation", "smoke", overrides, {"epochs": "4"})
    assert params["seeds"] == [7] and params["epochs"] == "4"
    code = cli.main(["run", "fisher", "--scale", "smoke", "--params", str(tmp_path / "no.yaml")])
    assert code == 2 and "no overrides file" in capsys.readouterr().err


def test_missing_data_stops_a_run_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path))
    arm = paths.repo_root() / "params" / "full" / "01_random_label_heads.imagenet.yaml"
    assert cli.main(["run", "rlp", "--scale", "full", "--params", str(arm)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memlib: error: ImageNet train folder") and err.count("\n") == 1


def test_echoes_of_a_reported_failure_are_dropped():
    """run_notebook reports a failed or interrupted cell and a dead kernel in one line; the
    echoes asyncio logs of them (e.g. "Task exception was never retrieved" for a cell a
    Ctrl-C interrupted, seen on a loaded CI machine) must not reach the terminal."""
    import logging

    from nbclient.exceptions import CellExecutionError, DeadKernelError

    from memlib.pipeline import _ReportedInOneLine

    def record(message, error=None):
        exc_info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, exc_info)

    keep = _ReportedInOneLine().filter
    assert not keep(record("Task exception was never retrieved",
                           CellExecutionError("traceback", "KeyboardInterrupt", "")))
    assert not keep(record("Task exception was never retrieved", DeadKernelError("died")))
    assert not keep(record("Kernel died while waiting for execute reply."))
    assert keep(record("Task exception was never retrieved", ValueError("ours")))
    assert keep(record("an unrelated warning"))


@pytest.mark.notebook
def test_kernels_compute_pinned_and_manifests_keep_the_cold_cost(tmp_path, monkeypatch):
    from memlib import process

    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # what the kernel would inherit
    monkeypatch.setenv("MKL_CBWR", "AVX512")
    notebook = Path(__file__).parent / "fixtures" / "dispatch_notebook.py"
    out = paths.figures_dir("dispatch_notebook", "smoke")
    manifests = []
    for _ in range(2):  # cold, then warm: the entry is loaded, its cost still counts
        run_notebook(notebook, "smoke", params={"seconds": 0.3}, build_dir=tmp_path / "build")
        manifests.append(json.loads((out / "manifest.json").read_text()))
    kernel = pd.read_csv(out / "kernel.csv").iloc[0].to_dict()
    if process.dispatch_choice(None, process.cpu_flags(process.read_cpuinfo()))[0] == "avx2":
        assert kernel == {**process.PINS, "capability": process.PINNED_CAPABILITY}
        assert manifests[0]["cpu"]["pins"] == process.PINS
        assert manifests[0]["cpu"]["torch_cpu_capability"] == process.PINNED_CAPABILITY
    assert manifests[0]["cpu"]["cpu"] and manifests[0]["cpu"]["dispatch"]
    for manifest in manifests:
        assert manifest["cache_entries"] == 1 and manifest["cache_entries_without_time"] == 0
        assert 0.3 <= manifest["compute_seconds"] < manifests[0]["wall_seconds"]
    assert manifests[1]["compute_seconds"] == manifests[0]["compute_seconds"]


def test_ctrl_c_between_the_swaps_renames_waits_until_both_are_done(tmp_path, monkeypatch):
    """A Ctrl-C while the old outputs are moved aside must not lose them: it is held until
    the new folder is in place, then raised."""
    import os
    import signal

    from memlib import pipeline

    target, staged = tmp_path / "figures", tmp_path / "staged"
    target.mkdir()
    (target / "old.txt").write_text("old")
    staged.mkdir()
    (staged / "new.txt").write_text("new")
    rename = os.rename

    def interrupted_rename(src, dst):
        rename(src, dst)
        if Path(src) == target:  # the old folder is aside, the new one not yet in place
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(pipeline.os, "rename", interrupted_rename)
    with pytest.raises(KeyboardInterrupt):
        pipeline.swap_in(staged, target)
    assert (target / "new.txt").read_text() == "new"
    assert not list(tmp_path.glob(".figures.*"))
