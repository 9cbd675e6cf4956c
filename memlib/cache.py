"""Compute-or-load, keyed by a hash of a config (`memlib.runs` adds the code that computes).

Entries are torch-saved payloads followed by a SHA-256 digest of those bytes and
written atomically (temp file + rename), so an interrupted run never leaves a
half-written entry and a corrupted one is detected and recomputed. Loading uses
`weights_only=True`; pandas DataFrames are stored as column dicts for that reason.
Every entry (and every training checkpoint, stored the same way) names its file, hence its
key, and the version of its layout (`FORMAT`): an entry copied over another key's, one of
an older layout that does not name its key, or one of another layout is never served; it is
recomputed, with one warning.

A computed entry also stores how many seconds its computation took on a cold cache (its
own time plus the cold time of the entries it used), so that a run that only loads can
still report what its results cost: every cached() call outside another computation is
noted in `ledger`, and in the file MEMLIB_COMPUTE_LEDGER names, when set (the notebook
runner sets it for a kernel and sums it into the manifest). So that an entry used both
inside a computation and on its own is counted once, each entry also stores its own seconds
and every entry it used, with theirs (`ledger_seconds` sums each entry once).

Keys include the CPU dispatch (memlib.process): results computed with the pinned
instruction set are never mixed with results computed with another.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import os
import time
import warnings
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from memlib import distributed, paths
from memlib.process import atomic_write_bytes, cache_key_tag, checkpoints_of, computing, warn_once

_DIGEST = hashlib.sha256().digest_size
_FRAME = "__dataframe__"
_TIMED = "__timed_entry__"  # {format, entry, value, seconds, own, used}
# the layout of an entry: 1 had no `format` field, 2 also stores values without a time (a
# checkpoint's); both name their entry, and both read the same way
FORMAT = 2
_READABLE_FORMATS = (1, FORMAT)
LEDGER_VARIABLE = "MEMLIB_COMPUTE_LEDGER"
_ONLY_CACHED: list[str] = []  # the command that computes missing entries, inside only_cached()
_NESTED: list[list] = []  # per computation in progress: [wall, cold] seconds of its cached()
# calls, so that its own cold time counts what they cost, not what they took now, and
# {entry: own seconds} of every entry they used, however deep
_UNWRITTEN: dict[Path, tuple] = {}  # (value, seconds, own, used) whose entry was not written
# entries "loaded" / "computed" so far, and of those computed how many were "not written"
activity: collections.Counter = collections.Counter()
ledger: dict[str, float | None] = {}  # entry -> cold compute seconds, of top-level calls
_COMPUTED_HERE: list[str] = []  # the entries this process computed, in order
_COMPUTED_ELSEWHERE: set[str] = set()  # computed for this run by a worker, not yet loaded here


class MissingResultError(RuntimeError):
    """A result that must come from the cache is not there; the message names the command."""


def key(config: Any) -> str:
    """A hash of `config` (a dataclass or JSON-ready data) and the CPU dispatch. What computes
    an entry belongs in `config`: `memlib.runs` puts the code's fingerprint, the device and
    the library versions there (memlib's own version number is not hashed: its code is)."""
    if hasattr(config, "__dataclass_fields__"):
        from memlib.config import to_dict

        config = to_dict(config)
    blob = json.dumps(config, sort_keys=True, default=str) + cache_key_tag()
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _encode(value):
    if isinstance(value, pd.DataFrame):
        return {_FRAME: {c: value[c].tolist() for c in value.columns}}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v) for v in value)
    return value


def _decode(value):
    if isinstance(value, dict):
        if set(value) == {_FRAME}:
            return pd.DataFrame(value[_FRAME])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(v) for v in value)
    return value


def save(path: Path, value: Any, seconds: float | None = None, own: float | None = None,
         used: dict[str, float] | None = None) -> None:
    """Store `value` (and, for a cache entry, the seconds its computation took: in all, its
    own, and those of each entry it used)."""
    atomic_write_bytes(path, _entry_bytes(path, value, seconds, own, used))


def _entry_bytes(path: Path, value: Any, seconds: float | None, own: float | None = None,
                 used: dict[str, float] | None = None) -> bytes:
    """What the file of entry `path` holds: the torch-saved payload, then its digest."""
    # an entry names itself: a file copied or renamed over another key's entry is refused
    payload = {_TIMED: {"format": FORMAT, "value": _encode(value), "entry": Path(path).name,
                        "seconds": None if seconds is None else float(seconds),
                        "own": None if seconds is None else float(seconds if own is None
                                                                  else own),
                        "used": dict(used or {})}}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    payload = buffer.getvalue()
    return payload + hashlib.sha256(payload).digest()


def load_timed(path: Path) -> tuple[Any, float | None]:
    """(the stored value, its cold compute seconds or None when not recorded); ValueError if
    the entry is corrupted."""
    return _read_entry(Path(path), Path(path).read_bytes())[:2]


def own_seconds(path: Path) -> float | None:
    """The cold compute seconds of an entry's own computation, the entries it used not
    counted (None when not recorded); ValueError if the entry is corrupted."""
    return _read_entry(Path(path), Path(path).read_bytes())[2]


def _read_entry(path: Path, data: bytes) -> tuple[Any, float | None, float | None, dict]:
    """(value, cold seconds, own seconds, {entry it used: own seconds}) of the bytes `data` of
    entry `path` (entries stored before own seconds were: own = all, nothing used)."""
    payload, digest = data[:-_DIGEST], data[-_DIGEST:]
    if len(data) <= _DIGEST or hashlib.sha256(payload).digest() != digest:
        raise ValueError(f"cache entry {path} is corrupted")
    with warnings.catch_warnings():  # a foreign pickle's protocol is no news: it is refused
        warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
        stored = torch.load(io.BytesIO(payload), weights_only=True)
    return _unwrap(Path(path).name, stored)


def _unwrap(name: str, stored: Any) -> tuple[Any, float | None, float | None, dict]:
    """The (value, seconds, own, used) of the payload `stored` of the entry file `name`;
    ValueError, in one line, for any payload that does not say it is that entry's, in a
    layout this version reads."""
    timed = stored.get(_TIMED) if isinstance(stored, dict) and set(stored) == {_TIMED} else None
    if not isinstance(timed, dict) or "entry" not in timed:
        raise ValueError("it is of an older layout that does not name its key, so it may hold "
                         "another configuration's result")
    layout = timed.get("format", 1)
    if layout not in _READABLE_FORMATS:
        raise ValueError(f"it is of layout {layout!r}, which this version does not read "
                         f"(it reads {', '.join(map(str, _READABLE_FORMATS))})")
    if timed["entry"] != name:
        raise ValueError(f"it holds the result stored as {timed['entry']}, another "
                         "computation's or another configuration's")
    try:
        seconds = timed["seconds"]
        own = timed.get("own", seconds)
        used = dict(timed.get("used") or {})
        return _decode(timed["value"]), seconds, own, used
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"its layout is damaged ({type(err).__name__}: {err})") from None


def load(path: Path) -> Any:
    """Return the stored value; raise ValueError if the entry is corrupted."""
    return load_timed(path)[0]


def intact(path: Path) -> bool:
    """Whether an entry is there and its bytes match their digest (read, not unpickled)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    return len(data) > _DIGEST and hashlib.sha256(data[:-_DIGEST]).digest() == data[-_DIGEST:]


def entry_path(name: str, config: Any) -> Path:
    return paths.cache_dir() / f"{name}-{key(config)}.pt"


def cached(name: str, config: Any, compute: Callable[[], Any], refresh: bool = False) -> Any:
    """Return `compute()`'s result for (`name`, `config`), computing it at most once.

    `compute` must return tensors, numbers, strings, DataFrames and containers of them.
    Under torch.distributed rank 0 decides between loading and computing for all ranks
    (computing runs collectives, so every rank must take the same branch) and writes.
    """
    path = entry_path(name, config)
    start = time.monotonic()
    value, *cost = _load_or_compute(path, compute, refresh)
    _note(path, time.monotonic() - start, *cost)
    return value


def _load_or_compute(path: Path, compute: Callable[[], Any],
                     refresh: bool) -> tuple[Any, float | None, float | None, dict]:
    if path in _UNWRITTEN and not refresh and not distributed.active():
        if path.name in _COMPUTED_ELSEWHERE:
            _COMPUTED_ELSEWHERE.discard(path.name)
        else:
            activity["kept in memory"] += 1
        return _UNWRITTEN[path]
    entry, found = (None, None, None, {}), False
    if path.exists() and not refresh and distributed.is_main():
        try:
            entry, found = _read_entry(path, path.read_bytes()), True
        except Exception as err:  # noqa: BLE001 - any unreadable entry is recomputed
            warnings.warn(f"recomputing {path.name}: {_why_unusable(err)}", stacklevel=3)
    if distributed.broadcast_flag(found):
        if path.name in _COMPUTED_ELSEWHERE:  # counted as computed when its worker was done
            _COMPUTED_ELSEWHERE.discard(path.name)
        else:
            activity["loaded"] += 1
        return entry if distributed.is_main() else _read_entry(path, path.read_bytes())
    if _ONLY_CACHED:
        raise MissingResultError(
            f"no cached result {path.name} for this configuration; compute it first with: "
            f"{_ONLY_CACHED[-1]}")
    _NESTED.append([0.0, 0.0, {}])
    start = time.monotonic()
    try:
        with computing(path):
            value = compute()
    finally:
        nested_wall, nested_cold, used = _NESTED.pop()
    own = time.monotonic() - start - nested_wall
    seconds = own + nested_cold
    activity["computed"] += 1
    _COMPUTED_HERE.append(path.name)
    if distributed.is_main():
        try:
            save(path, value, seconds, own, used)
        except OSError as err:  # read-only or full: the result is not lost, only not kept
            _UNWRITTEN[path] = (value, seconds, own, used)
            activity["not written"] += 1
            warn_once("cache", f"could not write the cache entry {path} ({err.strerror or err}); "
                      "results are kept in memory for this run only")
            return value, seconds, own, used
        for checkpoint in checkpoints_of(path):
            checkpoint.unlink(missing_ok=True)
    return value, seconds, own, used


def unwritten_since(before: Collection[Path]) -> dict[Path, bytes]:
    """The entries this process computed but could not write (a full disk), but for those in
    `before`, as the bytes their files would hold: what a worker process hands to its parent
    (`keep_unwritten`) instead of discarding it."""
    return {path: _entry_bytes(path, *kept) for path, kept in _UNWRITTEN.items()
            if path not in before}


def computed_count() -> int:
    """How many entries this process has computed so far (`computed_since` takes it)."""
    return len(_COMPUTED_HERE)


def computed_since(count: int) -> list[str]:
    """The entries this process computed after `computed_count()` was `count`: what a worker
    process hands to its parent (`note_computed_elsewhere`)."""
    return _COMPUTED_HERE[count:]


def note_computed_elsewhere(names: Collection[str]) -> None:
    """Count entries another process computed for this run as computed here, and the first
    load of each here not as loaded: a run whose workers computed everything says so."""
    fresh = set(names) - _COMPUTED_ELSEWHERE
    activity["computed"] += len(fresh)
    _COMPUTED_ELSEWHERE.update(fresh)


def store_entry(path: Path, data: bytes) -> None:
    """Write as entry `path` the bytes of an entry another machine computed
    (`memlib.cluster`), after checking them: their digest, and that they name themselves as
    `path` (ValueError otherwise)."""
    _read_entry(Path(path), data)
    atomic_write_bytes(path, data)


def note_computed_ahead(names: Collection[str]) -> None:
    """Entries this process computed ahead of the calls that read them (beside the workers of
    `parallel.prefetch`), counted as computed already: their first read here is not counted
    as a load either, as for the entries a worker computed."""
    _COMPUTED_ELSEWHERE.update(names)


def unwritten() -> set[Path]:
    """The entries this process keeps in memory because they could not be written."""
    return set(_UNWRITTEN)


def available(path: Path) -> bool:
    """Whether `cached` finds entry `path` without computing it: kept in memory for this run,
    or stored intact."""
    return path in _UNWRITTEN or intact(path)


def keep_unwritten(entries: dict[Path, bytes]) -> None:
    """Keep in memory for this run the entries another process computed but could not write
    (`unwritten_since`), read as from the disk: `cached` then finds them, not computing them
    again, and the run's counts name them as not written."""
    for path, data in entries.items():
        if path not in _UNWRITTEN:
            _UNWRITTEN[path] = _read_entry(path, data)
            activity["not written"] += 1


def _why_unusable(err: Exception) -> str:
    """Why a cache entry could not be used, in one line: torch's refusal of an object that no
    entry holds runs to paragraphs of advice on loading the file unsafely, never memlib's way."""
    import pickle
    import re

    if isinstance(err, pickle.UnpicklingError):
        named = re.search(r"GLOBAL ([\w.]+)", str(err))
        holds = f"holds {named.group(1)}" if named else "is in another format"
        return f"not an entry memlib wrote: it {holds} (not loaded)"
    return " ".join(str(err).split()) or type(err).__name__


def _note(path: Path, wall: float, seconds: float | None, own: float | None,
          used: dict[str, float]) -> None:
    """Count an entry's cold seconds towards the computation that used it (with the entries it
    used in turn), or, outside any, note it in the ledger (the file's lines are appended
    whole: workers may share it)."""
    if _NESTED:
        _NESTED[-1][0] += wall
        _NESTED[-1][1] += wall if seconds is None else seconds
        _NESTED[-1][2].update(used)
        _NESTED[-1][2][path.name] = wall if own is None else own
        return
    ledger[path.name] = seconds
    target = os.environ.get(LEDGER_VARIABLE)
    if target and distributed.is_main():
        record = {"entry": path.name, "seconds": seconds, "own": own, "used": used}
        with contextlib.suppress(OSError), open(target, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _ledger_records(path: Path) -> list[dict]:
    records = []
    with contextlib.suppress(OSError):
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                records.append({"entry": record["entry"], "seconds": record["seconds"],
                                "own": record.get("own", record["seconds"]),
                                "used": dict(record.get("used") or {})})
    return records


def read_ledger(path: Path) -> dict[str, float | None]:
    """Entry -> cold compute seconds (None: not recorded) of a ledger file, each entry once."""
    return {r["entry"]: r["seconds"] for r in _ledger_records(path)}


def ledger_seconds(path: Path) -> dict[str, float | None]:
    """Entry -> its own cold compute seconds, for every entry a ledger file's entries are or
    used, each once: what they cost together, however often one was used (a run read on its
    own and by its probes counts once). None: not recorded."""
    own: dict[str, float | None] = {}
    for r in _ledger_records(path):
        own.update(r["used"])
        own[r["entry"]] = r["own"]
    return own


@contextlib.contextmanager
def uncounted():
    """Inside the block `cached` counts nothing (`activity`, and the first reads of entries
    other processes computed stay to come): what only tries whether entries are there."""
    counts, elsewhere = activity.copy(), set(_COMPUTED_ELSEWHERE)
    try:
        yield
    finally:
        activity.clear()
        activity.update(counts)
        _COMPUTED_ELSEWHERE.clear()
        _COMPUTED_ELSEWHERE.update(elsewhere)


def reading_only() -> bool:
    """Whether this is inside `only_cached`, where nothing may be computed."""
    return bool(_ONLY_CACHED)


@contextlib.contextmanager
def only_cached(command: str):
    """Inside the block a missing entry raises MissingResultError naming `command` instead
    of being computed: notebooks at full scale read what `memlib run` produced."""
    _ONLY_CACHED.append(command)
    try:
        yield
    finally:
        _ONLY_CACHED.pop()
