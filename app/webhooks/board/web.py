"""The web board (SPEC W1, W4): ``GET /board`` and its sign-in and actions, mounted by the service only when the
App's OAuth client is configured (``app/webhooks/board/settings.py``); without it every ``/board`` route is 404.

Sign-in is GitHub's web flow through the App's own OAuth client (``app/github/oauth.py``); the session is a
signed cookie (``app/webhooks/board/session.py``). The board shows every run of every repository the person can
access through the App. Its actions are the comment commands under other names — pause is ``/interlock stop``,
resume ``resume``, retry ``retry``, cancel ``abandon`` — parsed and applied by the same code, then followed by
what a comment's command is followed by (the team's queue), so the run goes on exactly as it would have.
Each is refused with 403, changing nothing, without a session, without the session's CSRF token, on a
repository the person cannot see, or without the permission the repository's configuration asks to steer runs
(write by default), checked at the time of the action. Who did it is the event's ``by``, and the action is
recorded in the journal beside the run (``action_path``) in the same commit as its transition.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.engine.errors import EventRejected, RunNotFound
from app.engine.record import Run
from app.github import oauth
from app.github.client import GitHubApp
from app.github.config import ConfigInvalid
from app.runner.driver import Applied
from app.store.journal import action_path, encode_json
from app.webhooks.board import data as board_data
from app.webhooks.board.page import FILTERS, View, board_page, message_page, retry_form, sign_in_page
from app.webhooks.board.session import (
    SESSION_COOKIE,
    SESSION_S,
    STATE_COOKIE,
    STATE_S,
    Session,
    SessionTooLarge,
    Signer,
)
from app.webhooks.board.settings import BoardSettings
from app.webhooks.commands import parse_command
from app.webhooks.handlers import Handlers
from app.webhooks.settings import ServiceSettings
from app.webhooks.shell import GitHubRuns
from app.webhooks.stored_graph import GRAPH_ERRORS
from app.webhooks.teams.hold import refuse_while_stopped

COMMANDS = {"pause": "stop", "resume": "resume", "retry": "retry", "cancel": "abandon"}
RUN_ID = re.compile(r"[\w-][\w.-]{0,99}\Z", re.ASCII)  # \Z: "$" lets a final newline through
KEY = re.compile(r"board-(?P<action>[a-z]+)-[0-9a-f]{32}\Z")  # an action's idempotency key, kept by "try again"
log = logging.getLogger("interlock.board")


class Refused(Exception):
    """An action or sign-in refused: ``status`` and the sentence the person reads; nothing changed."""

    def __init__(self, status: int, message: str, again: str = "") -> None:
        super().__init__(message)
        self.status, self.again = status, again  # ``again``: the saved action's key, to finish it by trying again


def html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers={"cache-control": "no-store", "x-frame-options": "DENY"})


class Board:
    """The board's state: its settings, the App's client, the handlers whose code paths its actions reuse."""

    def __init__(
        self,
        board: BoardSettings,
        settings: ServiceSettings,
        github: GitHubApp,
        library: list[Path],
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.board, self.settings, self.github = board, settings, github
        self.signer = Signer(board.session_secret)
        self.handlers = Handlers(github, library)
        self.handlers.app_slug = settings.app_slug
        self.library = library
        self.transport = transport  # the OAuth calls' (a test double); the App's calls go through ``github``

    def session(self, request: Request) -> Session | None:
        return self.signer.session(request.cookies.get(SESSION_COOKIE))

    def cookie(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name, value, max_age=max_age, path="/board", httponly=True, samesite="lax", secure=self.board.secure
        )

    def runs_of(self, installation: int, repo: str) -> GitHubRuns:
        api = self.github.installation(installation)
        data = api.repository(repo) or {}
        return GitHubRuns(self.github, installation, repo, str(data.get("default_branch") or "main"), self.library)

    def allowed(self, installation: int, repo: str, login: str) -> bool:
        """The comment commands' rule: the permission the repository's configuration asks for (write by default)."""
        runs = self.runs_of(installation, repo)
        return runs.config().allows(runs.api.permission(repo, login))

    # -- pages ---------------------------------------------------------------------------------------
    def show(self, request: Request) -> Response:
        session = self.session(request)
        if session is None:
            return html(sign_in_page())
        chosen = {name: request.query_params.get(name, "")[:200] for name in FILTERS}
        chosen = {name: value for name, value in chosen.items() if value}
        allowed = lambda inst, repo: self.allowed(inst, repo, session.login)  # noqa: E731
        rows, notes = board_data.board_rows(self.github, session.visible(), session.login, allowed, self.board.cache_s)
        teams = sorted({row.run.team or "(default)" for row in rows})
        shown = [row for row in rows if _matches(row, chosen)]
        selected = request.query_params.get("run") or None
        found = next((row for row in rows if row.key == selected), None)
        picture = None
        if found is not None:
            installation = session.installation_of(found.repo) or 0
            picture = board_data.picture(self.github.installation(installation), found.repo, found.run)
        done = request.query_params.get("done", "")
        message = f"{done}: done." if done in COMMANDS else ""
        view = View(
            login=session.login,
            csrf=self.signer.csrf(session),
            web_url=self.board.web_url,
            rows=shown,
            teams=teams,
            repos=[repo for _, repo in session.visible()],
            chosen=chosen,
            selected=selected,
            picture=picture,
            notes=tuple(notes),
            message=message,
            redact=self.github.redactor.text,
        )
        return html(board_page(view))

    def login(self) -> Response:
        state = secrets.token_urlsafe(24)
        url = oauth.authorize_url(self.board.web_url, self.board.client_id, self.board.callback_url, state)
        response = RedirectResponse(url, status_code=302)
        self.cookie(response, STATE_COOKIE, self.signer.state_cookie(state), STATE_S)
        return response

    def callback(self, request: Request) -> Response:
        code, state = request.query_params.get("code", ""), request.query_params.get("state", "")
        if not self.signer.state_valid(request.cookies.get(STATE_COOKIE), state):
            return html(
                sign_in_page("That sign-in did not start in this browser, or took too long: sign in again."), 403
            )
        if not code:
            return html(
                sign_in_page(f"GitHub did not sign you in: {request.query_params.get('error', 'no code')}"), 400
            )
        try:
            token = oauth.exchange_code(
                self.board.web_url, self.board.client_id, self.board.client_secret, code, self.board.callback_url,
                self.transport,
            )  # fmt: skip
            login, repos = oauth.person_and_repositories(self.settings.api_url, token, self.transport)
            sealed = self.signer.session_cookie(Session(login, repos, time.time() + SESSION_S))
        except oauth.OAuthError as exc:
            return html(sign_in_page(f"The sign-in failed: {exc}"), 400)
        except SessionTooLarge as exc:
            return html(sign_in_page(f"You can see too many repositories for the board's cookie ({exc})."), 400)
        response = RedirectResponse("/board", status_code=303)
        self.cookie(response, SESSION_COOKIE, sealed, SESSION_S)
        response.delete_cookie(STATE_COOKIE, path="/board")
        log.info("board: %s signed in", login)
        return response

    # -- actions -------------------------------------------------------------------------------------
    def act(self, session: Session | None, form: dict[str, str]) -> Response:
        try:
            run, action = self._act(session, form)
        except Refused as exc:
            if exc.again and session is not None:  # the action was saved: the same key finishes it (a redelivery)
                fields = {**form, "csrf": self.signer.csrf(session), "key": exc.again}
                return html(message_page("Not finished", str(exc), retry_form(fields)), exc.status)
            return html(message_page("Nothing changed", str(exc)), exc.status)
        back = {name: form[f"back_{name}"] for name in FILTERS if form.get(f"back_{name}")}
        query = "&".join(f"{k}={v}" for k, v in httpx.QueryParams({**back, "run": run, "done": action}).multi_items())
        return RedirectResponse(f"/board?{query}", status_code=303)

    def _act(self, session: Session | None, form: dict[str, str]) -> tuple[str, str]:
        if session is None:
            raise Refused(403, "You are not signed in.")
        if not self.signer.csrf_valid(session, form.get("csrf")):
            raise Refused(403, "This request did not come from the board's own page (CSRF token missing or wrong).")
        repo, run_id, action = form.get("repo", ""), form.get("run", ""), form.get("action", "")
        installation = session.installation_of(repo)
        if installation is None:
            raise Refused(403, f"You cannot see repository {repo!r} through the App.")
        if action not in COMMANDS or not RUN_ID.match(run_id):
            raise Refused(400, f"Unknown action {action!r} or run {run_id!r}.")
        try:
            return self._apply(installation, repo, run_id, action, session.login, form.get("key", "")), action
        except ConfigInvalid as exc:
            raise Refused(422, f"The configuration of {repo} is invalid: {exc}") from None
        except board_data.UNREADABLE as exc:
            raise Refused(502, f"GitHub failed, nothing changed: {exc or type(exc).__name__}") from None

    def _apply(self, installation: int, repo: str, run_id: str, action: str, login: str, again: str = "") -> str:
        runs = self.runs_of(installation, repo)
        allowed = board_data.may_act(repo, login, lambda: self.allowed(installation, repo, login), fresh=True)
        if not allowed:
            raise Refused(
                403, f"@{login} only people with {runs.config().permission} permission on {repo} can steer its runs."
            )
        kept = KEY.match(again)
        key = again if kept and kept.group("action") == action else f"board-{action}-{uuid.uuid4().hex}"
        moment = datetime.now(UTC)
        make = refuse_while_stopped(runs, parse_command(f"/interlock {COMMANDS[action]}", key, moment, login))
        said = {"action": action, "command": f"/interlock {COMMANDS[action]}", "by": login, "at": moment.isoformat()}
        try:
            applied = runs.record(run_id, make, files={action_path(run_id, key): encode_json({**said, "key": key})})
        except RunNotFound:
            raise Refused(404, f"{repo} has no run {run_id}.") from None
        except EventRejected as exc:
            raise Refused(409, f"{action} refused: {exc}") from None
        except GRAPH_ERRORS as exc:
            raise Refused(422, f"the stored graph of {run_id} cannot be read: {exc}") from None
        finally:
            board_data.forget(repo)
        self._carry_out(runs, applied, lambda: runs.apply(run_id, make), action, key)
        log.info("board: %s %s %s/%s", login, action, repo, run_id)
        return f"{repo}:{run_id}"

    def _carry_out(self, runs: GitHubRuns, applied: Applied, again: Callable[[], Run], action: str, key: str) -> None:
        """The saved action's effects and what follows a command (the team's queue). One tried again, applied
        already, is carried out as a redelivery is (``again``: what it still owes, SPEC GH8); a GitHub failure is
        answered with the key, so "try again" finishes it rather than being refused by the state it left."""
        try:
            run = runs.execute(applied.run, applied.graph, applied.effects) if applied.new else again()
            self.handlers.after_command(runs, run)  # SPEC U5: as after a comment's command
        except board_data.UNREADABLE as exc:
            why = f"{action} was recorded, but GitHub failed while carrying it out ({exc or type(exc).__name__})"
            raise Refused(502, f"{why}: try again to finish it.", key) from None


def _matches(row: board_data.Row, chosen: dict[str, str]) -> bool:
    return (
        chosen.get("state", row.run.status.value) == row.run.status.value
        and chosen.get("team", row.run.team or "(default)") == (row.run.team or "(default)")
        and chosen.get("repo", row.repo) == row.repo
    )


def board_router(board: Board) -> APIRouter:
    router = APIRouter()

    @router.get("/board")
    def show(request: Request) -> Response:
        return board.show(request)

    @router.get("/board/login")
    def login() -> Response:
        return board.login()

    @router.get("/board/callback")
    def callback(request: Request) -> Response:
        return board.callback(request)

    @router.post("/board/action")
    async def action(request: Request) -> Response:
        form = await _form(request)
        return await run_in_threadpool(board.act, board.session(request), form)  # GitHub calls: off the loop

    @router.post("/board/signout")
    async def signout(request: Request) -> Response:
        session, form = board.session(request), await _form(request)
        response = RedirectResponse("/board", status_code=303)
        if session is not None and board.signer.csrf_valid(session, form.get("csrf")):
            response.delete_cookie(SESSION_COOKIE, path="/board")
        return response

    return router


async def _form(request: Request) -> dict[str, str]:
    """The posted form's fields as text (a malformed or oversized body reads as empty: refused with 403)."""
    body = await request.body()
    if len(body) > 16 * 1024:
        return {}
    try:
        fields: Any = httpx.QueryParams(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return {key: str(value) for key, value in fields.items()}


def mount(
    app: Any, settings: ServiceSettings, github: GitHubApp | None = None, transport: httpx.BaseTransport | None = None
) -> None:
    """The board's routes on ``app`` when OAuth is configured; otherwise nothing, so ``/board`` is 404."""
    if settings.board is None:
        return
    from app.graphset import library_dirs

    board = Board(settings.board, settings, github or GitHubApp(settings.app_identity()), library_dirs(), transport)
    app.include_router(board_router(board))
