# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Issue 14 attacked as a hostile user would: decisions, the reports against GitHub, /metrics and traces."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from fastapi.testclient import TestClient

from app.cli.reports import HEADER_REFUSED, NOT_THE_API
from app.github import usage
from app.webhooks.api_metrics import ApiMetrics
from app.webhooks.router import Outcome
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example, retry_waits, world  # noqa: F401 - fixtures
from tests.github.test_remote_reports import STATE, app_env, interlock, served  # noqa: F401 - fixtures
from tests.helpers import doc
from tests.webhooks.conftest import settings, signed  # noqa: F401 - fixture
from tests.webhooks.queue_helpers import post_settled


def error_line(*args: str, **env: str) -> str:
    result = interlock(*args, **env)
    assert result.returncode == 2 and result.stdout == "", result
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize(
    "record",
    ["not json", "[]", '{"id": 5}', '"x"', json.dumps({"id": "issue-1", "status": ["x"]})],
)
def test_a_damaged_record_on_the_state_branch_is_one_line_and_exit_2(world: World, served: str, record: str) -> None:
    # issue 14, item 5: anyone with push access can rewrite the branch; a report says which file, in one line
    files = {**world.fake.files_at(REPO, STATE), "runs/issue-1.json": record}
    world.fake.seed_branch(REPO, STATE, files)
    for report in ("status", "journey", "money"):
        said = error_line(report, "issue-1", "--repo", REPO, **app_env(served))
        assert said.startswith("error: runs/issue-1.json on the state branch cannot be read: "), said


@pytest.mark.parametrize(
    "address",
    ["https://github.com/octo/app", "https://github.com/octo/app.git", "git@github.com:octo/app.git",
     "http://ghe.example.com/octo/app/"],
)  # fmt: skip
def test_a_repository_address_is_told_to_be_owner_and_name(address: str) -> None:
    # issue 14, item 5: a pasted address is neither a folder ("not a git repository") nor read as one
    said = error_line("journey", "issue-1", "--repo", address, GITHUB_TOKEN="t", GITHUB_API_URL="http://127.0.0.1:1")
    assert said == "error: --repo takes a folder or OWNER/NAME, not an address: --repo octo/app"


def test_a_token_that_is_no_header_value_is_never_shown(served: str) -> None:
    # credentials by allow-list, nothing printed carries one: the HTTP client's refusal quotes the header whole
    token = "sekrit-token-value\nX"
    said = error_line("status", "issue-1", "--repo", REPO, GITHUB_TOKEN=token, GITHUB_API_URL=served)
    assert "sekrit" not in said
    assert said == f"error: cannot reach GitHub for {REPO}: {HEADER_REFUSED}"


@pytest.mark.parametrize(
    ("body", "kind"),
    [("<html>Sign in</html>", "text/html"), ("{}", "application/json"), ('{"data": 5}', "application/json")],
)
def test_an_answer_that_is_not_githubs_api_is_one_line_and_exit_2(body: str, kind: str) -> None:
    # issue 14, item 5: a proxy's page or a wrong GITHUB_API_URL answers 200 with something else: one line, and
    # never blamed on the run's record
    with answering(body, kind) as url:
        said = error_line("status", "issue-1", "--repo", REPO, GITHUB_TOKEN="t", GITHUB_API_URL=url)
    assert said.startswith(f"error: the answer for {REPO} is not GitHub's API: {NOT_THE_API} ("), said


@contextmanager
def answering(body: str, kind: str) -> Iterator[str]:
    """A server on loopback answering ``body`` with 200 to every request, as a proxy's sign-in page does."""

    class Answer(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("remaining", ["\u00b2", "\u0663", "-1", "12 ", ""])
def test_an_odd_rate_limit_header_fails_no_call_and_shows_nothing(remaining: str) -> None:
    # SPEC W6: watching a call must never fail it; a header that is no plain count is no sample
    metrics = ApiMetrics()
    request = httpx.Request("GET", "https://api.github.com/repos/octo/app/issues/7")
    headers = [(b"x-ratelimit-remaining", remaining.encode("latin-1", "replace"))]
    usage.hook("7")(httpx.Response(200, headers=headers, request=request))
    assert metrics.remaining == {} and metrics.calls == {("GET", "repos/issues"): 1}


def test_a_damaged_run_record_fails_its_delivery_saying_how_to_fix_it(world: World, settings: ServiceSettings) -> None:
    # SPEC J1 and the README's "bad input": a record broken by hand on the state branch stops the deliveries of
    # its run with a failed record naming the file and the fix (never "handler failed; redeliver"), the file left
    # as it is;
    # once a person restores it, the redelivery goes on
    _, issue = world.label()
    path = f"runs/issue-{issue}.json"
    good = world.fake.files_at(REPO, "interlock/state")[path]
    world.fake.commit_file(REPO, "interlock/state", path, good[: len(good) // 2])  # cut short
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": "/interlock stop"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    body, headers = signed("issue_comment", payload, delivery="stop-1")
    record = post_settled(TestClient(create_app(settings, world.router)), body, headers)
    detail = record.outcome
    assert record.state == "failed", record
    assert f"{path} on the state branch cannot be read: not a run record" in detail
    assert f"`git log interlock/state -- {path}`" in detail
    assert world.fake.files_at(REPO, "interlock/state")[path] == good[: len(good) // 2]  # left as it is
    world.fake.commit_file(REPO, "interlock/state", path, good)  # a person restores it
    assert world.deliver("issue_comment", payload, delivery="stop-1") is Outcome.HANDLED
    text = " ".join(doc("operating/service.md").split())
    assert (
        "one that meets a run record on `interlock/state` that is no run record (edited by hand, cut short: the "
        "reason names the file and how to restore it from the branch's history; the file is left as it is). Fix the "
        "cause, then redeliver it" in text
    )
