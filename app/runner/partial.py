"""Partial clones in a mission's jobs (issue 27): every commit and tree, the blobs only where they cost nothing.

A blobless clone (``--filter=blob:none``) has the whole history of commits and trees, so ancestry, merge bases,
``git log`` and ``git diff --name-only`` work as in a full clone, and it fetches a blob from its *promisor
remote* the moment something reads one (``git log -p``, ``git blame``, ``git show OLD:path``). That lazy fetch
runs with the credentials of whichever git process reads the blob. In the ``work`` job that is the agent's git,
which has none: the checkout keeps no credential (``persist-credentials: false``) and the agent never gets the
job's token. For a private or internal repository its lazy fetch fails ("could not read Username"), and the
agent's ``git log -p`` stops with a fatal error halfway. So:

- **work**: ``actions/checkout`` clones blobless (``filter: blob:none``, ``fetch-depth: 0``). Before the agent
  starts, while Interlock still holds the job's read-only token, it asks the remote for its refs *without* a
  credential. A public repository answers, and the agent's lazy fetches will too: the clone stays blobless.
  One that refuses gets every missing blob fetched now, in one request, with the token: the agent's checkout is
  then as complete as a full clone, and no credential was left in it.
- **satellites**: cloned beside the main checkout by the same rule (blobless when readable without a credential).
- **deliver** and the scratch repositories that read the git state: blobless always. They check nothing out,
  nothing of the agent's runs there, and the token is in every git process's environment, lazy fetches included
  (a bundle's deltas against old blobs, ``git merge-tree`` on conflicting files).

A shallow clone (``--depth``) was the other choice: it cuts ancestry, so the merge base with the base branch,
the fast-forward check and a satellite's ``git log`` would each need deepening, and ``git blame`` would blame the
boundary commit for every line. A server that does not filter (``uploadpack.allowFilter`` off) sends everything.
https://git-scm.com/docs/partial-clone
https://github.blog/open-source/git/get-up-to-speed-with-partial-clone-and-shallow-clone/
https://github.com/actions/checkout#usage (its ``filter`` input)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.engine.errors import InterlockError
from app.gitaccess import ON_GITHUB, isolated_env, run_git
from app.runner.remote import Remote, RemoteError

BLOBLESS = "blob:none"
PROBE_TIMEOUT_S = 60.0


def readable_without_token(url: str, cwd: Path) -> bool:
    """Whether ``url`` answers a git client that has no credential, as the agent's lazy fetches would ask it.
    A remote that does not answer in time counts as refusing: the safe side is the complete clone."""
    try:
        probe = run_git(["ls-remote", "--quiet", url, "HEAD"], cwd, isolated_env(ON_GITHUB), timeout_s=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def clone_filter(url: str, cwd: Path) -> str:
    """The filter for a checkout the agent works in: blobless where its lazy fetches need no credential."""
    return BLOBLESS if readable_without_token(url, cwd) else ""


def is_partial(remote: Remote) -> bool:
    """Whether the repository has a promisor remote, as a partial clone or fetch configures one."""
    found = run_git(["config", "--get-regexp", r"^remote\..*\.promisor$"], remote.workdir, remote.env)
    return any(line.endswith(b" true") for line in found.stdout.splitlines())


def missing_blobs(remote: Remote) -> list[str]:
    """The objects the refs reach that the repository does not have (a blobless clone's blobs)."""
    listing = remote.git("rev-list", "--objects", "--all", "--missing=print")
    return [line[1:].decode() for line in listing.splitlines() if line.startswith(b"?")]


def complete(remote: Remote) -> int:
    """Fetch every missing object in one request, as git's own lazy fetch asks for them (the wanted objects on
    standard input, ``--filter`` keeping the rest out); the number fetched."""
    missing = missing_blobs(remote)
    if missing:
        options = ("--quiet", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no")
        stdin = "".join(f"{oid}\n" for oid in missing).encode()
        remote.git("fetch", *options, f"--filter={BLOBLESS}", "--stdin", remote.remote, stdin=stdin)
        left = len(missing_blobs(remote))
        if left:
            raise RemoteError(f"{left} of the {len(missing)} missing objects could not be fetched")
    return len(missing)


def ready_for_agent(remote: Remote, url: str) -> int:
    """Make a partial checkout safe for an agent without credentials: kept partial when ``url`` serves anyone,
    completed now with the token ``remote`` holds otherwise; the number of objects fetched."""
    if not is_partial(remote) or readable_without_token(url, remote.workdir):
        return 0
    try:
        return complete(remote)
    except InterlockError as exc:
        raise RemoteError(f"the checkout's history could not be completed for the agent: {exc}") from None
