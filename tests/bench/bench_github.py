"""GitHub API calls each kind of transition costs, counted on the stand-in GitHub: reads, writes and the writes
GitHub counts as content-creating, and the mission transitions an hour each of GitHub's quotas allows an
installation (5,000 requests an hour; 500 content-creating requests an hour and 80 a minute), naming the one that
binds. Target (issue 16): a mission transition makes at most 4 requests, at most 3 of them content-creating.

Run: ``python -m tests.bench.bench_github`` (prints a table; not a test).
https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
"""

from __future__ import annotations

import sys
from collections import Counter

import httpx

from tests.github.fake_github import mutation_of
from tests.github.test_flows import World, example
from tests.webhooks.conftest import pem_key

TARGET = 4  # requests a mission transition makes at most
CONTENT_TARGET = 3  # of which content-creating
HOURLY = 5_000
CONTENT_HOURLY = 500  # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
CONTENT_PER_MINUTE = 80


NO_BOARD_CONFIG = "base: develop\ndefault_graph: small\ngatekeepers: [carol]\nboard_issue: false\n"


def measure(board: bool = True, pushed: bool = False) -> list[tuple[str, list[str]]]:
    """The calls of each step of one run; ``board``: with the pinned board issue on (the default), or off
    (``board_issue: false``); ``pushed``: the review's job pushed a commit to the run branch before it ended, as
    a mission that changes files does (its head moves, and the check run follows the head)."""
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
        before = len(world.fake.requests)
        action()  # type: ignore[operator]
        steps.append((name, named_calls(world.fake.requests[before:], world.fake.base)))

    issue = 0

    def label() -> None:
        nonlocal issue
        issue = world.label()[1]

    counted("issue labelled: run started", label)
    counted("job completed: mission -> gate (PR opened)", lambda: world.job_done(issue, 1, "build", "built"))
    counted("review approved: gate -> next mission", lambda: world.review(issue, "approved"))
    if pushed:
        world.fake.commit_file("octo/app", f"interlock/issue-{issue}", "review.md", "findings\n")
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


def named_calls(requests: list[httpx.Request], base: str) -> list[str]:
    """``METHOD path`` of each request (tokens left out); a GraphQL mutation says which: ``#name@repo``."""
    return [
        f"{r.method} {r.url.path.removeprefix(base)}{mutation_of(r)}"
        for r in requests
        if not r.url.path.endswith("/access_tokens")
    ]


def kind(call: str) -> str:
    """``POST trees``, ``PATCH 9001``, ``POST createCommitOnBranch``: a call in a few words."""
    path, _, mutation = call.partition("#")
    return f"{path.split(' ', 1)[0]} {mutation.split('@')[0] or path.split('/')[-1]}"


def creates_content(call: str) -> bool:
    """A request GitHub counts against its content-creating limits: every REST write (POST, PATCH, PUT, DELETE:
    all counted, the cautious reading of GitHub's rule) and every GraphQL mutation; GraphQL queries are reads."""
    if call.startswith("GET "):
        return False
    return "#" in call if "/graphql" in call else True


def figures(calls: list[str]) -> tuple[int, int, int]:
    """Reads, writes and content-creating writes of a transition (every write here creates content)."""
    content = len([call for call in calls if creates_content(call)])
    return len(calls) - content, content, content


def per_hour(calls: int, content: int) -> list[tuple[str, int]]:
    """Mission transitions an hour under each quota, the binding one first."""
    limits = [
        (f"{HOURLY:,} requests an hour", HOURLY // max(calls, 1)),
        (f"{CONTENT_HOURLY} content-creating requests an hour", CONTENT_HOURLY // max(content, 1)),
        (f"{CONTENT_PER_MINUTE} content-creating requests a minute", CONTENT_PER_MINUTE * 60 // max(content, 1)),
    ]
    return sorted(limits, key=lambda limit: limit[1])


def main() -> int:
    for board in (True, False):
        steps = measure(board)
        title = "transition (the board issue on, the default)" if board else "with board_issue: false"
        print(f"{title:<46} {'calls':>5} {'reads':>5} {'writes':>6} {'content':>7}  what")
        for name, calls in steps:
            reads, writes, content = figures(calls)
            kinds = Counter(kind(call) for call in calls)
            what = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in kinds.items())
            print(f"{name:<46} {len(calls):>5} {reads:>5} {writes:>6} {content:>7}  {what}")
    for board, pushed in ((True, False), (False, False), (True, True)):
        steps = measure(board, pushed)
        calls = next(calls for name, calls in steps if name.startswith("job completed: mission -> FAIL"))
        reads, writes, content = figures(calls)
        met = len(calls) <= TARGET and content <= CONTENT_TARGET
        limits = per_hour(len(calls), content)
        case = " (board_issue: false)" if not board else " (the job pushed a commit)" if pushed else ""
        print(
            f"mission transition{case}: {len(calls)} calls, {reads} reads, "
            f"{writes} writes, {content} content-creating (target <= {TARGET} calls, <= {CONTENT_TARGET} "
            f"content-creating): {'OK' if met else 'MISSED'}; mission transitions an hour per installation: "
            + "; ".join(f"{n:,} under {what}" for what, n in limits)
            + f"; the limit that binds: {limits[0][0]}"
        )
        if any(kind(call) == "POST createCheckRun" for call in calls):
            print(
                f"  {', '.join(kind(call) for call in calls)}: createCheckRun carries updateCheckRun in the same "
                "request; GitHub's rule counts requests, and counted by mutation this would be "
                f"{content + 1} content-creating"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
