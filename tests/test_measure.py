"""`python -m memlib measure`: any model by name through the lens's measures, its bad-input
lines, its report page read in headless Chromium, and its numbers against the lens's own on
study 1's MLP."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from memlib import cli, data, measure, models
from memlib.measure import report
from memlib.studies import lens

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
from test_data import write_cifar  # noqa: E402 - the real CIFAR pickle format, tiny

TABLES = ("runs", "layers", "curves", "examples", "agreement", "auroc")


@pytest.fixture(autouse=True)
def fresh_data():
    data.clear_cache()
    yield
    data.clear_cache()


@pytest.fixture
def tiny_cifar(tmp_path, monkeypatch):
    """CIFAR-10 as its pickles: 200 training and 60 test images of random pixels."""
    monkeypatch.setenv("MEMLIB_DATA", str(tmp_path / "data"))
    write_cifar(tmp_path / "data" / "cifar10", "cifar10", n_train=200, n_test=60)


def one_line_error(capsys, argv: list[str]) -> str:
    assert cli.main(["measure", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --- models by name ------------------------------------------------------------------------


def test_timm_vit_takes_grey_images_resized_and_keeps_its_stage_names():
    model = models.build_external("timm:vit_tiny_patch16_224", 10, (1, 28, 28))
    assert model.probe_layers == tuple(f"blocks.{i}" for i in range(12))
    logits, feats = models.features(model.eval(), torch.rand(2, 1, 28, 28), ["head_drop"])
    assert logits.shape == (2, 10) and feats["head_drop"].shape == (2, 192)
    # the input is resized to the 224 x 224 the patch grid reads: 14 x 14 patches + a token
    _, blocks = models.features(model, torch.rand(2, 1, 28, 28), ["blocks.0"])
    assert blocks["blocks.0"].shape[1] == 14 * 14 + 1


def test_torchvision_model_taps_its_classifier_input():
    model = models.build_external("resnet50", 10, (3, 32, 32)).eval()
    assert model.probe_layers == ("conv1", "layer1", "layer2", "layer3", "layer4")
    x = torch.rand(2, 3, 32, 32)
    _, feats = models.features(model, x, ["head_drop", "avgpool"])
    assert torch.equal(feats["head_drop"], feats["avgpool"].flatten(1))
    assert torch.allclose(model.fc(feats["head_drop"]), model(x))


def test_natural_layers_descend_into_the_one_child_holding_the_weights():
    assert models.build_external("vgg11", 10, (3, 32, 32)).probe_layers[:2] == (
        "features.0", "features.3")


def test_unknown_names_suggest_the_nearest():
    assert models.unknown_any("timm:vit_tiny_patch16_224") is None
    assert models.unknown_any("vgg11") is None and models.unknown_any("mlp") is None
    assert "resnet18" in models.unknown_any("resnt18")


def test_spaced_layers_keep_the_first_and_the_last():
    names = tuple(f"b{i}" for i in range(12))
    assert measure._spaced(names, 4) == ("b0", "b4", "b7", "b11")
    assert measure._spaced(names[:3], 4) == names[:3]


def test_interval_is_students_t_over_seeds():
    mean, low, high = report.interval([1.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(12.7062 * 1.0, rel=1e-4)
    assert report.interval([5.0])[0] == 5.0 and report.interval([5.0])[1] != 5.0


# --- bad input: one line, exit 2 -------------------------------------------------------------


def test_unknown_model_names_the_nearest(capsys):
    err = one_line_error(capsys, ["--model", "resnt18", "--data", "fashion_mnist"])
    assert "unknown model 'resnt18'" in err and "resnet18" in err


def test_unknown_layer_lists_the_layers(capsys):
    err = one_line_error(capsys, ["--model", "resnet18", "--data", "digits",
                                  "--layers", "layer1,layer9"])
    assert "no layer 'layer9'" in err and "layer1, layer2, layer3, layer4" in err


def test_dataset_the_model_cannot_take_says_what_to_pass(capsys):
    err = one_line_error(capsys, ["--model", "alexnet", "--data", "digits"])
    assert "cannot take digits's 1x8x8 images" in err and "pass" in err


def test_unknown_dataset(capsys):
    err = one_line_error(capsys, ["--model", "mlp", "--data", "svhn"])
    assert "svhn" in err and "cifar10" in err


def test_checkpoint_of_another_model(capsys, tmp_path):
    other = tmp_path / "other.pt"
    torch.save(nn.Linear(3, 2).state_dict(), other)
    err = one_line_error(capsys, ["--model", "resnet18", "--data", "digits",
                                  "--checkpoint", str(other)])
    assert "checkpoint other.pt does not match the model" in err
    assert str(tmp_path) not in err


def test_checkpoint_that_would_run_code_is_refused(capsys, tmp_path):
    evil = tmp_path / "evil.pt"
    torch.save({"state_dict": {"x": torch.zeros(1)}, "fn": print}, evil)
    err = one_line_error(capsys, ["--model", "mlp", "--data", "digits",
                                  "--checkpoint", str(evil)])
    assert "evil.pt" in err


def test_matching_checkpoint_is_loaded(tmp_path):
    config = measure.lens_config(measure.Request("smallcnn", "digits"))
    spec = measure._spec(measure.Request("smallcnn", "digits"), config)
    from memlib.studies import rlp

    model, _ = rlp.make_model(spec, 10, (1, 8, 8))
    torch.save(model.state_dict(), tmp_path / "mine.pt")
    r = measure.Request("smallcnn", "digits", checkpoint=str(tmp_path / "mine.pt"))
    _, runs = measure.plan(r)
    path, digest = runs[0].watched.run.checkpoint
    assert Path(path).name == "mine.pt" and len(digest) == 64
    loaded, _ = rlp.make_model(runs[0].watched.run, 10, (1, 8, 8))
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in loaded.state_dict().items())


def test_list_layers(capsys):
    assert cli.main(["measure", "--model", "timm:vit_tiny_patch16_224", "--data", "digits",
                     "--list-layers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12 and lines[0] == "blocks.0  (measured by default)"
    assert lines[1] == "blocks.1"


# --- end to end ---------------------------------------------------------------------------


def run_command(tmp_path, argv) -> Path:
    out = tmp_path / "report"
    assert cli.main(["measure", *argv, "--scale", "smoke", "--out", str(out)]) == 0
    for name in TABLES:
        assert (out / f"{name}.csv").stat().st_size > 0
    return out


def test_resnet18_on_cifar10_end_to_end_cached_and_readable(tiny_cifar, tmp_path, capsys):
    out = run_command(tmp_path, ["--model", "resnet18", "--data", "cifar10", "--noise", "0.2"])
    layers = pd.read_csv(out / "layers.csv")
    assert sorted(layers["seed"].unique()) == [0, 1]
    # at smoke scale three of its five stages, evenly spaced (avgpool's probes read the
    # weights between layer3 and it: layer4's)
    assert layers["layer"].unique().tolist() == ["layer1", "layer3", "avgpool"]
    assert layers.loc[layers["layer"] == "layer1", "drop_pruned"].notna().all()
    assert {"excess", "drop_sign", "drop_pruned", "gap_null_b"} <= set(layers.columns)
    curves = pd.read_csv(out / "curves.csv")
    assert {"er", "noisy_fit", "noisy_true", "clean_fit"} <= set(curves.columns)
    auroc = pd.read_csv(out / "auroc.csv")
    assert auroc.loc[auroc["score"] == "Fisher LOO (exact)", "auroc"].notna().all()
    first = {name: pd.read_csv(out / f"{name}.csv") for name in TABLES}
    # the second time every run comes from the cache: the same tables
    again = run_command(tmp_path, ["--model", "resnet18", "--data", "cifar10",
                                   "--noise", "0.2"])
    for name in TABLES:
        pd.testing.assert_frame_equal(first[name], pd.read_csv(again / f"{name}.csv"))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<figure>") == 5 and "data:image/png;base64," in page
    assert "http" not in page.replace("http-equiv", "")  # nothing reaches the network
    shutil.copy(out / "report.html", tmp_path / "page.html")
    read_in_chromium(tmp_path / "page.html", tmp_path)


def test_timm_vit_on_fashion_mnist_end_to_end(tmp_path):
    out = run_command(tmp_path, ["--model", "timm:vit_tiny_patch16_224",
                                 "--data", "fashion_mnist"])
    layers = pd.read_csv(out / "layers.csv")
    assert layers["layer"].unique().tolist() == ["blocks.0", "blocks.6", "blocks.11"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<figure>") == 3  # no noise: no corrupted labels to split or find
    assert "No label was corrupted" in page


def read_in_chromium(page: Path, tmp_path: Path) -> None:
    """The page as a reader sees it passes the book checker's text rules, shows no missing
    value, and its figures keep their size."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("headless Chromium is not installed")
    import book_render

    driver = book_render.browser(tmp_path / "profile")
    try:
        driver.get(page.as_uri())
        prose = driver.execute_script(book_render.PROSE_TEXT)
        text = driver.execute_script(book_render.ALL_TEXT)
        problems = book_render.text_problems(prose, text, [str(tmp_path), str(TESTS.parent)])
        problems += [f"missing value shown: {m.group(0)}"
                     for m in re.finditer(r"\b(None|NaN|nan|inf)\b", text)]
        small = driver.execute_script(book_render.SMALL_IMAGES, book_render.COLUMN_PX)
        problems += [f"figure shown too small: {s}" for s in small]
        assert driver.execute_script(book_render.PAGE_WIDTH) <= book_render.DESKTOP
    finally:
        driver.quit()
    assert not problems, problems


# --- the same numbers as the lens ----------------------------------------------------------


def test_study1_mlp_at_the_lens_settings_gives_the_lens_numbers(tmp_path):
    """On study 1's MLP with the lens's smoke settings, the command's runs are the lens's
    runs (the same specs, so the same cache entries) and its tables are the lens's."""
    config = lens.Config(setting="smoke", study1_sets=("seeds=[0, 1]",),
                         datasets=("fashion_mnist",), noise_rates=(0.4,), extra_seeds=(),
                         study1_runs=False, measure_every=1, null_draws=2, parallel_runs=1)
    r = measure.Request("mlp", "fashion_mnist", noise=0.4, seeds=(0, 1))
    _, planned = measure.plan(r, config)
    assert planned == lens.lens_measures(config)
    ours = measure.measure(r, tmp_path / "out", config)["results"]
    theirs = lens.run(config)
    for name in TABLES:
        # (a freshly computed table names its columns' index, one loaded from the cache not)
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_names=False)
        written = (tmp_path / "out" / f"{name}.csv").read_text()
        assert written == theirs[name].to_csv(index=False)


def test_no_scheduler_is_one_line(capsys, monkeypatch, tmp_path):
    from test_cluster import free_port

    from memlib import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2)
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    code = cli.main(["measure", "--model", "mlp", "--data", "digits", "--epochs", "1",
                     "--seeds", "0", "--out", str(tmp_path / "out"),
                     "--scheduler", f"tcp://127.0.0.1:{free_port()}"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("memlib: error: no Dask scheduler answered at"), err
    assert err.count("\n") == 1
    assert not (tmp_path / "out" / "report.html").exists()


def test_checkpoint_on_a_cluster_is_refused(capsys, tmp_path):
    weights = tmp_path / "weights.pt"
    torch.save(nn.Linear(3, 2).state_dict(), weights)
    err = one_line_error(capsys, ["--model", "mlp", "--data", "digits", "--checkpoint",
                                  str(weights), "--scheduler", "tcp://127.0.0.1:8786"])
    assert "--checkpoint runs on this machine only" in err


def test_bad_workers_is_one_line(capsys):
    err = one_line_error(capsys, ["--model", "mlp", "--data", "digits", "--workers", "0"])
    assert "--workers" in err


def test_measure_computes_on_one_thread_as_the_notebooks_do(monkeypatch, tmp_path):
    """Below full scale `measure` computes on one CPU thread, as `run` and the notebooks do: a
    cache entry it writes holds the bits the lens notebook's would (two threads may add in
    another order), whatever thread count the calling process had."""
    seen = []
    monkeypatch.setattr(measure, "measure", lambda request, out: seen.append(
        torch.get_num_threads()) or {"seconds": 0.0})
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert cli.main(["measure", "--model", "mlp", "--data", "digits",
                         "--out", str(tmp_path)]) == 0
    finally:
        torch.set_num_threads(threads)
    assert seen == [1]
