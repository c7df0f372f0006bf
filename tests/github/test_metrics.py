"""/metrics after real, signed deliveries through the service against the stand-in GitHub (SPEC W6): runs by
status and team, transitions by kind, model calls, tokens and cost by ledger category, GitHub API calls by
method and kind, and each installation's remaining rate limit as GitHub's headers said; and bounded labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.record import Status
from app.github import usage
from app.webhooks import api_metrics, run_metrics
from app.webhooks.delivery import Delivery
from app.webhooks.router import Outcome
from app.webhooks.service import create_app
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, example
from tests.helpers import doc
from tests.webhooks.conftest import signed
from tests.webhooks.queue_helpers import delivered

TEAM_CONFIG = """base: develop
default_graph: small
gatekeepers: [carol]
teams:
  core:
    roles:
      dev: {capabilities: [coding], agent: claude, model: claude-haiku-4-5}
      lead: {fullAuthority: true}
"""


class ServedWorld(World):
    """The world of ``test_flows``, its deliveries signed and posted to the real service (``create_app``)."""

    def __init__(self, settings: ServiceSettings) -> None:
        super().__init__(settings)
        self.fake.commit_file(REPO, "main", ".github/interlock.yml", TEAM_CONFIG)
        self.service = TestClient(create_app(settings, self.router))

    def deliver(self, event: str, payload: dict[str, Any], delivery: str | None = None) -> Outcome:
        self.count += 1
        body, headers = signed(event, payload, delivery=delivery or f"delivery-{self.count}")
        status, answer = delivered(self.service, body, headers)  # a queued one: its settled record
        assert status in (200, 202) and answer.get("state") != "failed", answer
        return Outcome(answer["outcome"])

    def metrics(self) -> dict[str, float]:
        """Every sample of /metrics, by its series (``name{labels}``)."""
        text = self.service.get("/metrics").text
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"}

    def mission(self, issue: int, seq: int, stage: str, answer: str, tokens: int, cost: float | None) -> Outcome:
        record = {"seq": seq, "stage": stage, "status": "done", "answer": answer, "commits": 1, "duration_s": 3.0}
        record["usage"] = {"calls": 2, "input_tokens": tokens, "output_tokens": 5, "cost_usd": cost}
        record.update(agent="claude", model="claude-haiku-4-5")
        return self.job_done(issue, seq, stage, answer, record=json.dumps(record))


@pytest.fixture
def served(settings: ServiceSettings) -> Iterator[ServedWorld]:
    made = ServedWorld(settings)
    yield made
    assert made.fake.problems == []  # every request matches GitHub's own REST description


def test_metrics_show_runs_transitions_and_model_spend_after_real_deliveries(served: ServedWorld) -> None:
    # SPEC W6: runs by status and team, transitions by event kind, model calls and cost by ledger category
    _, issue = served.label()
    assert served.metrics()['interlock_runs{status="running",team="core"}'] == 1
    assert served.mission(issue, 1, "build", "built it", tokens=100, cost=0.25) is Outcome.HANDLED
    assert served.review(issue, "approved", body="Ship it") is Outcome.HANDLED
    assert served.mission(issue, 2, "review", "fine\nVERDICT: PASS", tokens=40, cost=0.5) is Outcome.HANDLED
    assert served.run(issue).status is Status.AWAITING_MERGE
    seen = served.metrics()
    assert seen['interlock_runs{status="awaiting_merge",team="core"}'] == 1
    assert seen['interlock_runs{status="running",team="core"}'] == 0  # reported once, so 0 rather than gone
    transitions = {k: v for k, v in seen.items() if k.startswith("interlock_transitions_total")}
    # the start, two missions, the approval, and the pull request linked to the run when the gate opened it
    assert transitions == {
        'interlock_transitions_total{event="Start"}': 1,
        'interlock_transitions_total{event="MissionFinished"}': 2,
        'interlock_transitions_total{event="GateApproved"}': 1,
        'interlock_transitions_total{event="Linked"}': 1,
    }
    assert seen['interlock_model_calls_total{category="deliver"}'] == 4
    assert seen['interlock_model_cost_usd_total{category="deliver"}'] == pytest.approx(0.75)
    assert seen['interlock_model_tokens_total{category="deliver",direction="input"}'] == 140
    assert seen['interlock_model_tokens_total{category="deliver",direction="output"}'] == 10
    ledger = served.run(issue).ledger.by_category
    assert [str(c) for c in ledger] == ["deliver"] and ledger["deliver"].input_tokens == 140  # the same figures
    asked = len(served.fake.requests)
    text = served.service.get("/metrics").text
    assert len(served.fake.requests) == asked  # a scrape reads nothing from GitHub or the state branches
    for name in re.findall(r"^\| `(interlock_[a-z_]+)\{", readme_section(), re.MULTILINE):
        assert f"# TYPE {name} " in text, name  # every series the README lists is there


def test_an_unknown_cost_adds_calls_and_tokens_but_no_cost(served: ServedWorld) -> None:
    # SPEC W6, P3: an unknown cost is never counted as 0 dollars spent, nor guessed
    _, issue = served.label()
    served.mission(issue, 1, "build", "built it", tokens=7, cost=None)
    seen = served.metrics()
    assert seen['interlock_model_calls_total{category="deliver"}'] == 2
    assert seen['interlock_model_tokens_total{category="deliver",direction="input"}'] == 7
    assert seen['interlock_model_cost_usd_total{category="deliver"}'] == 0
    assert served.run(issue).ledger.unknown_costs() == 1


def readme_section() -> str:
    text = doc("operating/metrics.md")
    return text.split("# Metrics\n", 1)[1]


def test_the_readme_states_the_bounds_the_code_keeps() -> None:
    # the README's figures are the code's
    said = " ".join(readme_section().split())
    assert f"at most {api_metrics.MAX_KINDS} kinds (later ones count as `other`)" in said
    assert f"at most {run_metrics.MAX_TEAMS} team names label the runs" in said
    assert f"the latest {run_metrics.MAX_RUNS:,} runs and {api_metrics.MAX_INSTALLATIONS:,} (installation" in said


def test_metrics_count_github_calls_and_follow_the_rate_limit_headers(served: ServedWorld) -> None:
    # SPEC W6: GitHub API calls by method and kind; the installation's remaining rate limit from x-ratelimit-*
    _, issue = served.label()
    served.mission(issue, 1, "build", "built it", tokens=1, cost=0.0)
    seen = served.metrics()
    calls = {k: v for k, v in seen.items() if k.startswith("interlock_github_api_calls_total")}
    assert sum(calls.values()) == len(served.fake.requests)  # every answer, the token exchanges included
    comments = [
        r for r in served.fake.requests if r.method == "POST" and re.search(r"/issues/\d+/comments$", r.url.path)
    ]
    assert seen['interlock_github_api_calls_total{method="POST",kind="repos/issues/comments"}'] == len(comments) > 0
    assert seen['interlock_github_api_calls_total{method="POST",kind="graphql"}'] >= 1
    assert not any("octo" in key or "issue-" in key or "interlock.yml" in key for key in calls)  # no names
    for resource in ("core", "graphql"):
        shown = seen[f'interlock_github_ratelimit_remaining{{installation="42",resource="{resource}"}}']
        assert shown == served.fake.rate_left[("42", resource)] < 5000
    served.app.as_app().app_identity()  # a call the App makes as itself, with its JWT
    as_app = served.metrics()['interlock_github_ratelimit_remaining{installation="app",resource="core"}']
    assert as_app == served.fake.rate_left[("app", "core")] < 5000
    served.fake.rate_left[("42", "core")] = 17  # the quota runs low: the next answers say so
    served.comment(issue, "/interlock stop")
    left = served.metrics()['interlock_github_ratelimit_remaining{installation="42",resource="core"}']
    assert left == served.fake.rate_left[("42", "core")] < 17


def test_rate_limit_gauge_is_not_made_up_when_github_sends_no_header() -> None:
    # SPEC W6: an answer without x-ratelimit-remaining leaves the gauge as GitHub last said it
    metrics = api_metrics.ApiMetrics()
    metrics.answer(usage.Answer("9", "GET", "repos/contents", 4999, "core"))
    metrics.answer(usage.Answer("9", "GET", "repos/contents", None, "core"))
    rendered = "\n".join(metrics.render())
    assert 'interlock_github_ratelimit_remaining{installation="9",resource="core"} 4999' in rendered
    assert 'interlock_github_api_calls_total{method="GET",kind="repos/contents"} 2' in rendered


def test_api_call_kinds_carry_no_names() -> None:
    # SPEC W6, GH9: owner, repository, paths, branches, labels and logins never become label values
    assert usage.kind_of("/api/v3/repos/issues/comments/issues/7/comments") == "repos/issues/comments"
    assert usage.kind_of("/repos/o/r/contents/.github/workflows/runs.yml") == "repos/contents"
    assert usage.kind_of("/repos/o/r/git/ref/heads/interlock/issue-1") == "repos/git/ref/heads"
    assert usage.kind_of("/repos/o/r/issues/3/labels/pulls") == "repos/issues/labels"
    assert usage.kind_of("/app/installations/42/access_tokens") == "app/installations/access_tokens"
    assert usage.kind_of("/api/graphql") == "graphql" and usage.kind_of("/made/up") == "other"


def test_labels_stay_bounded_under_a_flood(served: ServedWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC W6, GH9: runs, kinds and installations are capped, whatever arrives
    monkeypatch.setattr(run_metrics, "MAX_RUNS", 5)
    served.fake.commit_file(REPO, "main", ".github/interlock.yml", "base: develop\ndefault_graph: small\n")
    for issue in range(1, 9):  # 8 runs, each started by a signed label event
        payload = example("issues", "labeled.payload.json")
        payload["label"] = {**payload["label"], "name": "feature-request"}
        payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
        payload["issue"] = {**payload["issue"], "number": 100 + issue, "labels": [{"name": "feature-request"}]}
        assert served.deliver("issues", payload) is Outcome.HANDLED
    seen = served.metrics()
    assert seen['interlock_runs{status="running",team=""}'] == 5  # the 5 latest runs it saw, no more
    metrics = api_metrics.ApiMetrics()
    for index in range(5000):
        metrics.answer(usage.Answer(str(index), "GET", f"kind-{index}", index, f"resource-{index}"))
    rendered = metrics.render()
    assert len([line for line in rendered if "api_calls_total{" in line]) == api_metrics.MAX_KINDS + 1  # + other
    assert len([line for line in rendered if "remaining{" in line]) == api_metrics.MAX_INSTALLATIONS
    assert not any("resource-" in line for line in rendered)


def test_teams_beyond_the_cap_are_counted_as_other(served: ServedWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    # SPEC W6: at most MAX_TEAMS team names label a series
    monkeypatch.setattr(run_metrics, "MAX_TEAMS", 0)
    served.label()
    assert served.metrics()['interlock_runs{status="running",team="other"}'] == 1


def test_a_delivery_through_the_router_alone_is_seen_by_every_live_service(served: ServedWorld) -> None:
    # the metrics are per process: a transition saved by any shell of this process counts
    _, issue = served.label()
    served.router.dispatch(Delivery("issue_comment", "direct", comment_payload(issue)))
    assert served.metrics()['interlock_transitions_total{event="StopRequested"}'] == 1


def comment_payload(issue: int) -> dict[str, Any]:
    payload = example("issue_comment", "created.payload.json")
    payload["issue"] = {**payload["issue"], "number": issue}
    payload["comment"] = {**payload["comment"], "body": "/interlock stop", "created_at": "2099-01-02T00:00:00Z"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    return payload
