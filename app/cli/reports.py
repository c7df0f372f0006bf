"""The reports on a run: ``interlock status``, ``board``, ``journey``, ``money`` and ``verify``.

Every report takes ``--repo DIR`` and ``--json``, which prints the record's field names. ``--repo`` names a folder
locally; when it names no folder but ``OWNER/NAME``, as ``interlock doctor`` reads it, ``status``, ``journey``,
``money`` and ``verify`` read the repository's state branch through the API instead (issue 14, item 5), and print
exactly what the same command prints for the same record locally (text and ``--json``), from the same renderers.
Credentials are the App's, as the service and ``doctor --github`` use them (``GITHUB_APP_ID``,
``GITHUB_APP_PRIVATE_KEY``, ``GITHUB_API_URL``), else a token from the environment (``GITHUB_TOKEN``, else
``GH_TOKEN``). What can go wrong — no credentials, an unknown repository or run, no access — is one line and exit
2, never a traceback.

``verify`` asks whether the journal of a run is what its transitions wrote (SPEC J6); the check itself is
``app/runner/verify.py``, read at one commit on GitHub. Exit 0: every checkable transition verified; 1: the first
divergence, named; 2: the command could not check (no such run, no access), one line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from app.cli.common import REPOSITORY_NAME, AsJson, Repo, RunArg, app_installation, app_slug_on, emit_run, reading_shell
from app.engine.errors import InterlockError

if TYPE_CHECKING:  # loaded when a report runs, not when the command line starts (app/cli/assemble.py)
    from app.engine.anchor import Witness
    from app.engine.record import Run
    from app.github.client import Installation
    from app.runner.verify import Verification
    from app.store.github_reader import GitHubStateReader

Reported = Annotated[
    Path, typer.Option("--repo", help="The git repository (default: the current folder), or OWNER/NAME on GitHub.")
]
DrawOpt = Annotated[bool, typer.Option("--draw", help="Add the graph picture.")]
RoutingOpt = Annotated[bool, typer.Option("--routing", help="Every routing line, from the journal.")]
VerifyJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
EXIT_DIVERGED = 1
EXIT_CANNOT_CHECK = 2
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


def register(cli: typer.Typer) -> None:
    cli.command("status")(status)
    cli.command("board")(board)
    cli.command("journey")(journey)
    cli.command("money")(money)
    cli.command("verify")(verify_command)


def status(run_id: RunArg, repo: Reported = Path("."), draw: DrawOpt = False, as_json: AsJson = False) -> None:
    """A run's status: stage, visits, budget, what a person must do now."""
    from app.engine.graph.mermaid import draw_mermaid

    if name := github_repository(repo):  # --repo OWNER/NAME: the state branch on GitHub
        return remote_status(name, run_id, draw, as_json)
    shell = reading_shell(repo)
    run = shell.notice_merge(shell.store.load(run_id))
    emit_run(run, shell, as_json)
    if draw and not as_json:
        typer.echo("\n" + draw_mermaid(shell.graph_of(run), run.stage, run.visits), nl=False)


def board(repo: Repo = Path("."), as_json: AsJson = False) -> None:
    """Every run in the repository: origin, current step, state and age."""
    from app.local.reports import board_rows, table

    shell = reading_shell(repo)
    runs = [shell.notice_merge(run) for run in shell.store.list_runs()]
    rows = board_rows(runs, runners={run.id: shell.runner(run) for run in runs})
    typer.echo(
        json.dumps(rows, indent=2)
        if as_json
        else table(rows, ["id", "graph", "origin", "stage", "status", "runner", "age_s", "missions", "title"])
    )


def journey(run_id: RunArg, repo: Reported = Path("."), routing: RoutingOpt = False, as_json: AsJson = False) -> None:
    """Every mission of a run: kind, stage, verdict, agent, model, duration, calls, cost; and its decisions."""
    from app.local.reports import journey_text

    if name := github_repository(repo):
        return remote_journey(name, run_id, routing, as_json)
    shell = reading_shell(repo)
    typer.echo(journey_text(shell.store.load(run_id), shell.store, routing, as_json))


def money(run_id: RunArg, repo: Reported = Path("."), as_json: AsJson = False) -> None:
    """A run's ledger by category; estimates are labelled."""
    from app.local.reports import money_report

    if name := github_repository(repo):
        return remote_money(name, run_id, as_json)
    run = reading_shell(repo).store.load(run_id)
    typer.echo(json.dumps(run.ledger.json_data(), indent=2) if as_json else money_report(run))


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
    from app.store.github_reader import ArchivedGitHubReader

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


def verify_command(run_id: RunArg, repo: Reported = Path("."), as_json: VerifyJson = False) -> int:
    """Replay a run's journal through the engine; name the first divergence (edited file or engine drift)."""
    result = verify_run(repo, run_id)
    if as_json:
        found = asdict(result.found) if result.found is not None else None
        data = {**asdict(result), "found": found, "summary": result.summary()}
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(result.summary())
    return exit_code(result)


def verify_run(repo: Path, run_id: str) -> Verification:
    """The journal checked, then held against the anchors of its head (SPEC J6): on GitHub the run's check run and
    status comment, locally the anchor in the repository's git folder (``app/store/anchor_file.py``)."""
    from app.engine.errors import RunNotFound
    from app.runner.verify import verify
    from app.store.anchor_file import local_witnesses

    if name := github_repository(repo):
        with plainly(name):
            try:
                state, run = load(name, run_id)  # every later read at the commit the record was read from
            except RunNotFound:
                witnesses = remote_witnesses(name, run_id, None)
                if not witnesses:
                    raise
                return verify(NoJournal(), run_id, witnesses)  # the record itself gone: stripped
            witnesses = remote_witnesses(name, run_id, run.links.get("issue"))
            return verify(state, run_id, witnesses, expected=True)  # the App anchors every run it makes
    store = reading_shell(repo).store
    return verify(store, run_id, local_witnesses(store.path, run_id))


def remote_witnesses(name: str, run_id: str, linked: str | None) -> list[Witness]:
    from app.github.anchor import github_witnesses, issue_of

    api = installation(name)
    return github_witnesses(api, name, run_id, issue_of(run_id, linked), app_slug(name))


def app_slug(name: str) -> str | None:
    """The App whose check runs and comments are witnesses: ``GITHUB_APP_SLUG``, else, with the App's credentials,
    the App itself; ``None`` with a token alone (``app/github/anchor.py`` says what is read then)."""
    if slug := os.environ.get("GITHUB_APP_SLUG"):
        return slug
    if not (os.environ.get("GITHUB_APP_ID") or os.environ.get("GITHUB_APP_CLIENT_ID")):
        return None
    return app_slug_on(name)


class NoJournal:
    """A state branch without the run's files: what ``verify`` reads when the record is gone."""

    def read(self, path: str) -> bytes | None:
        return None

    def list_files(self, prefix: str) -> list[str]:
        return []


def exit_code(result: Verification) -> int:
    """0 verified, 1 a divergence; 2 when it cannot check: rules a newer Interlock made a transition under."""
    from app.runner.verify import Divergence

    if result.found is None:
        return 0
    return EXIT_CANNOT_CHECK if result.found.kind is Divergence.UNKNOWN_RULES else EXIT_DIVERGED
