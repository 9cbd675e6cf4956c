import memlib  # noqa: F401, I001 - first: it pins the CPU dispatch before numpy and torch load
import pytest
import torch


@pytest.fixture(autouse=True)
def isolated_outputs(tmp_path, monkeypatch):
    """Every test writes figures, cache entries and executed notebooks into its own temporary
    directories."""
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("MEMLIB_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv("MEMLIB_PROGRESS", "0")
    torch.use_deterministic_algorithms(False)
    yield


def pytest_configure(config):
    # tests import small helper scripts that live beside them (tests/ddp_worker.py)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
