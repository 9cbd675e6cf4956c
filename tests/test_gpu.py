"""What a GPU run needs: CUDA's determinism settings and their record in the manifest, the
prepared GPU check (on the CPU, tiny), and on a CUDA machine a tiny run of every study and
a same-seed-same-bits check (skipped without CUDA)."""

import memlib  # noqa: F401, I001 - first: it pins the CPU dispatch before numpy and torch load
import json
import os
import subprocess
import sys
import time
import warnings

import pytest
import torch

from memlib import paths, provenance, seed

CHECK = paths.repo_root() / "benchmarks" / "gpu_check.py"
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**environment, **(env or {}),
                                            "PYTHONPATH": str(paths.repo_root())})


def test_cublas_workspace_is_set_on_import_before_cuda_initialises():
    run = python("import os; before = os.environ.get('CUBLAS_WORKSPACE_CONFIG'); "
                 "import memlib, torch, json; print(json.dumps([before, "
                 "os.environ.get('CUBLAS_WORKSPACE_CONFIG'), torch.cuda.is_initialized()]))")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [None, ":4096:8", False]
    kept = python("import memlib, os; print(os.environ['CUBLAS_WORKSPACE_CONFIG'])",
                  env={"CUBLAS_WORKSPACE_CONFIG": ":16:8"})
    assert kept.stdout.strip() == ":16:8"  # the caller's own setting stays


def test_manifest_names_the_gpu_or_none():
    record = provenance.gpu()
    assert set(record) == {"name", "cuda", "cudnn", "nondeterministic_kernels"}
    if not torch.cuda.is_available():
        assert record == {"name": "none", "cuda": "none", "cudnn": "none",
                          "nondeterministic_kernels": "none"}
    else:
        assert record["name"] == torch.cuda.get_device_name(0) and record["cuda"] != "none"


def test_nondeterministic_kernel_warnings_reach_the_manifest():
    run = python(
        "import memlib, json, warnings\n"
        "from memlib import provenance, seed\n"
        "seed.seed_everything(0)\n"
        "warnings.warn('scatter_add_cuda_kernel does not have a deterministic implementation, "
        "but you set torch.use_deterministic_algorithms(True, warn_only=True).')\n"
        "warnings.warn('an unrelated warning')\n"
        "print(json.dumps(provenance.gpu()['nondeterministic_kernels']))")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == ["scatter_add_cuda_kernel"]
    assert "scatter_add_cuda_kernel" in run.stderr  # still shown as before


def test_warning_names():
    assert seed.nondeterministic_warning("Memory efficient attention backward is "
                                         "nondeterministic. Set ...") == (
        "Memory efficient attention backward is nondeterministic")
    assert seed.nondeterministic_warning("a deterministic remark") is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only case")
def test_seeding_leaves_the_cpu_attention_choice_alone():
    with warnings.catch_warnings():
        seed.seed_everything(0)
    assert torch.backends.cuda.flash_sdp_enabled()  # the CPU's choice reads this flag too
    assert torch.backends.cudnn.deterministic


def check(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ,
                                                "PYTHONPATH": str(paths.repo_root())})


def test_gpu_check_runs_tiny_on_the_cpu(tmp_path):
    start = time.perf_counter()
    run = check("--device", "cpu", "--studies", "modarith,fisher",
                "--work", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in run.stdout.splitlines()
            if line.split() and line.split()[0] in ("modarith", "fisher")}
    assert set(rows) == {"modarith", "fisher"}
    assert all(float(row[1]) > 0 for row in rows.values())  # seconds per epoch
    assert (tmp_path / "data" / "cifar-10-batches-py" / "data_batch_5").is_file()
    print(f"gpu_check --device cpu: {time.perf_counter() - start:.0f} s")


def test_gpu_check_refuses_bad_input_in_one_line():
    run = check("--studies", "nope", "--device", "cpu")
    assert run.returncode == 2
    assert "unknown study 'nope'" in run.stderr.strip().splitlines()[-1]
    assert "Traceback" not in run.stderr


# ------------------------------------------------------------------------------ on CUDA


@needs_cuda
def test_tiny_cuda_run_of_every_study(tmp_path):
    run = check("--device", "cuda", "--tiny", "--work", str(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    for study in ("modarith", "rlp", "rlp_imagenet", "fisher", "probes", "lens"):
        assert any(line.startswith(study + " ") for line in run.stdout.splitlines()), study


def _train_twice_on_cuda(model_name: str, shape: tuple[int, ...]) -> list[dict]:
    from memlib import models
    from memlib.train import TrainSpec, train

    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(256, *shape, generator=g), torch.randint(0, 10, (256,), generator=g)
    states = []
    for _ in range(2):
        seed.seed_everything(0)
        model = models.build(model_name, 10, shape)
        spec = TrainSpec(epochs=2, batch_size=64, optimizer="sgd", lr=0.05, device="cuda",
                         precision="bf16", augment="crop_flip", seed=0)
        train(model, (x, y), spec)
        states.append({k: v.detach().cpu().clone() for k, v in model.state_dict().items()})
    return states


@needs_cuda
@pytest.mark.parametrize("model_name, shape", [("smallcnn", (3, 32, 32)),
                                               ("vit_tiny", (3, 32, 32))])
def test_same_seed_same_bits_on_cuda(model_name, shape):
    first, second = _train_twice_on_cuda(model_name, shape)
    different = [k for k in first if not torch.equal(first[k], second[k])]
    warned = seed.nondeterministic_kernels()
    assert not different or warned, f"{different[:3]} differ and no kernel warned"
    assert not different, f"{different[:3]} differ; kernels warned: {warned}"
