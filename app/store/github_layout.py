"""A v1 run on GitHub's state branch moved to journal layout v2 in the commit of its next save.

Why the git data API and not ``createCommitOnBranch``: the mutation takes every file it adds as base64 contents,
so moving a run's mission records, orders and events would read each of them and send them all back. A tree
request names an existing blob by its id instead: each v1 file is added at its v2 place with the same blob id
and removed from its v1 place with ``"sha": null`` (GitHub's way to delete a path in a tree), so no file's bytes
are read or sent and every hash the chain recorded (SPEC J6) stays true. The save's own files travel inline.
The commit's parent is the head the record was read from and the branch only fast-forwards to it, so a writer
who moved the branch meanwhile makes it fail (``RefConflict``) as the mutation's ``expectedHeadOid`` would:
the caller re-reads and re-applies (SPEC J2), and a failure at any step leaves the v1 run as it was (SPEC C5).
Once per run: two reads (the head's tree, listed) and three content-creating requests (tree, commit, ref).
https://docs.github.com/en/rest/git/trees#create-a-tree
https://docs.github.com/en/rest/git/trees#get-a-tree
"""

from __future__ import annotations

import logging
from typing import Any

from app.github.client import Installation
from app.store.journal import RUNS_FOLDER
from app.store.layout import V2, layout_file, layout_path, placed_for, sharded

log = logging.getLogger("interlock.github")


def moves(listing: dict[str, Any], run_id: str) -> list[dict[str, Any]] | None:
    """The tree entries that move run ``run_id``'s numbered files to their v2 places, from a recursive listing
    of the head's tree; ``None`` when GitHub cut the listing short (over its limits): the run then stays v1."""
    if listing.get("truncated"):
        return None
    mine = f"{RUNS_FOLDER}/{run_id}/"
    entries: list[dict[str, Any]] = []
    for entry in listing.get("tree", []):
        path = str(entry.get("path", ""))
        target = sharded(path) if entry.get("type") == "blob" and path.startswith(mine) else None
        if target is not None:
            mode = str(entry.get("mode", "100644"))
            entries.append({"path": target, "mode": mode, "type": "blob", "sha": entry["sha"]})
            entries.append({"path": path, "mode": mode, "type": "blob", "sha": None})
    return entries


def migrating_commit(
    api: Installation, repo: str, branch: str, head: str, run_id: str, changes: dict[str, bytes], message: str
) -> str | None:
    """The save's ``changes`` (logical paths) committed on ``head`` with run ``run_id`` moved to v2 and its
    ``layout.json`` written, the branch fast-forwarded to it; ``None`` when the run cannot be listed whole,
    nothing written (the caller saves it in v1, as before)."""
    tree = api.commit_tree(repo, head)
    listing = api.call("GET", f"/repos/{repo}/git/trees/{tree}", params={"recursive": "1"})
    moved = moves(listing if isinstance(listing, dict) else {}, run_id)
    if moved is None:
        log.warning("run %s of %s stays in journal layout v1: its state branch is too large to list", run_id, repo)
        return None
    files = {placed_for(run_id, path, V2): data for path, data in changes.items()}
    files[layout_path(run_id)] = layout_file(V2)
    written = [{"path": p, "mode": "100644", "type": "blob", "content": d.decode("utf-8")} for p, d in files.items()]
    new_tree = api.tree(repo, [*moved, *written], tree)
    commit = api.commit(repo, message, new_tree, [head])
    api.update_ref(repo, branch, commit)
    return commit
