"""The web board attacked as a hostile user would (issue 14): each test shows a defect found, now fixed."""

from __future__ import annotations

import json

from tests.github.test_flows import REPO
from tests.webhooks.test_board import Site, site  # noqa: F401  (the fixture)

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def test_a_token_in_a_stored_run_never_reaches_the_board_page(site: Site) -> None:  # noqa: F811
    # COMMON: app/redact.py on every output path. The state branch is editable by hand (and a run started
    # elsewhere may carry text never masked): the page masks what it shows, as comments do.
    files = site.fake.files_at(REPO, "interlock/state")
    record = json.loads(files["runs/issue-1.json"])
    record["request"]["title"] = f"leak {TOKEN}"
    record["team"] = f"team-{TOKEN}"
    site.fake.seed_branch(REPO, "interlock/state", {**files, "runs/issue-1.json": json.dumps(record)})
    site.sign_in("alice")
    page = site.client.get("/board", params={"run": "octo/app:issue-1"}).text
    assert 'data-run="octo/app:issue-1"' in page and "leak [redacted]" in page
    assert TOKEN not in page and TOKEN[:12] not in page


def test_an_action_github_fails_to_carry_out_is_not_called_unchanged_and_trying_again_finishes_it(
    site: Site,  # noqa: F811
) -> None:
    # SPEC GH8: a transition saved whose effects GitHub failed is carried out by the same key, as a redelivery is.
    # The board's click has no redelivery: it said "nothing changed" while the run was cancelled on the state
    # branch, and clicking again was refused (the run is over), so its issue never showed it.
    site.sign_in("alice")
    site.fake.fail("PATCH", "/issues/comments/", 502, times=10)  # the status comment cannot be edited
    failed = site.act("cancel")
    site.fake.faults.clear()
    assert site.record()["status"] == "cancelled"  # saved on interlock/state before GitHub failed
    assert failed.status_code == 502 and "nothing changed" not in failed.text and "was recorded" in failed.text
    again = {
        name: failed.text.split(f'name="{name}" value="', 1)[1].split('"', 1)[0]
        for name in ("csrf", "repo", "run", "action", "key")
    }
    finished = site.client.post("/board/action", data=again, follow_redirects=False)
    assert finished.status_code == 303 and "done=cancel" in finished.headers["location"]
    status_comment = site.fake.comments[int(site.record()["links"]["status_comment"])]["body"]
    assert "cancelled" in status_comment
    assert [a["action"] for a in site.actions()] == ["cancel"]  # one action, journaled once


def test_the_readme_says_how_a_failed_action_is_finished_and_that_the_page_is_redacted() -> None:
    from tests.helpers import doc

    text = doc("operating/board.md")
    section = " ".join(text.split("## Web board", 1)[1].split("\n## ", 1)[0].split())
    assert "the answer is a 502 saying the action was recorded, with a **Try again** button" in section
    assert "a token in a run's title is shown as `[redacted]`" in section


def test_buttons_after_a_permission_was_removed_are_refused_and_the_readme_says_how_long_they_show(
    site: Site,  # noqa: F811
) -> None:
    # README "### Web board": "nobody without it sees the buttons" was not true for PERMISSION_TTL_S seconds;
    # the sentence now says so, and the action itself is refused at once.
    from app.webhooks.board.data import PERMISSION_TTL_S
    from tests.helpers import doc

    site.sign_in("alice")
    assert 'data-action="pause"' in site.client.get("/board").text
    site.fake.permissions[(REPO, "alice")] = "read"  # write removed after the page was read
    assert 'data-action="pause"' in site.client.get("/board").text  # kept PERMISSION_TTL_S
    refused = site.act("pause")
    assert refused.status_code == 403 and site.record()["stop_requested"] is False
    text = doc("operating/board.md")
    section = " ".join(text.split("## Web board", 1)[1].split("\n## ", 1)[0].split())
    assert f"for {PERMISSION_TTL_S:.0f} seconds, so buttons may show that long" in section
    assert "a person removed from one still sees its runs until the session ends" in section


def test_a_run_id_with_a_trailing_newline_is_refused_as_a_bad_run_not_looked_up(site: Site) -> None:  # noqa: F811
    # `$` matches before a final newline: "issue-1\n" passed the check and reached GitHub as a path
    # (runs/issue-1\n.json); the board refuses it as it refuses "../x", as the board issue's commands do
    site.sign_in("alice")
    calls = len(site.fake.requests)
    for run in ("issue-1\n", "issue-1\r\n", "/".join(("..", "x")), "a%2Fb"):
        answer = site.act("pause", run=run)
        assert answer.status_code == 400 and "Unknown action" in answer.text
    assert not [r for r in site.fake.requests[calls:] if "\n" in r.url.path or "runs/issue-1%0A" in str(r.url)]
    assert site.record()["stop_requested"] is False and site.actions() == []


def test_a_service_url_with_a_path_is_refused_at_start() -> None:
    # The cookies are limited to /board and every redirect names /board: behind a path prefix
    # (https://host/interlock) the sign-in state cookie never came back, and every sign-in was refused with 403.
    from app.webhooks.board.settings import board_settings
    from tests.helpers import doc

    on = {
        "INTERLOCK_OAUTH_CLIENT_ID": "Iv1.x",
        "INTERLOCK_OAUTH_CLIENT_SECRET": "shh",
        "INTERLOCK_SESSION_SECRET": "k" * 32,
    }
    for url in ("https://host.example/interlock", "https://host.example/?x=1"):
        problems: list[str] = []
        board_settings({**on, "INTERLOCK_SERVICE_URL": url}, problems)
        assert problems and "has a path" in problems[0]
    fine: list[str] = []
    assert board_settings({**on, "INTERLOCK_SERVICE_URL": "https://host.example:8443/"}, fine) is not None
    assert fine == []
    section = " ".join(doc("operating/board.md").split("## Web board", 1)[1].split())
    assert "or when the service URL has a path." in section and "without a path" in section
