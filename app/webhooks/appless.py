"""App-less mode: the same handlers as the service, run in a workflow job with the job's ``GITHUB_TOKEN``.

For teams that cannot host the webhook service, the events workflow runs ``interlock handle`` on every
event the service would receive, and the mission workflow applies its own result when its job ends
(``interlock handle --finished``), because events made with ``GITHUB_TOKEN`` start no workflow — except
``workflow_dispatch``, which is how the next mission is dispatched.
https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/triggering-a-workflow
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from githubkit import TokenAuthStrategy

from app.engine.errors import InterlockError
from app.github.client import AppIdentity, GitHubApp, Installation
from app.inputfile import InputUnreadable, parse_json, read_input_text
from app.redact import Redactor
from app.webhooks.delivery import Delivery, at, text_at
from app.webhooks.handlers import service_router
from app.webhooks.router import Outcome
from app.webhooks.settings import DEFAULT_API_URL

ACTIONS_BOT = "github-actions"  # the sender of events a workflow's GITHUB_TOKEN caused
APPLESS_INSTALLATION = 0
PAYLOAD_LIMIT = 25 * 1024 * 1024  # GitHub caps a webhook payload at 25 MB


class TokenApp(GitHubApp):
    """A ``GitHubApp`` whose every installation is the job's token: the handlers run unchanged."""

    def __init__(self, token: str, api_url: str = DEFAULT_API_URL, transport: httpx.BaseTransport | None = None):
        super().__init__(AppIdentity("actions", "", api_url.rstrip("/"), slug=ACTIONS_BOT), transport)
        self.token = token

    def installation(self, installation_id: int) -> Installation:
        return Installation(self._github(TokenAuthStrategy(self.token)), Redactor(extra=[self.token]))


def handle_event(event: str, payload: dict[str, Any], delivery_id: str, app: TokenApp, library: list[Path]) -> Outcome:
    """One event as a delivery of the single (token) installation."""
    if not isinstance(payload, dict):
        raise InterlockError(f"the {event} event payload is not a JSON object")
    delivery = Delivery(event, delivery_id, {**payload, "installation": {"id": APPLESS_INSTALLATION}})
    return service_router(app, library, ACTIONS_BOT).dispatch(delivery)


def finished_job_event(
    dispatch_payload: dict[str, Any], conclusion: str, run_url: str, workflow_path: str
) -> dict[str, Any]:
    """The ``workflow_run.completed`` payload a mission job's own end stands for, built from the job's
    ``workflow_dispatch`` event (its inputs and repository)."""
    inputs = at(dispatch_payload, "inputs") or {}
    title = f"interlock {inputs.get('run')} mission {inputs.get('mission')} ({inputs.get('stage')})"
    return {
        "action": "completed",
        "workflow_run": {
            "display_title": title,
            "event": "workflow_dispatch",
            "path": workflow_path,
            "conclusion": conclusion,
            "html_url": run_url,
            "updated_at": datetime.now(UTC).isoformat(),
            "head_branch": (text_at(dispatch_payload, "ref") or "").removeprefix("refs/heads/"),
        },
        "repository": at(dispatch_payload, "repository") or {},
        "sender": {"login": f"{ACTIONS_BOT}[bot]", "type": "Bot"},
    }


def actions_event(env: Mapping[str, str], finished: str | None) -> tuple[str, dict[str, Any], str]:
    """(event name, payload, idempotency key) of this job, from the variables Actions sets; with
    ``finished``, the ``workflow_run.completed`` this mission job's end stands for."""
    payload = read_payload(Path(env["GITHUB_EVENT_PATH"]))
    key = f"actions-{env['GITHUB_RUN_ID']}"
    if finished is None:
        return env.get("GITHUB_EVENT_NAME", ""), payload, key
    run_url = (
        f"{env.get('GITHUB_SERVER_URL', '')}/{env.get('GITHUB_REPOSITORY', '')}/actions/runs/{env['GITHUB_RUN_ID']}"
    )
    job_end = finished_job_event(payload, finished, run_url, workflow_path(env.get("GITHUB_WORKFLOW_REF")))
    return "workflow_run", job_end, f"{key}-finished"


def read_payload(path: Path) -> dict[str, Any]:
    """The event payload file Actions wrote, read as any input file (app/inputfile.py): a regular file of at
    most GitHub's largest payload, UTF-8, JSON nested no deeper than the limit."""
    try:
        data = parse_json(path, read_input_text(path, PAYLOAD_LIMIT))
    except InputUnreadable as exc:
        raise InterlockError(f"cannot read the event payload {path}: {exc.reason}") from None
    if not isinstance(data, dict):
        raise InterlockError(f"the event payload {path} is not a JSON object")
    return data


def workflow_path(workflow_ref: str | None) -> str:
    """The workflow file of this job, from ``GITHUB_WORKFLOW_REF`` (``owner/repo/<path>@<ref>``)."""
    if not workflow_ref or "/.github/" not in workflow_ref:
        return ".github/workflows/interlock.yml"
    return ".github/" + workflow_ref.split("/.github/", 1)[1].split("@", 1)[0]
