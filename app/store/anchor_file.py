"""The local anchor of a run's chain (SPEC J6): ``<git folder>/interlock/anchors/<run-id>.json``.

Why in the git folder and not on a branch: whatever rewrites the state branch — a reset to an earlier commit, a
forced push or fetch, files removed by hand — leaves this file as the last save wrote it, so ``interlock verify``
tells a stripped or rolled-back journal from one written before tamper evidence (``app/engine/anchor.py``). It
is the local stand-in for GitHub's check run and status comment, not a proof against whoever controls the
machine; a clone has none, and is checked on the journal alone. Written after the save's branch moved (never
before: an anchor newer than the journal would be a false alarm) and replaced whole, so a crash leaves the old
anchor, which merely lags.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from app.engine.anchor import Anchor, Witness

ANCHORS = "interlock/anchors"
WHERE = "the local anchor"
log = logging.getLogger("interlock.store")


def anchor_path(git_dir: Path, run_id: str) -> Path:
    return git_dir / ANCHORS / f"{run_id}.json"


def write_anchor(git_dir: Path, anchor: Anchor) -> None:
    """The anchor replaced whole; a failure to write it is logged, never fails the save it follows (it lags)."""
    path = anchor_path(git_dir, anchor.run)
    data = {"run": anchor.run, "version": anchor.version, "hash": anchor.hash, "state": anchor.state}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(data) + "\n", encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        log.warning("the anchor of run %s was not written (verify will find it lagging): %s", anchor.run, exc)


def local_witnesses(git_dir: Path, run_id: str) -> list[Witness]:
    """The run's local anchor, if this repository has one; one that is not what ``write_anchor`` writes is not
    evidence of anything and is left out."""
    try:
        data = json.loads(anchor_path(git_dir, run_id).read_text(encoding="utf-8"))
        anchor = Anchor(str(data["run"]), int(data["version"]), str(data["hash"]), str(data.get("state", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [Witness(WHERE, anchor)] if anchor.run == run_id else []
