"""A branch's head, its tree and files at that very commit, read in one GraphQL call.

Why: a transition reads the run's record, the job's mission record, the board's index and the run branch's head;
read from one commit in one request, they agree with each other and with the head the next write builds on, and
cost one call instead of five.
https://docs.github.com/en/graphql/reference/objects#commit
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Reader(Protocol):
    """What a snapshot needs of ``app.github.client.Installation`` (which calls this module)."""

    github: Any

    def file(self, repo: str, path: str, ref: str) -> bytes | None: ...


@dataclass(frozen=True)
class Snapshot:
    """What one read found: the branch's head and tree, each path's text (``None``: absent), other heads."""

    head: str
    tree: str
    files: dict[str, str | None]
    heads: dict[str, str | None] = field(default_factory=dict)
    repository_id: str | None = None  # the repository's node id, which GraphQL's check mutations name it by


def read_snapshot(
    api: Reader, repo: str, branch: str, paths: list[str], heads: tuple[str, ...] = ()
) -> Snapshot | None:
    """The branch head, its tree and the text of ``paths`` at that very commit; with the heads of the branches
    ``heads`` names (``None`` for one that does not exist) and the repository's node id, read in the same call."""
    owner, name = repo.split("/", 1)
    variables = {
        "owner": owner,
        "name": name,
        "ref": f"refs/heads/{branch}",
        **{f"p{i}": path for i, path in enumerate(paths)},
        **{f"h{i}": f"refs/heads/{name}" for i, name in enumerate(heads)},
    }
    data = api.github.graphql(_query(len(paths), len(heads)), variables)
    target = ((data.get("repository") or {}).get("ref") or {}).get("target")
    if not target:
        return None
    texts = _texts(api, repo, paths, target)
    found = {
        name: ((data["repository"].get(f"h{i}") or {}).get("target") or {}).get("oid") for i, name in enumerate(heads)
    }
    node = data["repository"].get("id")
    return Snapshot(target["oid"], target["tree"]["oid"], texts, found, str(node) if node else None)


def _query(paths: int, heads: int) -> str:
    """The query of a snapshot of ``paths`` files (``$p0``...) and ``heads`` other heads (``$h0``...)."""
    files = " ".join(
        f"f{i}: file(path: $p{i}) {{ object {{ ... on Blob {{ text isTruncated }} }} }}" for i in range(paths)
    )
    params = "".join(f", $p{i}: String!" for i in range(paths))
    params += "".join(f", $h{i}: String!" for i in range(heads))
    others = "".join(f" h{i}: ref(qualifiedName: $h{i}) {{ target {{ oid }} }}" for i in range(heads))
    return (
        f"query InterlockSnapshot($owner: String!, $name: String!, $ref: String!{params}) {{ "
        f"repository(owner: $owner, name: $name) {{ id ref(qualifiedName: $ref) {{ target {{ "
        f"... on Commit {{ oid tree {{ oid }} {files} }} }} }}{others} }} }}"
    )


def _texts(api: Reader, repo: str, paths: list[str], target: dict[str, Any]) -> dict[str, str | None]:
    """Each path's text at the commit ``target``; a blob GraphQL truncated is read whole over REST."""
    texts: dict[str, str | None] = {}
    for index, path in enumerate(paths):
        blob = ((target.get(f"f{index}") or {}).get("object")) or None
        if blob is None:
            texts[path] = None
        elif blob.get("isTruncated"):
            raw = api.file(repo, path, target["oid"])
            texts[path] = raw.decode("utf-8") if raw is not None else None
        else:
            texts[path] = blob.get("text")
    return texts
