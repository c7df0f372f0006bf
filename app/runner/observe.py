"""Who hears of each transition the run driver saves: the service's metrics, and the traces (SPEC W6).

Why a hub in the runner: every shell's transitions go through ``RunDriver`` (a start, and each event applied
with compare-and-swap), so one call there sees all of them, on GitHub and on this machine alike, without the
shells knowing about metrics. Watchers are held weakly (a service's metrics go when the service goes), and a
watcher that fails is logged and skipped: what watches a transition must never undo or fail it, since the
journal has already saved it.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Protocol

from app.engine.events import Event
from app.engine.record import Run
from app.runner import traces
from app.runner.saved import Saved

log = logging.getLogger("interlock.observe")


class TransitionWatcher(Protocol):
    def transition(self, saved: Saved) -> None: ...


_lock = threading.Lock()
_watchers: weakref.WeakSet[TransitionWatcher] = weakref.WeakSet()


def watch(watcher: TransitionWatcher) -> None:
    """Hand ``watcher`` every transition saved in this process from now on, while something else holds it."""
    with _lock:
        _watchers.add(watcher)


def saved(before: Run | None, event: Event, after: Run, started: float) -> None:
    """Called by the driver once a transition is saved (``started``: ``time.time()`` when it began)."""
    record = Saved(before, event, after, started, time.time())
    with _lock:
        heard = [watcher.transition for watcher in _watchers]
    for hear in [*heard, traces.record]:
        try:
            hear(record)
        except Exception:
            log.exception("a watcher of transitions failed on run %s; the transition stands", after.id)
