"""The process-level helpers: pinned CPU dispatch, atomic writes, checkpoint locations."""

import json
import os
import subprocess
import sys

import pytest

from memlib import process
from memlib.paths import repo_root

AVX2_FLAGS = {"sse2", "avx", "avx2", "fma"}


def test_cpuinfo_parsing():
    text = "processor\t: 0\nmodel name\t: Some CPU 9000\nflags\t\t: fpu sse2 avx2 fma\n\n" \
           "processor\t: 1\nflags\t\t: fpu\n"
    assert process.cpu_flags(text) == {"fpu", "sse2", "avx2", "fma"}
    assert process.cpu_model(text) == "Some CPU 9000"
    assert process.cpu_flags("") == set()


@pytest.mark.parametrize("requested, flags, mode, reason", [
    (None, AVX2_FLAGS, "avx2", "pinned"),
    ("avx2", AVX2_FLAGS, "avx2", "pinned"),
    ("native", AVX2_FLAGS, "native", "native"),
    (" Native ", set(), "native", "native"),
    (None, {"sse2", "avx"}, "native", "lacks avx2, fma"),
    ("avx2", {"avx2"}, "native", "lacks fma"),
    ("avx512", AVX2_FLAGS, "avx2", "is neither"),
])
def test_dispatch_choice(requested, flags, mode, reason):
    chosen, why = process.dispatch_choice(requested, flags)
    assert chosen == mode and reason in why


def test_cache_key_tag_separates_pinned_from_native(monkeypatch):
    monkeypatch.setitem(process._dispatch, "mode", "avx2")
    assert process.cache_key_tag() == "|cpu=avx2"
    monkeypatch.setitem(process._dispatch, "mode", "native")
    assert process.cache_key_tag() == ""


def test_atomic_write_leaves_no_temp_files(tmp_path, monkeypatch):
    target = tmp_path / "out.bin"
    process.atomic_write_bytes(target, b"old")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(process.os, "replace", failing_replace)
    with pytest.raises(OSError):
        process.atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_written_files_are_readable_by_others(tmp_path):
    target = tmp_path / "table.csv"
    process.atomic_write_bytes(target, b"a,b\n")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_checkpoints_are_numbered_per_computation(tmp_path):
    entry = tmp_path / "exp-abc.pt"
    assert process.next_checkpoint() is None
    with process.computing(entry):
        first, second = process.next_checkpoint(), process.next_checkpoint()
    assert (first.name, second.name) == ("exp-abc.1.ckpt", "exp-abc.2.ckpt")
    assert first.parent == process.checkpoint_dir(entry) == tmp_path / "checkpoints"
    assert process.next_checkpoint() is None


def test_warn_once(recwarn):
    process.warn_once("test-topic", "first")
    process.warn_once("test-topic", "second")
    assert [str(w.message) for w in recwarn] == ["first"]


TRAINING = """
import hashlib, json, os, sys
import memlib  # pins the dispatch before torch computes
import torch
from memlib.models import MLP, SmallCNN
from memlib.train import TrainSpec, train

torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x, y = torch.rand(64, 1, 8, 8, generator=g), torch.randint(0, 4, (64,), generator=g)
digest = hashlib.sha256()
for model in (MLP(64, (32, 32), 4), SmallCNN(1, 4, channels=(4, 8, 8))):
    torch.manual_seed(0)
    model.apply(lambda m: m.reset_parameters() if hasattr(m, "reset_parameters") else None)
    train(model, (x, y), TrainSpec(epochs=3, batch_size=16))
    for p in model.parameters():
        digest.update(p.detach().numpy().tobytes())
print(json.dumps({"hash": digest.hexdigest(),
                  "capability": torch.backends.cpu.get_cpu_capability(),
                  "pins": {k: os.environ.get(k) for k in memlib.process.PINS}}))
"""


def run_training(tmp_path, **env) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in process.PINS and k != process.DISPATCH_VARIABLE}
    done = subprocess.run([sys.executable, "-c", TRAINING], env={**clean, **env}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(process.dispatch_choice(None, process.cpu_flags(process.read_cpuinfo()))[0]
                    != process.PINNED, reason="this CPU has no AVX2: nothing is pinned")
def test_training_gives_the_same_bits_whatever_the_callers_dispatch(tmp_path):
    env = {"PYTHONPATH": str(repo_root())}
    pinned = run_training(tmp_path, **env)
    overridden = run_training(tmp_path, **env, ATEN_CPU_CAPABILITY="default",
                              MKL_CBWR="AVX512", ONEDNN_MAX_CPU_ISA="AVX512_CORE")
    assert pinned == overridden
    assert pinned["capability"] == process.PINNED_CAPABILITY
    assert pinned["pins"] == process.PINS
    native = run_training(tmp_path, **env, MEMLIB_CPU_DISPATCH="native",
                          ATEN_CPU_CAPABILITY="default", MKL_CBWR="COMPATIBLE")
    assert native["capability"] == "DEFAULT"  # the opt-out leaves the caller's settings alone
    assert native["hash"] != pinned["hash"]


def report_dispatch(path) -> None:
    """Run in a prefetch worker: write what its torch computes with."""
    import torch

    seen = {k: os.environ.get(k) for k in process.PINS}
    seen["capability"] = torch.backends.cpu.get_cpu_capability()
    seen["threads"] = torch.get_num_threads()
    path.write_text(json.dumps(seen))


def test_prefetch_workers_compute_pinned(tmp_path, monkeypatch):
    from memlib import parallel

    monkeypatch.setattr(parallel, "COMPUTES_HERE", False)  # what the workers compute
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # the workers re-pin on import
    reports = [tmp_path / f"{k}.json" for k in range(2)]
    parallel.prefetch([(report_dispatch, path) for path in reports], processes=2)
    expected = {**process.PINS, "capability": process.PINNED_CAPABILITY, "threads": 1}
    if process._dispatch["mode"] != process.PINNED:
        pytest.skip("this CPU has no AVX2: nothing is pinned")
    assert [json.loads(path.read_text()) for path in reports] == [expected, expected]


def test_pinned_processes_keep_their_own_compiled_kernels():
    assert process.pinned_inductor_cache("/tmp/ind") == "/tmp/ind/memlib-avx2"
    assert process.pinned_inductor_cache("/tmp/ind/memlib-avx2") == "/tmp/ind/memlib-avx2"
    assert process.pinned_inductor_cache(None).endswith("/memlib-avx2")


def test_compiled_kernels_target_avx2_when_pinned(monkeypatch):
    monkeypatch.setitem(process._dispatch, "mode", "avx2")
    assert process.compiler_target_flags() == ["-march=x86-64-v3", "-mtune=generic"]
    monkeypatch.setitem(process._dispatch, "mode", "native")
    assert process.compiler_target_flags() == ["-march=native"]


@pytest.mark.parametrize("requested, warned", [("bogus", True), ("avx2", False)])
def test_an_unknown_dispatch_warns_in_one_line_on_import(requested, warned):
    env = {**os.environ, "PYTHONPATH": str(repo_root()), "MEMLIB_CPU_DISPATCH": requested}
    run = subprocess.run([sys.executable, "-c", "import memlib"], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    if warned:
        assert run.stderr == ("memlib: warning: MEMLIB_CPU_DISPATCH='bogus' is neither 'avx2' "
                              "nor 'native'; pinned to avx2\n")
    else:
        assert run.stderr == ""
