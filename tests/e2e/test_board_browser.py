"""The web board in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, which ``.ci/run``
installs), served by the real service (``interlock serve`` in its own process) against the GitHub stand-in on
loopback: the browser signs in through the stand-in's OAuth flow, sees only the repositories its person may
access, pauses a run and resumes it, and a screenshot is taken; a person without write permission gets no
buttons, and a forged POST is refused. Without Chromium the test is skipped, except under CI (``CI`` set),
where it fails: CI must have installed it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_loop import Service
from tests.github.fake_github import FakeGitHub
from tests.github.git_github import Loopback
from tests.github.test_flows import SMALL_GRAPH, example

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",  # without these Chromium hangs on a closed network
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,900",
)
REPO, SECRET_REPO = "octo/app", "octo/secret"


def chromium_missing() -> str | None:
    if not CHROMIUM.exists() or not DRIVER.exists():
        return f"Debian's chromium and chromium-driver are not installed ({CHROMIUM}, {DRIVER}; .ci/run installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def without_chromium(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``None`` when the browser test can run; else ``skip`` and why, or ``fail`` under CI, which must have it."""
    missing = chromium_missing()
    if missing is None:
        return None
    return ("fail" if environ.get("CI") else "skip"), missing


class LockedFake(FakeGitHub):
    """The in-memory stand-in, one request at a time: the service and the test call it from several threads."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            return super().handle(request)


def seeded() -> LockedFake:
    fake = LockedFake()
    for repo in (REPO, SECRET_REPO):
        config = "base: develop\ndefault_graph: small\n"
        fake.seed_branch(
            repo,
            "main",
            {".github/interlock.yml": config, ".github/interlock/graphs/small.json": json.dumps(SMALL_GRAPH)},
        )
        fake.seed_branch(repo, "develop", {"README.md": "# app"})
        fake.permissions[(repo, "alice")] = "write"
    fake.permissions[(REPO, "bob")] = "read"
    fake.user_repos = {"alice": {42: [REPO]}, "bob": {42: [REPO]}}  # neither sees octo/secret through the App
    return fake


def labeled(repo: str, issue: int, title: str) -> dict[str, Any]:
    payload = example("issues", "labeled.payload.json")
    payload["repository"]["full_name"] = repo
    payload["label"] = {**payload["label"], "name": "feature-request"}
    payload["sender"] = {**payload["sender"], "login": "alice", "type": "User"}
    payload["issue"] = {**payload["issue"], "number": issue, "title": title, "labels": [{"name": "feature-request"}]}
    return payload


def job_done(fake: FakeGitHub, service: Service, seq: int, stage: str) -> None:
    record = {"seq": seq, "stage": stage, "status": "done", "answer": "Built.\nVERDICT: PASS", "commits": 1}
    fake.commit_file(REPO, "interlock/state", f"runs/issue-1/missions/{seq:04d}-{stage}.json", json.dumps(record))
    payload = example("workflow_run", "completed.payload.json")
    payload["workflow_run"] = {
        **payload["workflow_run"],
        "display_title": f"interlock issue-1 mission {seq} ({stage})",
        "conclusion": "success",
        "event": "workflow_dispatch",
        "path": ".github/workflows/interlock.yml",
        "head_branch": "interlock/issue-1",
    }
    payload["sender"] = {**payload["sender"], "login": "interlock-app[bot]", "type": "Bot"}
    assert service.deliver("workflow_run", payload)["outcome"] == "handled"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    absent = without_chromium(os.environ)
    if absent is not None:
        outcome, why = absent
        pytest.fail(f"CI must run the browser test: {why}") if outcome == "fail" else pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service as DriverService

    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(str(DRIVER)), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        import time as _t

        _s = _t.monotonic()
        driver.quit()
        print("quit", _t.monotonic() - _s)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LockedFake, Service, threading.Thread]]:
    fake = seeded()
    with Loopback(fake) as server:
        (tmp_path / "logs").mkdir()
        service = Service(server.url, tmp_path / "logs")
        service.env.update(
            {
                "INTERLOCK_OAUTH_CLIENT_ID": fake.oauth_client[0],
                "INTERLOCK_OAUTH_CLIENT_SECRET": fake.oauth_client[1],
                "INTERLOCK_SESSION_SECRET": "board-session-secret-" * 3,
                "INTERLOCK_SERVICE_URL": f"http://127.0.0.1:{service.port}",
                "GITHUB_WEB_URL": server.web_url,
                "INTERLOCK_BOARD_CACHE_S": "0",  # the page right after a job's webhook shows it
            }
        )
        starting = threading.Thread(target=service.start)  # while Chromium starts: the test waits for both
        starting.start()
        try:
            yield fake, service, starting
        finally:
            starting.join()
            service.stop()


def rows(driver: Any) -> dict[str, Any]:
    from selenium.webdriver.common.by import By

    return {row.get_attribute("data-run"): row for row in driver.find_elements(By.CSS_SELECTOR, "tr[data-run]")}


def click(driver: Any, run: str, action: str) -> str:
    """Press a row's button and wait for the page the board answers with; the message it shows."""
    from selenium.webdriver.common.by import By

    row = rows(driver)[run]
    row.find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]').click()
    return str(wait_for(driver, "message", gone=row).text)


def wait_for(driver: Any, element_id: str, gone: Any = None) -> Any:
    """The element of the next page (a click returns before the browser has followed the form or the links)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as until
    from selenium.webdriver.support.ui import WebDriverWait

    waiting = WebDriverWait(driver, 15)
    if gone is not None:
        waiting.until(until.staleness_of(gone))
    return waiting.until(until.presence_of_element_located((By.ID, element_id)))


def sign_in(driver: Any, board: str) -> str:
    """Through the board's sign-in link, the stand-in's authorize page and the callback; who is signed in."""
    from selenium.webdriver.common.by import By

    driver.get(board)
    link = driver.find_element(By.ID, "sign-in")
    link.click()
    return str(wait_for(driver, "login", gone=link).text)


def state(fake: FakeGitHub) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fake.files_at(REPO, "interlock/state")["runs/issue-1.json"])
    return data


def test_the_board_in_a_real_browser(
    served: tuple[LockedFake, Service, threading.Thread], browser: Any, tmp_path: Path
) -> None:
    # SPEC W1, W4: sign in, see only what one may, pause and resume a run, a screenshot; no buttons without write
    from selenium.webdriver.common.by import By

    fake, service, starting = served  # served first: the browser quits before the service stops
    starting.join()
    assert service.process is not None and service.process.poll() is None
    assert service.deliver("issues", labeled(REPO, 1, "Add <script>alert(1)</script> export"))["outcome"] == "handled"
    assert service.deliver("issues", labeled(SECRET_REPO, 7, "The secret plan"))["outcome"] == "handled"
    board = f"http://127.0.0.1:{service.port}/board"

    fake.oauth_login = "alice"
    assert sign_in(browser, board) == "alice"
    assert set(rows(browser)) == {"octo/app:issue-1"}  # octo/secret's run is not shown to alice
    assert "The secret plan" not in browser.page_source
    title = rows(browser)["octo/app:issue-1"].find_element(By.CLASS_NAME, "title").text
    assert title == "Add <script>alert(1)</script> export"  # shown as text, never run

    assert click(browser, "octo/app:issue-1", "pause") == "pause: done."
    assert state(fake)["stop_requested"] is True
    job_done(fake, service, 1, "build")  # the mission returns: the stop takes effect
    browser.get(board + "?run=octo/app:issue-1")
    assert "interrupted" in rows(browser)["octo/app:issue-1"].text
    stages = browser.find_elements(By.CSS_SELECTOR, "#picture svg g.stage")  # the picture, drawn on the server
    assert len(stages) >= 2 and browser.find_element(By.CSS_SELECTOR, "#picture svg g.stage.current").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "#picture svg").size["height"] > 100
    browser.find_element(By.CSS_SELECTOR, "#picture details summary").click()  # the Mermaid source, folded away
    assert "flowchart TD" in browser.find_element(By.CSS_SELECTOR, "pre.mermaid").text
    dispatched = len(fake.dispatches)
    assert click(browser, "octo/app:issue-1", "resume") == "resume: done."
    assert state(fake)["status"] == "running" and len(fake.dispatches) == dispatched + 1
    browser.save_screenshot(str(tmp_path / "board.png"))
    assert (tmp_path / "board.png").stat().st_size > 10_000
    actions = [
        json.loads(text)
        for path, text in fake.files_at(REPO, "interlock/state").items()
        if path.startswith("runs/issue-1/actions/")
    ]
    assert sorted((a["action"], a["by"]) for a in actions) == [("pause", "alice"), ("resume", "alice")]

    forged = httpx.post(
        f"{board}/action",
        data={"repo": REPO, "run": "issue-1", "action": "cancel"},
        cookies={c["name"]: c["value"] for c in browser.get_cookies()},
    )
    assert forged.status_code == 403 and state(fake)["status"] == "running"  # a session, but no CSRF token

    browser.delete_all_cookies()
    fake.oauth_login = "bob"  # read permission only
    assert sign_in(browser, board) == "bob"
    assert set(rows(browser)) == {"octo/app:issue-1"}
    assert browser.find_elements(By.CSS_SELECTOR, "button[data-action]") == []
    assert fake.problems == []


def test_without_chromium_the_browser_test_is_skipped_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", Path("/nonexistent/chromium"))
    assert without_chromium({}) == ("skip", chromium_missing())
    assert without_chromium({"CI": "true"}) == ("fail", chromium_missing())
    assert "not installed" in str(chromium_missing())
