"""A notebook's parameters cell in a live kernel, as JupyterLab runs it: the scale it names
runs that scale's preset or stops with one line, a deleted setting stops counting, the
outputs stay out of the committed figures/, and the import cell prints nothing."""

import json
import os
import re
from pathlib import Path

import pytest
from book_render import source_cells

from memlib.config import to_dict
from memlib.pipeline import RUN_BY_PIPELINE
from memlib.studies import preset_config

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "02_modular_arithmetic_noise.py"


def parameters_cell(notebook: Path) -> str:
    return next(c["source"] for c in source_cells(notebook)
                if c["cell_type"] == "code" and re.search(r'^scale = "small"$', c["source"],
                                                          re.M))


def import_lines(notebook: Path) -> str:
    """The import statements that open the notebook's first cell after its parameters."""
    cells = [c["source"] for c in source_cells(notebook) if c["cell_type"] == "code"]
    first = cells[cells.index(parameters_cell(notebook)) + 1]
    block = first.split("\n\n" + "STUDY =")[0]
    return "\n".join(line for line in block.splitlines()
                     if not line.startswith(("STUDY", "config", "results")))


class Kernel:
    """A python3 kernel as JupyterLab starts one: not under `memlib notebook`."""

    def __init__(self, env: dict):
        from jupyter_client.manager import start_new_kernel

        self.manager, self.client = start_new_kernel(kernel_name="python3", env=env,
                                                     cwd=str(NOTEBOOK.parent))

    def run(self, code: str) -> tuple[str, str, list[str]]:
        """stdout, stderr and the error lines the cell shows."""
        msg_id = self.client.execute(code)
        out, err, error = [], [], []
        while True:
            msg = self.client.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                (out if content["name"] == "stdout" else err).append(content["text"])
            elif kind == "error":
                error = content["traceback"]
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out), "".join(err), error

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MEMLIB_FIGURES", RUN_BY_PIPELINE) and not k.startswith("PYTEST")}
    env.update(PYTHONPATH=str(ROOT), MEMLIB_BUILD=str(tmp_path / "build"))
    # none of the pins yet, as a kernel JupyterLab starts from a plain shell
    for key in [k for k in env if k in ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES",
                                        "OPENBLAS_CORETYPE", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")]:
        del env[key]
    found = Kernel(env)
    yield found
    found.close()


def test_the_parameters_cell_runs_its_scale_and_forgets_a_deleted_line(kernel, tmp_path):
    cell = parameters_cell(NOTEBOOK)
    out, err, error = kernel.run(import_lines(NOTEBOOK))
    assert (out, err, error) == ("", "", [])  # no warning on the import cell
    smoke = cell.replace('scale = "small"', 'scale = "smoke"')
    show = ("config = notebook_config('modarith', globals())\n"
            "import json, os; from memlib.config import to_dict\n"
            "print(json.dumps(to_dict(config))); print(os.environ['MEMLIB_FIGURES'])")
    out, _, error = kernel.run(smoke + "\nseeds = [7]\n" + show)
    assert not error
    preset = to_dict(preset_config("modarith", "smoke"))
    got, folder = out.splitlines()[-2:]
    assert json.loads(got) == json.loads(json.dumps({**preset, "seeds": [7]}))
    assert out.splitlines()[0].startswith("memlib: the smoke preset with seeds=[7]")
    assert Path(folder) == tmp_path / "build" / "scratch"  # not the committed figures/
    out, _, _ = kernel.run(smoke + "\n" + show)  # the seeds line deleted
    assert json.loads(out.splitlines()[-2])["seeds"] == list(preset["seeds"])


def test_a_scale_or_setting_that_cannot_run_stops_with_one_line(kernel):
    kernel.run(import_lines(NOTEBOOK))
    for cell, says in (('scale = "tiny"', "is no scale"), ('scale = "smoke"\nlr = "fast"', "lr")):
        _, _, error = kernel.run(cell + "\nconfig = notebook_config('modarith', globals())")
        assert len(error) == 1 and error[0].startswith("memlib: ") and says in error[0], error


def test_under_the_pipeline_every_injected_setting_counts_and_stays(monkeypatch):
    from memlib.pipeline import notebook_config

    monkeypatch.setenv(RUN_BY_PIPELINE, str(ROOT))  # the checkout whose memlib runs
    namespace = {"scale": "smoke", "seeds": [3]}
    assert list(notebook_config("modarith", namespace).seeds) == [3]
    assert namespace["seeds"] == [3]  # papermill's injected cell is not a line to forget


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("0*.py")),
                         ids=lambda p: p.stem)
def test_every_notebook_imports_memlib_first_and_reads_its_parameters_through_it(notebook):
    lines = import_lines(notebook).splitlines()
    first = next(line for line in lines if line.startswith(("import", "from")))
    assert first.startswith("from memlib"), first
    assert "notebook_config(" in notebook.read_text()


def test_a_name_that_is_no_setting_stops_with_the_nearest_setting(kernel):
    kernel.run(import_lines(NOTEBOOK))
    kernel.run('scale = "smoke"\nseedz = 3')  # the parameters cell, a cell of its own
    _, _, error = kernel.run("config = notebook_config('modarith', globals())")
    assert error == ["memlib: seedz in the parameters cell is no setting; did you mean seeds?"]
    kernel.run('scale = "smoke"\nseeds = [3]')  # corrected: the old name no longer counts
    out, _, error = kernel.run("config = notebook_config('modarith', globals())")
    assert not error and "seeds=[3]" in out


def test_the_parameters_cell_names_are_read_from_its_source():
    from memlib.pipeline import assigned_names, parameters_cell, unknown_setting

    cell = 'scale = "smoke"\nseedz: int = 3\nlr, wd = 1, 2\nconfig = notebook_config("x", g)\nz = 1'
    assert assigned_names(cell) == ["scale", "seedz", "lr", "wd"]
    assert parameters_cell({"In": ["", cell, "print(1)"]}) == cell
    assert parameters_cell({}) == ""
    assert unknown_setting(["scale", "seeds", "_private"], ["seeds"]) is None
    assert "the settings are seeds, lr" in unknown_setting(["xyzzy"], ["seeds", "lr"])


def test_a_cold_cache_says_what_computing_costs_and_how_to_be_fast(tmp_path, monkeypatch):
    from memlib.pipeline import cold_start_note
    from memlib.prose import cold_seconds, run_time

    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    manifest = json.loads((ROOT / "figures" / NOTEBOOK.stem / "manifest.json").read_text())
    note = cold_start_note("modarith", "small")
    assert f"computing it takes {run_time(cold_seconds(manifest))}" in note
    assert "class kit" in note and 'scale = "smoke"' in note and "\n" not in note
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "modarith-main-0123.pt").write_bytes(b"entry")
    assert cold_start_note("modarith", "small") is None  # some of it is cached


def test_a_notebook_shows_a_table_as_markdown_missing_values_as_a_dash(kernel):
    kernel.run(import_lines(NOTEBOOK))
    out, _, error = kernel.run(
        'scale = "smoke"\nconfig = notebook_config("modarith", globals())\n'
        "import pandas as pd\n"
        "frame = pd.DataFrame({'a': [1.5, float('nan')], 'b': [None, 'x'],\n"
        "                      'c': ['None', 'nan (n=1)'], 'd': [None, None]})\n"
        "shown, _ = get_ipython().display_formatter.format(frame)\n"
        "print(shown['text/markdown'].count('—'), 'NaN' in str(shown), 'None' in str(shown),\n"
        "      'nan' in str(shown), 'not measured' in shown['text/markdown'],\n"
        "      'text/html' in shown, shown['text/markdown'].split()[:4])")
    assert not error
    assert out.splitlines()[-1] == "5 False False False True False ['|', 'a', '|', 'b']"
