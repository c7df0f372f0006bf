"""The reports of a run on GitHub: ``interlock status|journey|money --repo OWNER/NAME RUN`` (issue 14, item 5).

``--repo`` names a folder locally; when it names no folder but ``OWNER/NAME``, as ``interlock doctor`` reads it,
the report reads the repository's state branch through the API instead, and prints exactly what the same
command prints for the same record locally (text and ``--json``), from the same renderers. Credentials are the
App's, as the service and ``doctor --github`` use them (``GITHUB_APP_ID``, ``GITHUB_APP_PRIVATE_KEY``,
``GITHUB_API_URL``), else a token from the environment (``GITHUB_TOKEN``, else ``GH_TOKEN``). What can go
wrong — no credentials, an unknown repository or run, no access — is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.doctor import REPOSITORY_NAME
from app.engine.errors import InterlockError

if TYPE_CHECKING:  # loaded when a report reads GitHub, not when the command line starts (app/cli/main.py)
    from app.engine.record import Run
    from app.github.client import Installation
    from app.store.github_reader import GitHubStateReader

Reported = Annotated[
    Path, typer.Option("--repo", help="The git repository (default: the current folder), or OWNER/NAME on GitHub.")
]
TOKENS = ("GITHUB_TOKEN", "GH_TOKEN")
# a repository's web or clone address, as people paste it (typer's Path has already folded `//` to `/`)
ADDRESS = re.compile(r"^(?:[a-z][a-z0-9+.-]*:/+|git@)[^/:]+[/:](?P<name>[\w.-]+/[\w.-]+?)(?:\.git)?/?$", re.I)
RUNNER = "none"  # what `status` says of a run no process on this machine drives: GitHub's jobs drive it
NOT_THE_API = "is GITHUB_API_URL the API's address (https://HOST/api/v3 on GitHub Enterprise Server)?"
HEADER_REFUSED = "the credentials are no valid HTTP header value (a line break in the token?)"
NO_CREDENTIALS = (
    "no GitHub credentials: set the App's (GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY, as for the service) "
    "or a token (GITHUB_TOKEN or GH_TOKEN) that can read the repository"
)


def github_repository(repo: Path) -> str | None:
    """``OWNER/NAME`` when ``--repo`` names no folder but a repository on GitHub, as ``interlock doctor`` reads it;
    ``None``: a local report."""
    if not repo.exists() and (address := ADDRESS.match(str(repo))):
        raise InterlockError(f"--repo takes a folder or OWNER/NAME, not an address: --repo {address['name']}")
    if repo.exists() or not REPOSITORY_NAME.match(str(repo)):
        return None
    typer.echo(f"(--repo {repo} is not a folder: reading the GitHub repository {repo})", err=True)
    return str(repo)


def installation(name: str) -> Installation:
    """The client of ``name``: the App's installation there, else the token's; an unknown repository refused."""
    from app.cli.config import app_installation
    from app.webhooks.appless import TokenApp
    from app.webhooks.settings import DEFAULT_API_URL

    if os.environ.get("GITHUB_APP_ID") or os.environ.get("GITHUB_APP_CLIENT_ID"):
        return app_installation(name)
    token = next((os.environ[key] for key in TOKENS if os.environ.get(key)), None)
    if token is None:
        raise InterlockError(NO_CREDENTIALS)
    api = TokenApp(token, os.environ.get("GITHUB_API_URL", DEFAULT_API_URL).rstrip("/")).installation(0)
    if api.repository(name) is None:
        raise InterlockError(f"no repository {name} on GitHub, or the token cannot see it")
    return api


@contextmanager
def plainly(name: str) -> Iterator[None]:
    """GitHub's refusals and an unreachable API as one line each (``InterlockError``), never a traceback."""
    import httpx
    from githubkit.exception import GitHubException, GraphQLFailed, RequestFailed
    from pydantic import ValidationError

    from app.github.client import GitHubError

    try:
        yield
    except GitHubError as exc:
        raise InterlockError(refused(name, exc.status, str(exc))) from None
    except RequestFailed as exc:
        raise InterlockError(refused(name, exc.response.status_code, exc.response.text[:200])) from None
    except GraphQLFailed as exc:
        raise InterlockError(f"GitHub could not read {name}'s state branch: {exc}") from None
    except (GitHubException, httpx.HTTPError) as exc:
        raise InterlockError(f"cannot reach GitHub for {name}: {transport_problem(exc)}") from None
    except (json.JSONDecodeError, ValidationError) as exc:  # a proxy's page, or JSON that is no answer of GitHub's
        kind = type(exc).__name__
        raise InterlockError(f"the answer for {name} is not GitHub's API: {NOT_THE_API} ({kind})") from None


def transport_problem(exc: Exception) -> str:
    """What went wrong on the way to GitHub; never a refused header, which the HTTP client quotes whole, the
    credentials in it (``Illegal header value b'token ...'``)."""
    said = str(exc)
    return HEADER_REFUSED if "header" in said.lower() else said


def refused(name: str, status: int, said: str) -> str:
    if status == 401:
        return f"GitHub refused the credentials (401): check the App's key or the token ({said})"
    if status in (403, 404):
        return f"no access to {name}'s state branch ({status}): the credentials cannot read its contents"
    return said


def load(name: str, run_id: str) -> tuple[GitHubStateReader, Run]:
    """The run's record from the state branch of ``name``, and the reader that read it (at that commit)."""
    from app.store.archived import ArchivedGitHubReader

    state = ArchivedGitHubReader(installation(name), name)  # archived runs read as before (app/store/archive.py)
    return state, state.load(run_id)


def remote_status(name: str, run_id: str, draw: bool, as_json: bool) -> None:
    """``interlock status``, as locally: the record with ``runner`` and ``gate_answer`` in ``--json``."""
    from app.engine.graph.mermaid import draw_mermaid
    from app.local.reports import gate_answer, render_status
    from app.runner.driver import RunDriver

    with plainly(name):
        state, run = load(name, run_id)
        graph = RunDriver(state).graph_of(run)
        answer = gate_answer(run, state)
    if as_json:
        typer.echo(json.dumps({**run.journal(), "runner": RUNNER, "gate_answer": answer}, indent=2))
        return
    typer.echo(render_status(run, graph, RUNNER, answer))
    if draw:
        typer.echo("\n" + draw_mermaid(graph, run.stage, run.visits), nl=False)


def remote_journey(name: str, run_id: str, routing: bool, as_json: bool) -> None:
    from app.local.reports import journey_text

    with plainly(name):
        state, run = load(name, run_id)
        text = journey_text(run, state, routing, as_json)
    typer.echo(text)


def remote_money(name: str, run_id: str, as_json: bool) -> None:
    from app.local.reports import money_report

    with plainly(name):
        _, run = load(name, run_id)
    typer.echo(json.dumps(run.ledger.json_data(), indent=2) if as_json else money_report(run))
