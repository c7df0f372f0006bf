"""``interlock step`` and ``interlock handle``: the commands a GitHub Actions job runs.

``step`` runs one dispatched mission in its jobs (``app/runner/job.py``): the agent's work, then the push and
the mission record; the agent never holds the write token. ``handle`` is App-less mode: the workflow's event
applied to its run with the job's own token (``app/webhooks/appless.py``). Both run in a core install, which
has no ``service`` extra (``app/cli/common.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import refuse


def register(cli: typer.Typer) -> None:
    cli.command("step")(step)
    cli.command("handle")(handle)


def step(
    run: Annotated[str, typer.Option("--run", help="The run id (the workflow's `run` input).")],
    mission: Annotated[int, typer.Option("--mission", help="The mission's number (the `mission` input).")],
    phase: Annotated[str, typer.Option(help="work (the agent's job), deliver (the pushing job), or all.")] = "all",
    handoff: Annotated[Path | None, typer.Option(help="Folder of the outcome handed from work to deliver.")] = None,
    work_result: Annotated[str, typer.Option(help="deliver: how the work job ended (needs.work.result).")] = "",
    agent: Annotated[str, typer.Option(envvar="INTERLOCK_AGENT", help="Agent: preset, openai:MODEL, command.")] = (
        "claude"
    ),
    workdir: Annotated[Path, typer.Option(help="work: the checkout of the repository.")] = Path("."),
    remote: Annotated[str, typer.Option(help="The repository's remote: a name in the checkout, or a URL.")] = (
        "origin"
    ),
    timeout: Annotated[float, typer.Option(help="Seconds the agent may take.")] = 3600.0,
) -> None:
    """Run one dispatched mission (in Actions jobs): agent, commit, push, mission record.

    The agent never gets the write token (INTERLOCK_PUSH_TOKEN, else GITHUB_TOKEN in the deliver phase);
    INTERLOCK_READ_TOKEN, if set, is what it gets as GITHUB_TOKEN."""
    from app.runner.job import JobSettings, Phase, job_log, run_step

    if phase not in tuple(Phase):
        refuse(f"--phase must be one of {', '.join(Phase)}, not {phase!r}")
    if phase == Phase.WORK:
        from app.runner.isolate import isolate

        isolate()  # the agent's parent starts with nothing the agent may not have (app/runner/isolate.py)
    settings = JobSettings(workdir.resolve(), run, mission, agent=agent, timeout_s=timeout, remote=remote)
    result = run_step(Phase(phase), settings, handoff.resolve() if handoff else None, work_result)
    typer.echo(job_log(result, mission))


def handle(
    finished: Annotated[
        str | None, typer.Option("--finished", help="Apply this mission job's end: success, failure, cancelled.")
    ] = None,
) -> None:
    """App-less mode: apply the workflow's event to its run, with the job's token (GITHUB_TOKEN).

    Reads GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_RUN_ID and GITHUB_API_URL as Actions sets them. The
    run id keys the event, so re-running the same workflow run applies it once."""
    import os

    from app.graphset import library_dirs
    from app.webhooks.appless import TokenApp, actions_event, handle_event

    env = os.environ
    missing = [name for name in ("GITHUB_EVENT_PATH", "GITHUB_RUN_ID", "GITHUB_TOKEN") if not env.get(name)]
    if missing:
        refuse(f"{', '.join(missing)} not set: `interlock handle` runs in a GitHub Actions job")
    event, payload, key = actions_event(env, finished)
    app = TokenApp(env["GITHUB_TOKEN"], env.get("GITHUB_API_URL", "https://api.github.com"))
    outcome = handle_event(event, payload, key, app, library_dirs())
    typer.echo(f"{event}.{payload.get('action', '')}: {outcome.value}")
