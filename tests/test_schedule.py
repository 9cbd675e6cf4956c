"""One schedule for the whole reproduction (memlib.schedule): the dearest study first, two at
a time, the lens only after study 1, no study started after a failure; `memlib run all`'s bad
inputs in one line."""

import json
import threading
import time

import pytest

from memlib import STUDIES, cli, schedule


class Launches:
    """A fake `memlib run STUDY`: records when each study ran and how many ran at once."""

    def __init__(self, seconds: dict[str, float], codes: dict[str, int] | None = None):
        self.seconds, self.codes = seconds, codes or {}
        self.started, self.ended, self.most, self.now = [], [], 0, 0
        self.lock = threading.Lock()

    def __call__(self, study: str) -> int:
        with self.lock:
            self.started.append(study)
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds.get(study, 0.01))
        with self.lock:
            self.now -= 1
            self.ended.append(study)
        return self.codes.get(study, 0)


def test_the_dearest_study_starts_first_and_ties_keep_their_order():
    costs = {"rlp": 10.0, "modarith": 30.0, "fisher": 0.0, "probes": 30.0, "lens": 5.0}
    assert schedule.order(STUDIES, costs) == ["modarith", "probes", "rlp", "lens", "fisher"]


def test_two_studies_run_at_once_and_the_lens_only_after_study_1():
    launches = Launches({"rlp": 0.3, "lens": 0.01, "modarith": 0.05, "fisher": 0.05})
    codes = schedule.run_studies(["rlp", "lens", "modarith", "fisher", "probes"], launches)
    assert codes == dict.fromkeys(STUDIES, 0) and launches.most == 2
    assert launches.started[:2] == ["rlp", "modarith"]  # the lens waits, the next one runs
    assert launches.started.index("lens") > launches.ended.index("rlp")


def test_one_at_a_time_is_the_given_order():
    launches = Launches({})
    schedule.run_studies(list(STUDIES), launches, at_once=1)
    assert launches.started == launches.ended == list(STUDIES) and launches.most == 1


def test_after_a_failure_no_study_starts_and_a_reader_of_the_failed_one_never_runs():
    launches = Launches({"modarith": 0.2}, codes={"rlp": 3})
    codes = schedule.run_studies(["rlp", "modarith", "lens", "fisher"], launches)
    assert codes == {"rlp": 3, "modarith": 0}  # modarith was running: it ends
    assert "lens" not in launches.started and "fisher" not in launches.started


def test_a_launch_that_raises_counts_as_failed(capsys):
    def launch(study):
        raise OSError("no such interpreter")

    assert schedule.run_studies(["fisher"], launch) == {"fisher": 1}
    assert "no such interpreter" in capsys.readouterr().err


def test_costs_come_from_the_published_manifests(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path))
    stem = STUDIES["fisher"]
    (tmp_path / "smoke" / stem).mkdir(parents=True)
    (tmp_path / "smoke" / stem / "manifest.json").write_text(json.dumps({"wall_seconds": 7}))
    assert schedule.cost("fisher", "smoke") == 7.0
    published = json.loads((schedule.paths.repo_root() / "figures" / STUDIES["rlp"]
                            / "manifest.json").read_text())
    assert schedule.cost("rlp", "smoke") == published["compute_seconds"]  # the checkout's


@pytest.mark.parametrize("args, fragment", [
    (["--set", "seeds=[1]"], "takes no --set or --params"),
    (["--scale", "full"], "under torchrun"),
])
def test_run_all_refuses_what_it_cannot_do_in_one_line(args, fragment, capsys):
    assert cli.main(["run", "all", *args]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
