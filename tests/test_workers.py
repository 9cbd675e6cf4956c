"""How many runs compute at once: the cores this process may use unless told, told by
`--workers` or MEMLIB_WORKERS, recorded in the manifest and held by no key; the same entries,
byte for byte, at 1 and 2 workers."""

from __future__ import annotations

import os

import pytest
from parallel_runs_check import check_parallel_runs
from test_trace import SMALLEST
from tiny import tiny

from memlib import STUDIES, cli, process, provenance, studies
from memlib.studies import rlp


@pytest.fixture
def cores(monkeypatch):
    """This process may use `n` cores."""
    monkeypatch.delenv(process.WORKERS_VARIABLE, raising=False)

    def use(n: int) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
    return use


def test_the_default_is_the_cores_this_process_may_use(cores, monkeypatch):
    cores(6)
    assert process.workers(None) == 6
    assert process.workers(3) == 3  # a study's parallel_runs, where set
    monkeypatch.setenv(process.WORKERS_VARIABLE, "2")
    assert process.workers(None) == process.workers(3) == 2  # the variable overrides both
    cores(1)
    monkeypatch.delenv(process.WORKERS_VARIABLE)
    assert process.workers(None) == 1


@pytest.mark.parametrize("study", STUDIES)
def test_every_study_defaults_to_the_machine(study):
    assert studies.module(study).Config().parallel_runs is None


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "257", ""])
def test_a_bad_count_is_refused_in_one_line(text, cores, monkeypatch):
    with pytest.raises(ValueError, match="from 1 to 256") as err:
        process.parse_workers(text, "--workers")
    assert "\n" not in str(err.value)
    if text.strip():
        monkeypatch.setenv(process.WORKERS_VARIABLE, text)
        with pytest.raises(ValueError, match="MEMLIB_WORKERS"):
            process.workers(None)


@pytest.mark.parametrize("command", ["run", "notebook"])
def test_the_command_line_refuses_a_bad_count_before_any_work(command, capsys, monkeypatch,
                                                              tmp_path):
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    target = "rlp" if command == "run" else "notebooks/01_random_label_heads.py"
    assert cli.main([command, target, "--scale", "smoke", "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlib: error: --workers must be") and err.count("\n") == 1
    monkeypatch.setenv(process.WORKERS_VARIABLE, "many")
    assert cli.main([command, target, "--scale", "smoke"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlib: error: MEMLIB_WORKERS must be") and err.count("\n") == 1
    assert not (tmp_path / "cache").exists()  # nothing computed


def test_workers_hold_for_the_command_alone(cores, monkeypatch):
    with cli.workers_set("3"):
        assert os.environ[process.WORKERS_VARIABLE] == "3" and process.workers(None) == 3
    assert process.WORKERS_VARIABLE not in os.environ


def test_the_manifest_records_how_many_ran_at_once(cores, monkeypatch):
    cores(5)
    assert provenance.workers_used({"parallel_runs": None}) == 5
    assert provenance.workers_used({"parallel_runs": 2}) == 2
    monkeypatch.setenv(process.WORKERS_VARIABLE, "x")  # recorded as unknown, never raised
    assert provenance.workers_used({}).startswith("unknown (")


def test_study_1_stores_the_same_bytes_at_1_and_2_workers(tmp_path, monkeypatch):
    config = tiny(rlp.Config, SMALLEST["rlp"], seeds=(0, 1), model="smallcnn",
                  layer_models=("smallcnn",), noise_rates=(0.4,), sampling_experiment=False)
    check_parallel_runs(rlp, config, tmp_path, monkeypatch)
