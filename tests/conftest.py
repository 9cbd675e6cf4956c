import pytest
import torch


@pytest.fixture(autouse=True)
def isolated_outputs(tmp_path, monkeypatch):
    """Every test writes figures and cache entries into its own temporary directories."""
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("MEMLIB_PROGRESS", "0")
    torch.use_deterministic_algorithms(False)
    yield
