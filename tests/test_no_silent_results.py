"""No result is served for the wrong configuration, and nothing is counted as what it was not:
a checkpoint or a cache entry that is not this run's own (copied from another run, of an older
layout that does not name its key, or of another layout) is recomputed with one warning, and a
run's closing line says how many results were computed and how many loaded."""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import pytest
import torch

from memlib import cache, process
from memlib.models import MLP
from memlib.seed import seed_everything
from memlib.train import TrainSpec, train


class Stop(Exception):
    pass


def fit(seed: int, stop_after: int | None = None) -> list[float]:
    """A tiny training run (its losses), stopped by an exception after `stop_after` epochs."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g)
    seed_everything(seed)
    model = MLP(8, (16,), 3)

    def interrupt(state):
        if stop_after is not None and state.epoch >= stop_after:
            raise Stop

    history = train(model, (x, y), TrainSpec(epochs=4, batch_size=16, seed=seed),
                    callbacks=[interrupt])
    return history["train_loss"].tolist()[1:]  # epoch 0 has no loss (nan)


def test_another_runs_checkpoint_is_refused_with_one_warning(monkeypatch, recwarn):
    monkeypatch.setenv("MEMLIB_CHECKPOINT_MINUTES", "1e-9")  # a checkpoint every epoch
    clean = cache.cached("fit", {"seed": 2}, lambda: fit(2))
    cache.entry_path("fit", {"seed": 2}).unlink()
    with pytest.raises(Stop):  # run 1 stops after two epochs, leaving its checkpoint
        cache.cached("fit", {"seed": 1}, lambda: fit(1, stop_after=2))
    (theirs,) = process.checkpoints_of(cache.entry_path("fit", {"seed": 1}))
    mine = theirs.parent / theirs.name.replace(
        cache.entry_path("fit", {"seed": 1}).stem, cache.entry_path("fit", {"seed": 2}).stem)
    shutil.copy(theirs, mine)  # run 1's checkpoint where run 2 looks for its own
    assert not recwarn.list
    assert cache.cached("fit", {"seed": 2}, lambda: fit(2)) == clean  # run 2's own bits
    (message,) = [str(w.message) for w in recwarn]
    assert "\n" not in message and f"it holds the result stored as {theirs.name}" in message
    assert "starts again from the beginning" in message


def entry_file(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue() + hashlib.sha256(buffer.getvalue()).digest()


@pytest.mark.parametrize("payload, why", [
    # the layout before entries named their key, holding another configuration's result
    ({"__timed_entry__": {"value": [9.0], "seconds": 1.0}}, "older layout that does not name"),
    ([9.0], "older layout that does not name"),  # the layout before entries knew their time
    ({"__timed_entry__": {"format": 7, "entry": "ENTRY", "value": [9.0], "seconds": 1.0}},
     "layout 7, which this version does not read"),
    ({"__timed_entry__": {"format": 2, "entry": "ENTRY", "values": [9.0]}}, "layout is damaged"),
    ({"__timed_entry__": "ENTRY"}, "older layout that does not name"),
])
def test_an_entry_not_of_this_runs_key_and_layout_is_recomputed(payload, why, recwarn):
    path = cache.entry_path("exp", {"n": 1})
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = payload.get("__timed_entry__") if isinstance(payload, dict) else None
    if isinstance(stored, dict) and stored.get("entry") == "ENTRY":
        stored["entry"] = path.name  # its own name: only the layout is wrong
    path.write_bytes(entry_file(payload))
    assert cache.cached("exp", {"n": 1}, lambda: [1.0]) == [1.0]
    (message,) = [str(w.message) for w in recwarn]
    assert "\n" not in message and why in message, message
    assert cache.load(path) == [1.0]  # stored again, in this version's layout
    with pytest.raises(ValueError, match=why):
        cache._unwrap(path.name, payload)


def test_entries_of_the_layout_before_the_version_field_still_load():
    path = cache.entry_path("exp", {"n": 1})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(entry_file({"__timed_entry__": {"value": [3.0], "seconds": 2.0,
                                                     "entry": path.name}}))
    assert cache.cached("exp", {"n": 1}, lambda: [1.0]) == [3.0]
    assert cache.load_timed(path) == ([3.0], 2.0)


def test_results_computed_by_workers_are_counted_as_computed_not_loaded():
    from tiny import tiny

    from memlib import cli
    from memlib.parallel import prefetch
    from memlib.studies import rlp

    config = tiny(rlp.Config, dict(dataset="digits", train_samples=100, test_samples=50,
                                   widths=(8, 8), epochs=1, layer_models=("mlp",)))
    specs = [rlp.spec(config, seed=k) for k in (0, 1)]
    cache.activity.clear()
    prefetch([(rlp.cached_run, s) for s in specs], processes=2)  # a cold cache, two workers
    for s in specs:
        rlp.cached_run(s)  # what the study then does: read the workers' results
    assert cache.activity["computed"] == 2 and "loaded" not in cache.activity, cache.activity
    assert "results (2 computed) are in" in cli._where_results_are(cache.activity)
    for s in specs:
        rlp.cached_run(s)  # read again: loaded now
    assert cache.activity["loaded"] == 2


def test_a_relative_memlib_folder_is_taken_from_the_repository_root(monkeypatch, tmp_path):
    from memlib import paths

    monkeypatch.chdir(tmp_path)  # as a kernel working in notebooks/ would be elsewhere
    monkeypatch.setenv("MEMLIB_CACHE", "results/my-cache")
    monkeypatch.setenv("MEMLIB_BUILD", "~/memlib-build")
    assert paths.cache_dir() == paths.repo_root() / "results" / "my-cache"
    assert paths.build_root() == Path("~/memlib-build").expanduser().resolve()
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figs"))
    assert paths.figures_root() == tmp_path / "figs"


def test_the_claims_report_at_a_scale_expects_the_rows_of_that_scales_presets():
    from memlib import studies

    small = {c.id for c in studies.study_claims("lens")}  # the registered rows
    assert studies.claims_not_at("lens", "small") == set()
    left_out = studies.claims_not_at("lens", "smoke")  # the smoke preset runs Fashion-MNIST
    mnist = {c for c in small if c.endswith("_mnist") and not c.endswith("_fashion_mnist")}
    assert mnist and left_out == mnist
    assert all(studies.claims_not_at(s, "smoke") == set() for s in ("rlp", "fisher"))


@pytest.mark.parametrize("scale", ["smoke", "small"])
@pytest.mark.parametrize("study", ["rlp", "modarith", "fisher", "probes", "lens"])
def test_every_preset_passes_the_checks_before_a_run(study, scale):
    from memlib import studies

    studies.check_before_a_run(study, studies.preset_config(study, scale))
