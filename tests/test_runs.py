"""Runs are keyed by what computes them: edits to comments, docstrings, claims or scheduling
never re-key an entry; an edit to the training loop re-keys every run that trains; a damaged
entry counts as missing; keys are the same in every process."""

import ast
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import tokenize
import warnings
from pathlib import Path

import pytest
import torch

import memlib
from memlib import cache, runs

PACKAGE = Path(memlib.__file__).parent
TRAINS = ("rlp_run", "rlp_frozen", "lens_run", "fisher-run", "probes-train", "modarith-main",
          "modarith-order", "modarith-sweep", "modarith-images", "modarith-variant")

# every computation's code fingerprint, and the full keys of some specs, as one JSON line
KEYS = """
import json
from memlib import STUDIES, runs, studies
from memlib.studies import fisher, lens, rlp
for name in STUDIES:
    studies.module(name)
rlp_config = rlp.Config()
keys = {name: c.code for name, c in sorted(runs.REGISTRY.items())}
keys["rlp_run spec"] = rlp.cached_run.key(rlp.spec(rlp_config))
fisher_config = fisher.Config()
fisher_run = fisher.training_runs(fisher_config)[0]
keys["fisher-run spec"] = fisher.cached_run.key((fisher_config, *fisher_run))
keys["lens_run spec"] = lens.cached_lens.key(lens.lens_runs(lens.Config(setting="smoke"))[0])
print(json.dumps(keys))
"""


def keys_of(package: Path) -> dict[str, str]:
    """The keys as a fresh process that imports memlib from `package`'s parent computes them."""
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    out = subprocess.run([sys.executable, "-c", KEYS], env=env, capture_output=True, text=True,
                         check=True, cwd=package.parent)
    return json.loads(out.stdout.splitlines()[-1])


def copy_of_memlib(tmp_path: Path, edit) -> Path:
    """A copy of the memlib package, each module's source (the study packages' parts too)
    passed through `edit(name, text)`, `name` dotted below memlib ("train",
    "studies.rlp.claims"); the parameter files and data it reads are linked from the real
    tree."""
    root = tmp_path / "tree"
    shutil.copytree(PACKAGE, root / "memlib", ignore=shutil.ignore_patterns("__pycache__"))
    for entry in PACKAGE.parent.iterdir():
        if entry.name in ("params", "data"):
            (root / entry.name).symlink_to(entry)
    for path in (root / "memlib").rglob("*.py"):
        name = ".".join(path.relative_to(root / "memlib").with_suffix("").parts)
        path.write_text(edit(name, path.read_text()))
    return root / "memlib"


def reworded(_: str, source: str) -> str:
    """`source` with every comment and docstring rewritten, and a comment and blank lines
    added: the code is the same, the text is not."""
    lines = source.splitlines(keepends=True)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + "# reworded: " + line[col + 1:]
    source = "".join(lines)
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                spans.append(first.value)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    for node in sorted(spans, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        start = offsets[node.lineno - 1] + node.col_offset
        end = offsets[node.end_lineno - 1] + node.end_col_offset
        data = data[:start] + b'"""Reworded,\n\n    and rewrapped."""' + data[end:]
    return "# an added comment\n\n\n" + data.decode()


def with_statement_in(module: str, function: str):
    """An edit that adds a statement to the body of `module`.`function`."""
    def edit(name: str, source: str) -> str:
        if name != module:
            return source
        node = next(n for n in ast.parse(source).body
                    if isinstance(n, ast.FunctionDef) and n.name == function)
        body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
        lines = source.splitlines(keepends=True)
        lines.insert(body[0].lineno - 1, " " * body[0].col_offset + "_ = None\n")
        return "".join(lines)
    return edit


def first_function(source: str) -> str:
    """The name of the first function that `source` defines at module level."""
    return next(n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))


@pytest.fixture(scope="module")
def original_keys():
    return keys_of(PACKAGE)


def test_keys_are_the_same_in_another_process(original_keys):
    from memlib import studies
    from memlib.studies import fisher, lens, rlp

    for name in memlib.STUDIES:
        studies.module(name)
    studied = {name: c.code for name, c in runs.REGISTRY.items() if not name.startswith("test-")}
    assert studied == {name: original_keys[name] for name in set(TRAINS) | set(studied)}
    assert rlp.cached_run.key(rlp.spec(rlp.Config())) == original_keys["rlp_run spec"]
    config = fisher.Config()
    assert fisher.cached_run.key((config, *fisher.training_runs(config)[0])) == (
        original_keys["fisher-run spec"])
    assert lens.cached_lens.key(lens.lens_runs(lens.Config(setting="smoke"))[0]) == (
        original_keys["lens_run spec"])


def test_rewording_comments_and_docstrings_everywhere_re_keys_nothing(tmp_path, original_keys):
    edited = copy_of_memlib(tmp_path, reworded)
    assert (edited / "train.py").read_text() != (PACKAGE / "train.py").read_text()
    assert keys_of(edited) == original_keys


def test_a_line_of_the_training_loop_re_keys_every_run_that_trains(tmp_path, original_keys):
    edited = keys_of(copy_of_memlib(tmp_path, with_statement_in("train", "train")))
    for name in TRAINS:
        assert edited[name] != original_keys[name], name
    for name in ("rlp_run spec", "fisher-run spec", "lens_run spec"):
        assert edited[name] != original_keys[name], name
    assert edited["fisher-math-checks"] == original_keys["fisher-math-checks"]  # trains nothing


def test_editing_a_claim_re_keys_no_run(tmp_path, original_keys):
    claim = first_function((PACKAGE / "studies" / "rlp" / "claims.py").read_text())
    edited = copy_of_memlib(tmp_path, with_statement_in("studies.rlp.claims", claim))
    assert "_ = None" in (edited / "studies" / "rlp" / "claims.py").read_text()
    assert keys_of(edited) == original_keys


def test_editing_how_entries_and_checkpoints_are_stored_re_keys_no_run(tmp_path, original_keys):
    # training writes its checkpoints through the cache: the cache is still no part of a key
    edited = copy_of_memlib(tmp_path, with_statement_in("cache", "save"))
    assert "_ = None" in (edited / "cache.py").read_text()
    assert keys_of(edited) == original_keys


@runs.computation("test-double", 1)
def double(n: int) -> torch.Tensor:
    return 2 * torch.arange(float(n))


def test_a_damaged_entry_counts_as_missing():
    assert not double.has(3) and runs.missing([(double, 3), (double, 3)]) == [(double, 3)]
    assert torch.equal(double(3), torch.tensor([0.0, 2.0, 4.0]))
    assert double.has(3) and runs.missing([(double, 3), (double, 4)]) == [(double, 4)]
    path = double.path(3)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert path.exists() and not double.has(3)
    assert runs.missing([(double, 3)]) == [(double, 3)]
    with pytest.raises(ValueError, match="corrupted"):
        double.load(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        double(3)  # recomputed
    assert double.has(3)


def test_a_key_holds_the_name_version_spec_and_code():
    assert double.key(3) != double.key(4)
    keyed = double.keyed(3)
    assert {k: keyed[k] for k in ("computation", "version", "code", "spec")} == {
        "computation": "test-double", "version": 1, "code": double.code, "spec": 3}
    assert keyed["device"] == ["cpu"] and set(keyed["libraries"]) == {"torch", "numpy"}
    assert cache.key({**keyed, "version": 2}) != double.key(3)
    assert cache.key({**keyed, "code": "0" * 16}) != double.key(3)


def test_a_computation_is_pickled_by_name():
    import pickle

    from memlib.studies import rlp

    assert pickle.loads(pickle.dumps(rlp.cached_run)) is rlp.cached_run


def test_every_computation_is_what_its_module_calls_it_by():
    """A registered computation that a later assignment in its module shadows would never be
    called: the study would read the other value."""
    from memlib import studies

    for study in memlib.STUDIES:
        studies.module(study)
    for name, c in runs.REGISTRY.items():
        assert any(value is c for value in vars(sys.modules[c.fn.__module__]).values()), name


def both(n: int) -> torch.Tensor:
    """A study function that makes two entries."""
    return torch.cat([double(n), double(n + 1)])


def test_an_entry_kept_in_memory_on_a_full_disk_is_not_missing(monkeypatch):
    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(cache, "atomic_write_bytes", full_disk)
    with pytest.warns(RuntimeWarning, match="kept in memory for this run"):
        double(5)
    assert not double.path(5).exists()
    assert double.has(5) and runs.missing([(double, 5), (double, 6)]) == [(double, 6)]


def test_a_study_function_is_missing_until_every_entry_it_makes_is_there():
    assert runs.missing([(both, 5)]) == [(both, 5)]
    double(5)
    assert runs.missing([(both, 5)]) == [(both, 5)]  # tried, not computed
    assert not double.has(6)
    double(6)
    assert runs.missing([(both, 5), (double, 6)]) == []
    runs.compute_missing([(double, 7)], processes=1)  # one process: nothing in workers
    assert not double.has(7)


SYNTHETIC = ("modarith-main", "modarith-order", "modarith-sweep", "modarith-variant",
             "modarith-analysis")  # study 2's runs on its synthetic task: no dataset file read


def replaced(module: str, old: str, new: str):
    """An edit that replaces the first `old` in `module` by `new`."""
    def edit(name: str, source: str) -> str:
        if name != module:
            return source
        assert old in source, old
        return source.replace(old, new, 1)
    return edit


def test_a_library_function_in_a_table_re_keys_the_runs_that_use_it(tmp_path, original_keys):
    edited = keys_of(copy_of_memlib(tmp_path, replaced(
        "studies.modarith.method", '"quadratic": torch.square,', '"quadratic": torch.abs,')))
    for name in SYNTHETIC:
        assert edited[name] != original_keys[name], name
    assert edited["rlp_run"] == original_keys["rlp_run"]  # reaches no activation table


def test_an_error_message_in_data_re_keys_no_synthetic_run(tmp_path, original_keys):
    edited = keys_of(copy_of_memlib(tmp_path, replaced(
        "data", 'f"{path} cannot be read ({what})"', 'f"{path} is unreadable ({what})"')))
    for name in SYNTHETIC:
        assert edited[name] == original_keys[name], name
    assert edited["rlp_run"] != original_keys["rlp_run"]  # it reads dataset files


@runs.computation("test-where", 1)
def where(spec: dict) -> torch.Tensor:
    return torch.arange(float(spec["n"]))


def test_a_gpu_entry_is_never_served_to_a_cpu_run(monkeypatch):
    gpu = "cuda NVIDIA H100 80GB HBM3 sm_90 cuda 12.4 cudnn 90100"
    monkeypatch.setattr(runs, "describe_device", lambda name: gpu if name == "cuda" else name)
    planted = where.path({"n": 3, "device": "cuda"})
    cache.save(planted, torch.full((3,), 99.0))  # what the GPU computed, stored under its key
    assert where.path({"n": 3, "device": "cpu"}) != planted
    assert torch.equal(where({"n": 3, "device": "cpu"}), torch.arange(3.0))  # recomputed
    assert torch.equal(where({"n": 3, "device": "cuda"}), torch.full((3,), 99.0))  # the GPU's


def test_an_unresolved_device_is_never_keyed():
    with pytest.raises(ValueError, match="resolved"):
        where.key({"n": 3, "device": "auto"})


def test_another_torch_version_recomputes(monkeypatch):
    before = where.path({"n": 2})
    assert torch.equal(where({"n": 2}), torch.arange(2.0))
    assert torch.__version__.startswith(where.keyed({"n": 2})["libraries"]["torch"])
    real = runs.library_version
    monkeypatch.setattr(runs, "library_version",
                        lambda name: "99.0" if name == "torch" else real(name))
    assert where.path({"n": 2}) != before
    counts = cache.activity.copy()
    where({"n": 2})
    assert cache.activity["computed"] == counts["computed"] + 1  # not loaded


def test_a_computation_keys_the_libraries_its_code_reaches():
    from memlib import studies
    from memlib.studies import modarith, rlp

    studies.module("rlp")
    assert set(where.keyed({"n": 1})["libraries"]) == {"torch", "numpy"}
    assert "timm" in rlp.cached_run.keyed(rlp.spec(rlp.Config()))["libraries"]  # ViTs
    assert "timm" not in modarith.MAIN.keyed({})["libraries"]


def test_the_fisher_kernel_backend_is_in_the_key(monkeypatch):
    from memlib.studies import fisher

    config = fisher.Config()
    run = (config, *fisher.training_runs(config)[0])
    measure = (run, "peak")  # exact LOO solves the secular equation; training does not
    fisher._kernel.cache_clear()
    try:
        with_c, training = fisher.cached_loo_exact.key(measure), fisher.cached_run.key(run)
        monkeypatch.setenv("MEMLIB_NO_CC", "1")
        fisher._kernel.cache_clear()
        assert fisher.cached_loo_exact.spec(measure)["fisher_kernel"] == "torch"
        assert fisher.cached_loo_exact.key(measure) != with_c or shutil.which("cc") is None
        assert fisher.cached_run.key(run) == training
    finally:
        fisher._kernel.cache_clear()
