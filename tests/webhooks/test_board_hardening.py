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
