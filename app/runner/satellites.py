"""Satellite repositories in a mission's job (SPEC P4, U7): the team's other repositories where its work may land.

The run record names them (``Run.satellites``, owner/name, from the team's ``satellites:``). Each has a run
branch of its own, ``interlock/<run-id>``, made by the service at the run's start. The work phase clones each
beside the main checkout, at ``<checkout>/../interlock-satellites/<owner>/<name>`` on its run branch, tells
the agent where they are, and after the agent commits what changed in each and bundles the new commits into
the hand-off (``satellites/<owner>+<name>.bundle``, heads in ``satellites.json``). The deliver phase pushes
each bundle to its satellite's run branch under the same rules as the main one (a fast-forward, no workflow
file) and the mission record lists, per satellite, its head before and after and the commits pushed: a new
commit in any of them is progress (``app/runner/outcomes.py``).

A satellite's URL is the main repository's with its ``owner/name`` replaced (``https://github.com/octo/app``
gives ``https://github.com/octo/docs``), and the job's token reaches it: on GitHub that needs a token that can
read (work) and write (deliver) every satellite, such as an App installation token (the job's own
``GITHUB_TOKEN`` reaches only its repository).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.agents.base import AgentOutcome
from app.engine.errors import InterlockError
from app.engine.record import Run
from app.gitaccess import ON_GITHUB, git_output, isolated_env
from app.runner.handoff import BUNDLE_REF, Handoff
from app.runner.partial import BLOBLESS, clone_filter
from app.runner.remote import Remote

SATELLITES_FOLDER = "interlock-satellites"  # beside the main checkout
HANDOFF_FILE = "satellites.json"

PushWork = Callable[[Remote, str, Handoff, Path], tuple[AgentOutcome, int]]


class SatelliteError(InterlockError):
    """A satellite could not be checked out: its run branch or the repository is missing or unreadable."""


@dataclass(frozen=True)
class SatelliteWork:
    """What the agent left in one satellite: its run branch's head before, and its new commit if it made any."""

    repo: str
    base: str
    head: str | None


def satellite_url(main_url: str, repo: str) -> str:
    """The URL of ``repo`` (owner/name) beside the main repository's: the same host, ``owner/name`` replaced,
    ``.git`` kept when the main URL ends with it."""
    trimmed = main_url.rstrip("/")
    suffix = ".git" if trimmed.endswith(".git") else ""
    parts = trimmed.rsplit("/", 2)
    if len(parts) < 3:
        raise SatelliteError(f"cannot tell where {repo} is from the main repository's URL {main_url!r}")
    return f"{parts[0]}/{repo}{suffix}"


def satellite_dir(workdir: Path, repo: str) -> Path:
    """Where the agent finds ``repo``: beside the main checkout, never inside it (the main commit leaves it out)."""
    owner, name = repo.split("/", 1)
    return workdir.resolve().parent / SATELLITES_FOLDER / owner / name


def main_url(remote: Remote) -> str:
    """The main repository's URL: the remote as given (a URL or a path), or the URL of the named remote."""
    if "/" in remote.remote or ":" in remote.remote:
        return remote.remote
    return remote.git("remote", "get-url", remote.remote).decode().strip()


def check_out(run: Run, workdir: Path, url: str, token: str | None) -> dict[str, str]:
    """Clone every satellite of ``run`` on its run branch beside ``workdir``; each one's head, by repository."""
    bases: dict[str, str] = {}
    for repo in run.satellites:
        folder = satellite_dir(workdir, repo)
        folder.mkdir(parents=True, exist_ok=True)
        git_output(["init", "--quiet", str(folder)], None, isolated_env(ON_GITHUB))
        where = satellite_url(url, repo)
        remote = Remote(folder, token=token, remote=where, partial=clone_filter(where, folder))  # as the main one
        try:
            tip = remote.fetch(run.branch)
        except InterlockError as exc:
            raise SatelliteError(f"the satellite {repo} could not be read: {exc}") from None
        if tip is None:
            raise SatelliteError(f"the satellite {repo} has no run branch `{run.branch}`")
        remote.git("checkout", "--quiet", "--force", "-B", run.branch, tip)
        bases[repo] = tip
    return bases


def prompt_note(run: Run, workdir: Path) -> str:
    """What the agent is told of the satellites: where each is checked out, and that changes there count."""
    if not run.satellites:
        return ""
    lines = [f"- {repo}: {satellite_dir(workdir, repo)}" for repo in run.satellites]
    return (
        "\n\n## Satellite repositories\nThis run's work may also land in these repositories, checked out on "
        f"their run branch `{run.branch}` beside this one; change files there as needed (Interlock commits "
        "and pushes them, each to its own run branch):\n" + "\n".join(lines)
    )


def commit_satellites(run: Run, workdir: Path, bases: dict[str, str], message: str, handoff: Path) -> None:
    """Commit what the agent changed in each satellite and bundle the new commits into the hand-off."""
    handed: list[dict[str, Any]] = []
    for repo, base in bases.items():
        remote = Remote(satellite_dir(workdir, repo))
        remote.commit_all(message)
        head = remote.head()
        if head != base:
            bundle_path(handoff, repo).parent.mkdir(parents=True, exist_ok=True)
            remote.git("update-ref", BUNDLE_REF, head)
            remote.git("bundle", "create", "--quiet", str(bundle_path(handoff, repo)), BUNDLE_REF, f"^{base}")
        handed.append({"repo": repo, "base": base, "head": head if head != base else None})
    if handed:
        (handoff / HANDOFF_FILE).write_text(json.dumps(handed, indent=1), encoding="utf-8")


def bundle_path(handoff: Path, repo: str) -> Path:
    return handoff / "satellites" / f"{repo.replace('/', '+')}.bundle"


def read_satellite_work(run: Run, handoff: Path) -> list[SatelliteWork]:
    """The hand-off's satellites, only those the run names (the hand-off is data the agent's job wrote)."""
    try:
        data = json.loads((handoff / HANDOFF_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found: list[SatelliteWork] = []
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict) and item.get("repo") in run.satellites and isinstance(item.get("base"), str):
            head = item.get("head")
            found.append(SatelliteWork(item["repo"], item["base"], head if isinstance(head, str) else None))
    return found


def push_satellites(
    run: Run, handed: Handoff, handoff: Path, url: str, token: str | None, push: PushWork
) -> tuple[AgentOutcome, dict[str, dict[str, Any]]]:
    """Push each satellite's commits to its run branch with ``push`` (the main branch's own checks), each from
    a scratch repository; the outcome (failed when any push was refused) and the record's ``satellites``."""
    outcome, record = handed.outcome, {}
    for work in read_satellite_work(run, handoff):
        commits = 0
        if work.head is not None:
            with tempfile.TemporaryDirectory(prefix="interlock-satellite-") as scratch:
                git_output(["init", "--quiet", "--bare", scratch], None, isolated_env(ON_GITHUB))
                remote = Remote(Path(scratch), token=token, remote=satellite_url(url, work.repo), partial=BLOBLESS)
                mine = Handoff(handed.seq, outcome, work.base, work.head)
                outcome, commits = push(remote, run.branch, mine, bundle_path(handoff, work.repo))
            if commits == 0:
                outcome = outcome.with_(answer=f"{outcome.answer} [in the satellite {work.repo}]")
        record[work.repo] = {"base": work.base, "head": work.head if commits else work.base, "commits": commits}
    return outcome, record
