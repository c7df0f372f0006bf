"""GitHub API calls each kind of transition costs, counted on the stand-in GitHub (target: at most 6 per
mission transition; an installation has 5,000 an hour).

Run: ``python -m tests.bench.bench_github`` (prints a table; not a test).
"""

from __future__ import annotations

import sys
from collections import Counter

from tests.github.test_flows import World, example
from tests.webhooks.conftest import pem_key

TARGET = 6
HOURLY = 5_000
CONTENT_HOURLY = 500  # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api


NO_BOARD_CONFIG = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nboard_issue: false\n"


def measure(board: bool = True) -> list[tuple[str, list[str]]]:
    """The calls of each step of one run; ``board``: with the pinned board issue on (the default), or off
    (``board_issue: false``)."""
    from app.runner import driver
    from app.webhooks import shell
    from app.webhooks.settings import ServiceSettings

    driver.GRAPH_CACHE.clear()  # each measure reads the stored graph once, as a fresh service does

    world = World(ServiceSettings("1", pem_key(), b"s", app_slug="interlock-app"))
    if not board:
        world.fake.commit_file("octo/app", "main", ".github/interlock.yml", NO_BOARD_CONFIG)
        shell.CONFIG_CACHE.clear()
    steps: list[tuple[str, list[str]]] = []

    def counted(name: str, action: object) -> None:
        before = len(world.fake.calls())
        action()  # type: ignore[operator]
        steps.append((name, world.fake.calls()[before:]))

    issue = 0

    def label() -> None:
        nonlocal issue
        issue = world.label()[1]

    counted("issue labelled: run started", label)
    counted("job completed: mission -> gate (PR opened)", lambda: world.job_done(issue, 1, "build", "built"))
    counted("review approved: gate -> next mission", lambda: world.review(issue, "approved"))
    counted("job completed: mission -> FAIL -> mission", lambda: world.job_done(issue, 2, "review", "VERDICT: FAIL"))
    counted("comment command: /interlock stop", lambda: world.comment(issue, "/interlock stop"))
    if board:
        counted("a later run started (board issue exists)", lambda: label_issue(world, issue + 1))
    return steps


def label_issue(world: World, number: int) -> None:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": number, "labels": [{"name": "feature-request"}]}
    world.deliver("issues", payload)


def main() -> int:
    for board in (True, False):
        steps = measure(board)
        print(
            f"{'transition (the board issue on, the default)' if board else 'with board_issue: false':<46} "
            f"{'calls':>5}  what"
        )
        for name, calls in steps:
            kinds = Counter(call.split(" ", 1)[0] + " " + call.split("/")[-1] for call in calls)
            print(f"{name:<46} {len(calls):>5}  {', '.join(f'{k} x{v}' if v > 1 else k for k, v in kinds.items())}")
    for board in (True, False):
        calls = next(calls for name, calls in measure(board) if name.startswith("job completed: mission -> FAIL"))
        writes = len([call for call in calls if creates_content(call)])
        print(
            f"mission transition{'' if board else ' (board_issue: false)'}: {len(calls)} calls (target <= {TARGET}): "
            f"{'OK' if len(calls) <= TARGET else 'MISSED'}; {HOURLY // len(calls)} mission transitions an hour per "
            f"installation under {HOURLY:,} calls; {writes} create content: {CONTENT_HOURLY // writes} an hour "
            f"under GitHub's {CONTENT_HOURLY} content-creating requests, the limit that binds"
        )
    return 0


def creates_content(call: str) -> bool:
    """A write GitHub counts against its content-creating quota; the GraphQL calls here outside a run's first
    transition are reads (the snapshot, the branch's checks)."""
    return not call.startswith("GET ") and not call.endswith("/graphql")


if __name__ == "__main__":
    sys.exit(main())
