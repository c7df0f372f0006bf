# ruff: noqa: F811 - `world` is the imported fixture, which pytest passes by name
"""Supervision on GitHub (SPEC U6) against a hostile user: secrets cut at a limit, citations of folders and of
paths carrying URL syntax, and two replicas supervising one ended run. Each test was a strict xfail of
tests/github/test_review_issue13.py; it fails without its fix."""

from __future__ import annotations

from app.webhooks import supervision
from tests.github.test_flows import REPO, World, world  # noqa: F401 - fixture
from tests.github.test_supervision import ENDED, TEAMS, supervision_issues
from tests.github.test_team_queue import configure, label_payload


def test_a_secret_cut_at_the_decision_files_limit_is_not_half_shown_in_the_supervision_issue(world: World) -> None:
    # SPEC J5 and COMMON (nothing stored or printed carries a secret), README "redacted and cut": the supervision
    # issue's body (public on the repository) carries the ended run's decision file. app/webhooks/supervision.py
    # _decision_lines cuts it to 4000 bytes BEFORE the redactor runs (journal_context), so a token straddling the
    # cut keeps 19 of its characters, too few for the redactor's pattern (`ghp_` + 20 or more): they are shown
    configure(world, TEAMS.format(n=1))
    world.deliver("issues", label_payload(ENDED))
    world.job_done(ENDED, 1, "build", "", store_record=False)  # the job failed: the run escalates
    decision = f"runs/issue-{ENDED}/decision.md"
    token = "ghp_" + "Zq3vK9mW2xT7pL4nR8sY1cB6dF0hJ5gAe2Uo"
    padding = "x" * (supervision.DECISION_BYTES - 4 - 19)
    world.fake.commit_file(REPO, "interlock/state", decision, f"{padding}{token}\n")
    world.comment(ENDED, "/interlock abandon")
    [opened] = supervision_issues(world)
    assert token[:23] not in opened["body"], "19 characters of the token are in the issue"
