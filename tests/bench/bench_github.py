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


BOARD_CONFIG = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nboard_issue: true\n"


def measure(board: bool = False) -> list[tuple[str, list[str]]]:
    """The calls of each step of one run; ``board``: with the pinned board issue on (``board_issue: true``)."""
    from app.runner import driver
    from app.webhooks import shell
    from app.webhooks.settings import ServiceSettings

    driver.GRAPH_CACHE.clear()  # each measure reads the stored graph once, as a fresh service does

    world = World(ServiceSettings("1", pem_key(), b"s", app_slug="interlock-app"))
    if board:
        world.fake.commit_file("octo/app", "main", ".github/interlock.yml", BOARD_CONFIG)
        shell.CONFIG_CACHE.clear()
        world.fake.issues += [{"repo": "octo/other", "title": "other", "body": ""}]  # the board is not issue #1
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
        counted("another issue's run started (board issue exists)", lambda: label_issue(world, issue + 1))
    return steps


def label_issue(world: World, number: int) -> None:
    payload = example("issues", "labeled.payload.json")
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": number, "labels": [{"name": "feature-request"}]}
    world.deliver("issues", payload)


def main() -> int:
    for board in (False, True):
        steps = measure(board)
        print(f"{'with the board issue' if board else 'transition':<46} {'calls':>5}  what")
        for name, calls in steps:
            kinds = Counter(call.split(" ", 1)[0] + " " + call.split("/")[-1] for call in calls)
            print(f"{name:<46} {len(calls):>5}  {', '.join(f'{k} x{v}' if v > 1 else k for k, v in kinds.items())}")
    steps = measure()
    mission = next(len(calls) for name, calls in steps if name.startswith("job completed: mission -> FAIL"))
    print(
        f"mission transition: {mission} calls (target <= {TARGET}): {'OK' if mission <= TARGET else 'MISSED'}; "
        f"{HOURLY // mission} mission transitions an hour per installation"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
