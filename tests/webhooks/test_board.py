"""The web board in process (SPEC W1, W4): sign-in through the stand-in's OAuth flow, what a person sees, the
actions and every way a forged request is refused. The same board in a real browser: tests/e2e/test_board_browser.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.webhooks.board import data as board_data
from app.webhooks.board.session import SESSION_COOKIE, Signer
from app.webhooks.board.settings import BoardSettings, board_settings
from app.webhooks.board.web import Board, board_router
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings, SettingsError, settings_from_env
from tests.github.test_flows import REPO, World, example
from tests.helpers import GRAPHS, doc

SECRET_REPO = "octo/secret"
SVG = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert('x')</script> & more"


def board_settings_for(fake_world: World, service: str = "http://testserver") -> BoardSettings:
    client_id, client_secret = fake_world.fake.oauth_client
    return BoardSettings(client_id, client_secret, b"s" * 32, service, "http://github.test")


class Site:
    """The board mounted on a FastAPI app against the stand-in, with two repositories of one installation."""

    def __init__(self, world: World, settings: ServiceSettings) -> None:
        self.world, self.fake = world, world.fake
        self.fake.seed_branch(SECRET_REPO, "main", world.fake.files_at(REPO, "main"))
        self.fake.seed_branch(SECRET_REPO, "develop", {"README.md": "# secret"})
        self.fake.permissions.update({(REPO, "bob"): "read", (SECRET_REPO, "alice"): "admin"})
        self.fake.user_repos = {"alice": {42: [REPO]}, "bob": {42: [REPO]}}
        self.settings = replace(settings, api_url="http://github.test/api/v3", board=board_settings_for(world))
        assert self.settings.board is not None
        self.board = Board(self.settings.board, self.settings, world.app, [GRAPHS], world.fake.transport())
        app = FastAPI()
        app.include_router(board_router(self.board))
        self.client = TestClient(app)

    def start(self, repo: str, issue: int, title: str = "Add a feature") -> None:
        payload = example("issues", "labeled.payload.json")
        payload["repository"]["full_name"] = repo
        payload["label"] = {**payload["label"], "name": "feature-request"}
        payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
        payload["issue"] = {
            **payload["issue"],
            "number": issue,
            "title": title,
            "labels": [{"name": "feature-request"}],
        }
        self.fake.permissions[(repo, "alice")] = "write" if repo == REPO else "admin"
        assert self.world.deliver("issues", payload).value == "handled"

    def sign_in(self, login: str) -> httpx.Response:
        """The browser's way through GitHub's web flow: the board's redirect, GitHub's, the callback."""
        self.fake.oauth_login = login
        to_github = self.client.get("/board/login", follow_redirects=False)
        assert to_github.status_code == 302
        back = self.fake.handle(httpx.Request("GET", to_github.headers["location"]))
        assert back.status_code == 302
        callback = httpx.URL(back.headers["location"])
        return self.client.get(f"{callback.path}?{callback.query.decode()}", follow_redirects=False)

    def csrf(self) -> str:
        page = self.client.get("/board").text
        return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]

    def act(self, action: str, run: str = "issue-1", repo: str = REPO, **fields: str) -> httpx.Response:
        form = {"csrf": self.csrf(), "repo": repo, "run": run, "action": action, **fields}
        return self.client.post("/board/action", data=form, follow_redirects=False)

    def record(self, run: str = "issue-1", repo: str = REPO) -> dict[str, Any]:
        files = self.fake.files_at(repo, "interlock/state")
        data: dict[str, Any] = json.loads(files[f"runs/{run}.json"])
        return data

    def actions(self, run: str = "issue-1") -> list[dict[str, Any]]:
        files = self.fake.files_at(REPO, "interlock/state")
        return [json.loads(text) for path, text in sorted(files.items()) if path.startswith(f"runs/{run}/actions/")]


@pytest.fixture
def site(settings: ServiceSettings) -> Iterator[Site]:
    board_data.RUNS_CACHE.clear()
    board_data.PERMISSION_CACHE.clear()
    made = Site(World(settings), settings)
    made.start(REPO, 1, EVIL)
    made.start(SECRET_REPO, 7, "The secret plan")
    yield made
    assert made.fake.problems == []  # every REST request matched GitHub's OpenAPI description


def test_without_oauth_every_board_route_is_404(settings: ServiceSettings) -> None:
    # the board is off, never open, unless the App's OAuth client is configured
    assert settings.board is None
    client = TestClient(create_app(settings, World(settings).router))
    for method, path in (
        ("GET", "/board"),
        ("GET", "/board/login"),
        ("GET", "/board/callback"),
        ("POST", "/board/action"),
        ("POST", "/board/signout"),
    ):
        assert client.request(method, path).status_code == 404
    assert settings_from_env(env_with({})).board is None


def env_with(extra: dict[str, str]) -> dict[str, str]:
    from tests.webhooks.conftest import SECRET, pem_key

    return {
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": pem_key(),
        "GITHUB_WEBHOOK_SECRET": SECRET.decode(),
        **extra,
    }


def test_the_board_settings_come_from_the_environment_and_are_refused_when_half_set() -> None:
    on = {
        "INTERLOCK_OAUTH_CLIENT_ID": "Iv1.x",
        "INTERLOCK_OAUTH_CLIENT_SECRET": "shh",
        "INTERLOCK_SESSION_SECRET": "k" * 32,
        "INTERLOCK_SERVICE_URL": "https://interlock.example.com/",
    }
    board = settings_from_env(env_with(on)).board
    assert board is not None and board.callback_url == "https://interlock.example.com/board/callback"
    assert board.secure and board.web_url == "https://github.com" and "shh" not in repr(board)
    with pytest.raises(SettingsError) as refused:
        settings_from_env(env_with({**on, "INTERLOCK_OAUTH_CLIENT_SECRET": "", "INTERLOCK_SESSION_SECRET": "short"}))
    assert any("set together" in p for p in refused.value.problems)
    assert any("INTERLOCK_SESSION_SECRET must be 32 characters" in p for p in refused.value.problems)
    problems: list[str] = []
    board_settings({**on, "INTERLOCK_SERVICE_URL": "", "GITHUB_WEB_URL": "ftp://x"}, problems)
    assert len(problems) == 2 and all("is not an http(s) URL" in p for p in problems)


def test_sign_in_shows_only_the_runs_of_repositories_the_person_can_access(site: Site) -> None:
    # SPEC W1: every run the person can see, with origin, team, graph, step, state, age and cost
    assert 'href="/board/login"' in site.client.get("/board").text  # not signed in: only the sign-in link
    signed = site.sign_in("alice")
    assert signed.status_code == 303 and signed.headers["location"] == "/board"
    cookie = signed.headers["set-cookie"]
    assert f"{SESSION_COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Path=/board" in cookie and "Max-Age=28800" in cookie and "Secure" not in cookie
    page = site.client.get("/board").text
    assert 'data-run="octo/app:issue-1"' in page and "secret" not in page.replace("octo/secret", "")
    assert "octo/secret:issue-7" not in page and "The secret plan" not in page
    assert '<a href="http://github.test/octo/app/issues/1">octo/app#1</a>' in page
    assert "<td>small</td><td>build</td>" in page and "running" in page and "$0.00" in page
    assert "<script" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in page
    assert '<meta http-equiv="refresh" content="15">' in page
    assert site.fake.user_tokens and not any(t in cookie for t in site.fake.user_tokens)  # the token is not kept


def test_a_callback_whose_state_is_not_this_browsers_is_refused(site: Site) -> None:
    site.fake.oauth_login = "alice"
    site.client.get("/board/login", follow_redirects=False)
    forged = site.fake.handle(
        httpx.Request("GET", "http://github.test/login/oauth/authorize?client_id=Iv1.board&redirect_uri=x&state=evil")
    )
    code = httpx.URL(forged.headers["location"]).params["code"]
    answer = site.client.get(f"/board/callback?code={code}&state=evil", follow_redirects=False)
    assert answer.status_code == 403 and SESSION_COOKIE not in answer.headers.get("set-cookie", "")
    assert "did not start in this browser" in answer.text
    stranger = TestClient(site.client.app)  # no sign-in cookie at all
    assert stranger.get(f"/board/callback?code={code}&state=evil").status_code == 403
    used = site.sign_in("alice")  # a code is exchanged once
    assert used.status_code == 303


def test_pause_and_resume_drive_the_run_as_the_comment_commands_do_and_are_journaled(site: Site) -> None:
    # SPEC J4, J3, W1: pause is `/interlock stop`, resume `/interlock resume`, by the signed-in person
    site.sign_in("alice")
    paused = site.act("pause")
    assert paused.status_code == 303 and "done=pause" in paused.headers["location"]
    assert site.record()["stop_requested"] is True
    assert site.world.job_done(1, 1, "build", "Built.\nVERDICT: PASS").value == "handled"
    assert site.record()["status"] == Status.INTERRUPTED
    page = site.client.get("/board").text
    assert 'data-action="resume"' in page and 'data-action="pause"' not in page
    before = len(site.fake.dispatches)
    assert site.act("resume").status_code == 303
    assert site.record()["status"] == Status.RUNNING and len(site.fake.dispatches) == before + 1  # a job again
    status_comment = site.fake.comments[int(site.record()["links"]["status_comment"])]["body"]
    assert "Interlock run `issue-1` — running" in status_comment  # edited as after the comment command
    journal = site.actions()
    assert [(a["action"], a["by"], a["command"]) for a in journal] in (
        [("pause", "alice", "/interlock stop"), ("resume", "alice", "/interlock resume")],
        [("resume", "alice", "/interlock resume"), ("pause", "alice", "/interlock stop")],
    )
    assert all(a["key"] in site.record()["applied"] for a in journal)
    assert site.act("pause", run="issue-1").status_code == 303 and site.act("cancel").status_code == 303
    assert site.record()["status"] == Status.CANCELLED
    refused = site.act("resume")  # the engine's own refusal, said; nothing changed
    assert refused.status_code == 409 and "cannot apply Resume: the run is cancelled" in refused.text


def test_forged_actions_are_refused_with_403_and_change_nothing(site: Site) -> None:
    site.sign_in("alice")
    version = site.record()["version"]
    token = site.csrf()
    anonymous = TestClient(site.client.app)
    base = {"repo": REPO, "run": "issue-1", "action": "cancel"}
    assert anonymous.post("/board/action", data={**base, "csrf": token}).status_code == 403  # no session
    assert site.client.post("/board/action", data=base).status_code == 403  # no CSRF token
    assert site.client.post("/board/action", data={**base, "csrf": token + "x"}).status_code == 403
    hidden = site.client.post("/board/action", data={**base, "repo": SECRET_REPO, "run": "issue-7", "csrf": token})
    assert hidden.status_code == 403 and "cannot see" in hidden.text  # alice is admin there, but cannot see it here
    assert site.client.post("/board/action", content=b"\xff\xfe", headers={"content-type": "x"}).status_code == 403
    site.client.cookies.set(SESSION_COOKIE, site.client.cookies[SESSION_COOKIE][:-2] + "AA", path="/board")
    assert site.client.post("/board/action", data={**base, "csrf": token}).status_code == 403  # an edited cookie
    assert site.record()["version"] == version and site.record(run="issue-7", repo=SECRET_REPO)["status"] == "running"
    assert site.actions() == []


def test_a_person_without_write_permission_sees_no_buttons_and_cannot_act(site: Site) -> None:
    site.sign_in("bob")  # read permission on octo/app
    page = site.client.get("/board").text
    assert 'data-run="octo/app:issue-1"' in page and "data-action" not in page and "/board/action" not in page
    refused = site.act("pause")
    assert refused.status_code == 403 and "only people with write permission" in refused.text
    assert site.record()["stop_requested"] is False and site.actions() == []


def test_filters_and_the_selected_runs_picture(site: Site) -> None:
    # SPEC W4: the Mermaid source of the run's graph, its current node marked
    site.fake.user_repos["alice"] = {42: [REPO, SECRET_REPO]}
    site.sign_in("alice")
    page = site.client.get("/board").text
    assert 'data-run="octo/secret:issue-7"' in page and 'data-run="octo/app:issue-1"' in page
    only = site.client.get("/board", params={"repo": SECRET_REPO}).text
    assert 'data-run="octo/secret:issue-7"' in only and 'data-run="octo/app:issue-1"' not in only
    assert 'id="empty"' in site.client.get("/board", params={"state": "done"}).text
    assert 'data-run="octo/app:issue-1"' in site.client.get("/board", params={"team": "(default)"}).text
    shown = site.client.get("/board", params={"run": "octo/app:issue-1"}).text
    assert '<pre class="mermaid">flowchart TD' in shown and "class s0 current" in shown and "visits 1/3" in shown
    assert 'class="selected"' in shown
    # the picture drawn on the server as SVG, the Mermaid source below it
    drawing = ET.fromstring(shown[shown.index("<svg") : shown.index("</svg>") + len("</svg>")])
    boxes = {g.get("data-stage"): g for g in drawing.iter(f"{SVG}g") if "stage" in (g.get("class") or "").split()}
    record = site.record()
    assert record["visits"] and set(record["visits"]) <= set(boxes) and len(boxes) >= 2
    assert "current" in (boxes[record["stage"]].get("class") or "") and "visits 1/3" in "".join(drawing.itertext())
    assert shown.index("</svg>") < shown.index("<details><summary>Mermaid source</summary><pre")
    assert "No run" in site.client.get("/board", params={"run": "octo/app:issue-99"}).text


def test_the_svg_picture_passes_the_pages_redactor_and_escapes_every_name() -> None:
    # SPEC W4: a stage name is a person's text; a token in it is masked, markup in it is text
    from app.engine.graph.validate import parse_graph
    from app.redact import Redactor
    from app.webhooks.board.page import View, board_page
    from tests.helpers import edge, graph, node

    token = "ghp_" + "a" * 36
    named = f"{EVIL} {token}"
    drawn = parse_graph(graph([node(named)], [edge(named, "PASS", "__end__")], entry=named))
    picture = board_data.Picture("flowchart TD", drawn, named, {named: 1})
    view = View(
        "alice", "c", "https://github.com", [], [], [], {}, "octo/app:issue-1", picture, redact=Redactor({}).text
    )
    shown = board_page(view)
    drawing = shown[shown.index("<svg") : shown.index("</svg>") + len("</svg>")]
    assert token not in shown and "[redacted]" in drawing and "&lt;script&gt;" in drawing
    assert "<script" not in shown and ET.fromstring(drawing).find(f"{SVG}g[@class='stage current']") is not None


def test_the_session_cookie_is_signed_expires_and_is_secure_over_https(site: Site) -> None:
    signer = Signer(b"s" * 32)
    from app.webhooks.board.session import Session

    session = Session("alice", {42: [REPO]}, expires=2_000_000_000.0)
    sealed = signer.session_cookie(session)
    assert signer.session(sealed, now=1_999_999_999.0) == session
    assert signer.session(sealed, now=2_000_000_000.0) is None  # expired
    assert Signer(b"t" * 32).session(sealed, now=1.0) is None  # another secret
    assert signer.session(sealed.replace(".", "x.", 1), now=1.0) is None
    assert not signer.csrf_valid(session, "é") and signer.csrf_valid(session, signer.csrf(session))
    assert signer.open("state", signer.seal("session", {"a": 1})) is None  # a value signed for another purpose
    https = replace(site.board.board, service_url="https://interlock.example.com")
    site.board.board = https
    cookie = site.client.get("/board/login", follow_redirects=False).headers["set-cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "Max-Age=600" in cookie  # the sign-in state: 10 minutes


def test_signing_in_again_refreshes_the_repositories_shown(site: Site) -> None:
    site.sign_in("alice")
    assert "octo/secret:issue-7" not in site.client.get("/board").text
    site.fake.user_repos["alice"] = {42: [REPO, SECRET_REPO]}  # the App was given octo/secret for alice
    assert "octo/secret:issue-7" not in site.client.get("/board").text  # the session names what it named
    site.sign_in("alice")
    assert 'data-run="octo/secret:issue-7"' in site.client.get("/board").text


def test_the_readme_describes_the_board_as_it_is() -> None:
    from app.webhooks.board import page as board_page
    from app.webhooks.board import session as board_session
    from app.webhooks.board import settings as configured
    from tests.helpers import ROOT

    text = doc("operating/board.md")
    section = " ".join(text.split("## Web board", 1)[1].split("\n## ", 1)[0].split())
    for name in ("INTERLOCK_OAUTH_CLIENT_ID", "INTERLOCK_OAUTH_CLIENT_SECRET", "INTERLOCK_SESSION_SECRET",
                 "INTERLOCK_SERVICE_URL", "GITHUB_WEB_URL", "INTERLOCK_BOARD_CACHE_S"):  # fmt: skip
        assert f"`{name}`" in section and name in (ROOT / "app/webhooks/board/settings.py").read_text()
    assert "set the Callback URL to `<service>/board/callback`" in section
    assert f"{configured.SECRET_MIN} characters or more" in section
    assert "10 by default" in section and configured.DEFAULT_CACHE_S == 10
    assert f"for {board_session.STATE_S // 60} minutes" in section
    assert f"an expiry of {board_session.SESSION_S // 3600} hours" in section
    assert f"reloads itself every {board_page.REFRESH_S} seconds" in section
    assert "`HttpOnly`, `SameSite=Lax`, limited to `/board`, and `Secure`" in section
    assert "every `/board` route answers 404" in section and "is refused with 403 and changes nothing" in section
    assert "`/interlock stop`, `resume`, `retry` and `abandon`" in section
    assert "`runs/<run>/actions/<key>.json`" in section and "answered 409" in section
    assert "two API calls per repository" in section
    assert "a picture drawn on the server as SVG" in section and "its Mermaid source is folded below it" in section
    assert "the current stage highlighted" in section and "loops drawn as curves on the side" in section
    from app.webhooks.board.web import COMMANDS

    assert COMMANDS == {"pause": "stop", "resume": "resume", "retry": "retry", "cancel": "abandon"}
    ci = (ROOT / ".ci" / "run").read_text()  # the headless browser the board's tests drive is installed by CI itself
    assert "packages+=(chromium)" in ci and "packages+=(chromium-driver)" in ci
    assert 'apt-get install -y -qq "${packages[@]}"' in ci


def test_a_repositorys_runs_are_kept_for_the_cache_setting(site: Site) -> None:
    # INTERLOCK_BOARD_CACHE_S: 10 s by default; a second page within it reads no run of GitHub again
    site.sign_in("alice")
    site.client.get("/board")
    reads = len(site.fake.requests)
    site.client.get("/board")
    assert len(site.fake.requests) == reads  # runs and permission kept
    site.board.board = replace(site.board.board, cache_s=0.0)
    site.client.get("/board")
    read_again = [f"{r.method} {r.url.path}" for r in site.fake.requests[reads:]]
    assert read_again == ["GET /api/v3/repos/octo/app/contents/runs", "POST /api/graphql"]  # two calls
    assert board_settings({**BOARD_ENV, "INTERLOCK_BOARD_CACHE_S": "0"}, []) is not None
    problems: list[str] = []
    assert board_settings({**BOARD_ENV, "INTERLOCK_BOARD_CACHE_S": "nan"}, problems).cache_s == 10.0  # type: ignore[union-attr]
    assert problems == ["INTERLOCK_BOARD_CACHE_S='nan' is not a number of seconds from 0 to 3600"]


BOARD_ENV = {
    "INTERLOCK_OAUTH_CLIENT_ID": "Iv1.x",
    "INTERLOCK_OAUTH_CLIENT_SECRET": "shh",
    "INTERLOCK_SESSION_SECRET": "k" * 32,
    "INTERLOCK_SERVICE_URL": "https://interlock.example.com/",
}


def test_cancel_on_the_board_moves_the_teams_queue_as_the_comment_does(site: Site) -> None:
    # SPEC U5: a run cancelled from the board ends, and the next trigger waiting for its team starts
    from app.webhooks import shell

    site.fake.commit_file(
        REPO,
        "main",
        ".github/interlock.yml",
        "base: develop\ndefault_graph: small\nteams:\n  core:\n    concurrency: 1\n",
    )
    shell.CONFIG_CACHE.clear()
    site.start(REPO, 11, "First")
    site.start(REPO, 12, "Second")
    assert "runs/issue-11.json" in site.fake.files_at(REPO, "interlock/state")
    assert "runs/issue-12.json" not in site.fake.files_at(REPO, "interlock/state")  # waiting in the queue
    site.sign_in("alice")
    assert site.act("cancel", run="issue-11").status_code == 303
    assert site.record("issue-11")["status"] == Status.CANCELLED
    assert site.record("issue-12")["status"] == Status.RUNNING


def test_a_repository_github_fails_to_read_is_a_note_and_an_action_github_fails_is_502(site: Site) -> None:
    site.fake.user_repos["alice"] = {42: [REPO, SECRET_REPO]}
    site.sign_in("alice")
    site.fake.fail("POST", "/graphql", 404, times=10)  # GraphQL unreachable: githubkit's own exception
    page = site.client.get("/board")
    assert page.status_code == 200 and page.text.count("could not be read") == 2
    site.fake.faults.clear()
    token = site.csrf()
    site.fake.fail("POST", "/graphql", 404, times=10)
    answer = site.client.post("/board/action", data={"csrf": token, "repo": REPO, "run": "issue-1", "action": "pause"})
    assert answer.status_code == 502 and "nothing changed" in answer.text
    site.fake.faults.clear()
    assert site.record()["stop_requested"] is False


def test_signing_out_needs_the_csrf_token(site: Site) -> None:
    site.sign_in("alice")
    site.client.post("/board/signout", data={"csrf": "forged"})
    assert 'id="login"' in site.client.get("/board").text  # a forged sign-out does nothing
    site.client.post("/board/signout", data={"csrf": site.csrf()})
    assert 'id="sign-in"' in site.client.get("/board").text
