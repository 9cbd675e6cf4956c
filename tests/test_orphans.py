"""Worker processes end with the process that started them: a parent killed with SIGKILL
cannot stop its pool, and its workers would otherwise compute on for minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARENT = """
import multiprocessing, sys, threading, time
import memlib
from memlib import parallel
# three runs at once: two workers and this process (which computes on one thread)
threading.Thread(target=parallel.prefetch, args=([(time.sleep, t) for t in (120, 121, 122)], 3),
                 daemon=True).start()
while len(multiprocessing.active_children()) < 2:
    time.sleep(0.1)
time.sleep(float(sys.argv[1]))
print(*[c.pid for c in multiprocessing.active_children()], flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "State:\tZ" not in state  # a zombie has ended, whoever reaps it


def test_workers_end_when_their_parent_is_killed():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, "2"], env=env,
                              stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(map(alive, workers))
    time.sleep(1.5)
    assert all(map(alive, workers))  # the watch does not end a worker whose parent lives
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(alive, workers))
