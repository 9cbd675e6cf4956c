"""JupyterLab never writes the tracked notebooks: `make sync` makes each .ipynb from its .py
with the .venv's kernel and pairs it with nothing, so opening, editing and saving a notebook
through jupytext's contents manager (what JupyterLab saves through), and in JupyterLab itself
driven in headless Chromium, writes the untracked .ipynb alone, leaving `git status` clean and
`make figures` with nothing to do."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.executable).parent.parent
NOTEBOOK = "notebooks/02_modular_arithmetic_noise"


@pytest.fixture
def clone(tmp_path) -> Path:
    """A clone of this checkout with the working tree's Makefile, jupytext.toml and notebooks,
    committed, its notebooks executed as far as make can tell."""
    if not (shutil.which("make") and shutil.which("git") and (VENV / "bin/jupytext").exists()):
        pytest.skip("needs make, git and jupytext")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    for tracked in ("Makefile", "jupytext.toml", *map(str, sorted(
            p.relative_to(ROOT) for p in (ROOT / "notebooks").glob("[0-9]*.py")))):
        shutil.copy2(ROOT / tracked, clone / tracked)
    subprocess.run([*git(clone), "commit", "--quiet", "--allow-empty", "-am", "tree"],
                   check=True)
    (clone / "build" / "small").mkdir(parents=True)
    for notebook in (clone / "notebooks").glob("[0-9]*.py"):
        (clone / "build" / "small" / f"{notebook.stem}.ipynb").touch()
    (clone / "figures" / "CLAIMS.md").touch()
    return clone


def git(clone: Path) -> list[str]:
    return ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]


def make(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-C", str(clone), f"VENV={VENV}", "-o", f"{VENV}/.installed",
                           f"MEMLIB_BUILD={clone / 'build'}",
                           f"MEMLIB_FIGURES={clone / 'figures'}", *args],
                          capture_output=True, text=True, timeout=300)


def untouched(clone: Path) -> bool:
    status = subprocess.run([*git(clone), "status", "--porcelain"], capture_output=True,
                            text=True).stdout
    plan = make(clone, "-n", "figures").stdout
    return status == "" and "Nothing to be done" in plan and "memlib" not in plan


def test_saving_in_jupyter_writes_the_ipynb_alone(clone):
    from jupytext import TextFileContentsManager

    assert make(clone, "sync").returncode == 0
    ipynb, py = clone / f"{NOTEBOOK}.ipynb", clone / f"{NOTEBOOK}.py"
    metadata = json.loads(ipynb.read_text())["metadata"]
    assert metadata["kernelspec"]["name"] == "python3"  # the kernel of the .venv's Jupyter
    assert "jupytext" not in metadata  # paired with nothing
    before = (py.read_bytes(), py.stat().st_mtime_ns)

    manager = TextFileContentsManager(root_dir=str(clone))
    model = manager.get(f"{NOTEBOOK}.ipynb")
    cell = next(c for c in model["content"]["cells"] if "parameters" in c["metadata"].get(
        "tags", []))
    cell["source"] = 'scale = "smoke"\nseeds = [0, 1]\n'
    manager.save(model, f"{NOTEBOOK}.ipynb")
    assert "seeds = [0, 1]" in ipynb.read_text()
    assert (py.read_bytes(), py.stat().st_mtime_ns) == before
    assert manager.get(f"{NOTEBOOK}.py", content=False)["type"] == "file"  # not a notebook
    assert untouched(clone)

    again = make(clone, "sync")  # the student's edits are kept, and the .py still untouched
    assert f"kept {NOTEBOOK}.ipynb" in again.stdout
    assert "seeds = [0, 1]" in ipynb.read_text() and untouched(clone)


def test_sync_unpairs_an_ipynb_an_older_sync_paired(clone):
    """An .ipynb with jupytext's pairing in its metadata would write the .py on every save."""
    assert make(clone, "sync").returncode == 0
    ipynb = clone / f"{NOTEBOOK}.ipynb"
    notebook = json.loads(ipynb.read_text())
    notebook["metadata"]["jupytext"] = {"formats": "ipynb,py:percent"}
    ipynb.write_text(json.dumps(notebook))
    assert make(clone, "sync").returncode == 0
    assert "jupytext" not in json.loads(ipynb.read_text())["metadata"]
    assert untouched(clone)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, seconds: float):
    """`condition()`'s first true value within `seconds`, else None."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if found := condition():
            return found
        time.sleep(0.5)
    return None


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
        return True
    except OSError:
        return False


def test_editing_and_saving_in_jupyterlab_in_a_browser_leaves_the_clone_untouched(clone,
                                                                                    tmp_path):
    """What a student does: JupyterLab started on the clone, a notebook opened in headless
    Chromium, a code cell edited and saved with Ctrl-S. The edit reaches the .ipynb, the
    tracked .py is not touched, and `make figures` has nothing to do."""
    from book_render import CHROMEDRIVER, CHROMIUM, browser
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    lab = VENV / "bin" / "jupyter-lab"
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists() and lab.exists()):
        pytest.skip("needs JupyterLab and headless Chromium (chromium, chromium-driver)")
    assert make(clone, "sync").returncode == 0
    ipynb, py = clone / f"{NOTEBOOK}.ipynb", clone / f"{NOTEBOOK}.py"
    before = (py.read_bytes(), py.stat().st_mtime_ns)
    port, home = free_port(), tmp_path / "home"
    home.mkdir()
    server = subprocess.Popen(  # a fresh HOME: no settings of this machine's user
        [str(lab), "--no-browser", f"--port={port}", "--ip=127.0.0.1", "--ServerApp.token=",
         "--ServerApp.password=", f"--ServerApp.root_dir={clone}", "--LabApp.news_url=None",
         "--allow-root"],
        cwd=clone, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")},
             "HOME": str(home)})
    driver = None
    try:
        url = f"http://127.0.0.1:{port}/lab"
        assert wait_for(lambda: answers(f"{url}/api/settings"), 120), "JupyterLab did not start"
        driver = browser(tmp_path / "profile")
        driver.get(f"{url}/tree/{NOTEBOOK}.ipynb")

        def typed() -> bool:  # into the first code cell, once JupyterLab has laid it out
            try:
                editor = driver.find_element("css selector",
                                             ".jp-Notebook .jp-CodeCell .cm-content")
                editor.click()
                editor.send_keys(Keys.END, "\n# a student's note")
                return True
            except WebDriverException:
                return False

        assert wait_for(typed, 120), "JupyterLab showed no code cell to edit"
        ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
        assert wait_for(lambda: "a student's note" in ipynb.read_text(), 60), (
            "the save did not reach the .ipynb")
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:  # still shutting its kernel down: no orphan left
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    assert (py.read_bytes(), py.stat().st_mtime_ns) == before
    assert untouched(clone)
