"""Journal layout v2: a run's numbered files in folders of ``BUCKET`` (ARCHITECTURE "Journal layout").

Why: in layout v1 a run's ``missions/``, ``orders/`` and ``events/`` folders gain a file a transition, and a git
save rewrites each folder it touches whole: a save's cost grew with the run (1.3-1.8x slower at 3,000 missions
than at 200). In v2 the file ``<folder>/<name>`` of number ``n`` lies in ``<folder>/<n // BUCKET:04d>/<name>``
(``events/0001/000123.json``, ``missions/0030/3001-review.json``): a save rewrites one bucket of at most
``BUCKET`` entries and a folder of ``ceil(n / BUCKET)`` buckets, a few dozen at the runs' lengths measured
(``tests/bench/bench_longrun.py``). ``BUCKET`` = 100: a save's entries are about ``n/B + B``, least near
``B = sqrt(n)``, 55 at 3,000 and 100 at 10,000; and a person finds a file's bucket by dropping two digits.

Every caller names a file by its *logical* path, the v1 one (``mission_path``, ``event_path``): the hash chain
(SPEC J6) vouches for mission records by that name, so a migration moves files without changing one hash, and
``verify`` replays a migrated run exactly as before. Only a store maps a logical path to where the file lies.
A run says its layout in ``runs/<id>/layout.json`` (``{"layout": 2}``), written with its first v2 save; a run
without it is v1.
"""

from __future__ import annotations

import json
import re

from app.store.journal import RUNS_FOLDER

V1, V2 = 1, 2
CURRENT = V2  # what a new run is written in
BUCKET = 100
SHARDED = ("missions", "orders", "events")  # the folders that gain a file per mission or transition
_FOLDER = rf"{RUNS_FOLDER}/(?P<run>[^/]+)/(?P<folder>{'|'.join(SHARDED)})"
_LOGICAL = re.compile(rf"{_FOLDER}/(?P<name>(?P<n>\d+)[^/]*)")
_PHYSICAL = re.compile(rf"{_FOLDER}/\d{{4,}}/(?P<name>\d+[^/]*)")


def layout_path(run_id: str) -> str:
    """The file that says a run's layout: absent for v1 (every run written before v2)."""
    return f"{RUNS_FOLDER}/{run_id}/layout.json"


def layout_file(layout: int = CURRENT) -> bytes:
    return (json.dumps({"layout": layout}) + "\n").encode()


def read_layout(data: bytes | None) -> int:
    """The layout a ``layout.json`` says; none is v1. One that says something else is refused (``ValueError``):
    a store must not write a run it cannot place the files of."""
    if data is None:
        return V1
    try:
        layout = json.loads(data)["layout"]
    except (ValueError, KeyError, TypeError):
        raise ValueError('its layout.json is not {"layout": N}') from None
    if layout not in (V1, V2):
        raise ValueError(f"its layout.json says layout {layout!r}, which this Interlock does not know")
    return int(layout)


def bucket(number: int) -> str:
    return f"{number // BUCKET:04d}"


def sharded(path: str) -> str | None:
    """Where the logical ``path`` lies in a v2 run, or ``None`` for a file v2 does not move."""
    found = _LOGICAL.fullmatch(path)
    if found is None:
        return None
    return f"{RUNS_FOLDER}/{found['run']}/{found['folder']}/{bucket(int(found['n']))}/{found['name']}"


def placed(path: str, layout: int) -> str:
    """Where the logical ``path`` lies in a run of ``layout``."""
    return (sharded(path) or path) if layout == V2 else path


def placed_for(run_id: str, path: str, layout: int) -> str:
    """Where a file a save of run ``run_id`` writes lies: the run's own files by its layout, others as named."""
    return placed(path, layout) if path.startswith(f"{RUNS_FOLDER}/{run_id}/") else path


def logical(path: str) -> str:
    """The logical name of a file as it lies in either layout: a v2 bucket is dropped."""
    found = _PHYSICAL.fullmatch(path)
    if found is None:
        return path
    return f"{RUNS_FOLDER}/{found['run']}/{found['folder']}/{found['name']}"


def run_of(path: str) -> str | None:
    """The run a path of the runs folder belongs to (``runs/<id>/...``), if it is one of a run's files."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == RUNS_FOLDER else None
