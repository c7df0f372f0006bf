"""A supervision run's request must cite a measured finding (SPEC U6): the form is checked by the engine, purely,
before anything is filed; a request without one is asked again once, then the run escalates with a typed reason."""

from __future__ import annotations

import pytest

from app.engine import events as ev
from app.engine.citation import Commit, FileLine, RunMission, cited, parse_citation
from app.engine.effects import DispatchMission, Escalate, FileRequest, Finish
from app.engine.record import MissionKind, ReasonCode, Status
from tests.engine.driver import Driver, loop_graph

SHA = "3f2a9c1" + "0" * 33


def request(body: str, target: str = "octo/app") -> str:
    return f"Found a slow step.\n```request\n{target}\nCache the graph\n{body}\n```\nVERDICT: NEEDS_UPSTREAM"


CITED = f"The load is slow.\nFinding: app/store/journal.py:42@{SHA}\nFinding: run issue-7 mission 3"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (f"app/x.py:12@{SHA.upper()}", FileLine("app/x.py", 12, SHA)),
        (f"`app/x.py:12` @ `{SHA}`", FileLine("app/x.py", 12, SHA)),
        ("commit 0123456789abcdef0123456789abcdef01234567", Commit("0123456789abcdef0123456789abcdef01234567")),
        ("run issue-7 mission 3", RunMission("issue-7", 3)),
        ("run issue-7 mission #3", RunMission("issue-7", 3)),
        ("app/x.py:12", None),  # a file and line without the commit it was read at
        (f"/etc/passwd:1@{SHA}", None),  # not a file of the repository
        (f"app/../x.py:1@{SHA}", None),  # a path that goes up
        (f"app/x.py:0@{SHA}", None),  # lines count from 1
        ("commit xyz", None),
        ("commit 3f2a9c1", None),  # a short sha: ambiguous, and GitHub's git API takes only full ones
        ("the code is slow", None),
        ("run issue-7", None),
    ],
)
def test_the_forms_of_a_finding(ref: str, expected: object) -> None:
    # SPEC U6: a file and line at a commit, a commit, or a run and mission
    assert parse_citation(ref) == expected


def test_a_body_cites_its_own_finding_lines_only() -> None:
    # SPEC U6: a quoted or fenced line is not the agent's claim; a malformed finding line is named
    body = f"> Finding: commit {SHA}\n```\nFinding: commit {SHA}\n```\n- **Finding:** commit {'7' * 40}\nFinding: soon"
    found = cited(body)
    assert found.found == (Commit("7" * 40),) and found.malformed == ("Finding: soon",)
    assert "not in a form Interlock can check" in (found.problem() or "")
    assert cited("no finding here").problem() == "it cites no measured finding"
    assert cited(CITED).problem() is None


def test_a_supervision_run_files_a_cited_request() -> None:
    # SPEC U6: the form holds, the request is filed like any NEEDS_UPSTREAM one
    d = Driver(loop_graph(), supervision=True, upstream=("octo/app",))
    assert d.run.supervision
    d.finish(request(CITED))
    assert [e.target for e in d.of(FileRequest)] == ["octo/app"] and d.run.status is Status.AWAITING_UPSTREAM


@pytest.mark.parametrize("body", ["It is slow, trust me.", "Finding: the journal code\nIt is slow."])
def test_a_request_without_a_valid_citation_is_reasked_once_then_escalates(body: str) -> None:
    # SPEC U6: refused by code — nothing is filed; asked again once (no visit), then escalated, typed
    d = Driver(loop_graph(), supervision=True, upstream=("octo/app",))
    d.finish(request(body))
    assert d.of(FileRequest) == [] and d.run.status is Status.RUNNING and d.run.visits == {"work": 1}
    reask = d.dispatched()
    assert reask.kind is MissionKind.REASK and "Finding: <path>:<line>@<commit>" in reask.prompt.note
    d.finish(request(body))
    assert d.of(FileRequest) == [] and d.run.status is Status.ESCALATED
    assert d.run.reason is not None and d.run.reason.code is ReasonCode.CITATION_MISSING
    assert "citation_missing" in d.of(Escalate)[0].decision


def test_a_reasked_request_that_cites_is_filed() -> None:
    # SPEC U6: the re-ask is the chance to cite
    d = Driver(loop_graph(), supervision=True, upstream=("octo/app",))
    d.finish(request("It is slow."))
    d.finish(request(CITED))
    assert len(d.of(FileRequest)) == 1


def test_a_run_that_is_no_supervision_needs_no_citation() -> None:
    # SPEC U3 unchanged: only a supervision run's requests must cite
    d = Driver(loop_graph(), upstream=("octo/app",))
    d.finish(request("It is slow."))
    assert len(d.of(FileRequest)) == 1


def test_a_refused_filing_escalates_with_the_shells_reason() -> None:
    # SPEC U6: the shell found a cited thing missing: nothing filed, the run escalates saying which
    d = Driver(loop_graph(), supervision=True, upstream=("octo/app",))
    d.finish(request(CITED))
    d.apply(ev.UpstreamChanged, state="refused", note="run issue-7 has no mission 3")
    assert d.run.status is Status.ESCALATED and d.run.reason is not None
    assert d.run.reason.code is ReasonCode.CITATION_NOT_FOUND and "issue-7 has no mission 3" in d.run.reason.message


def test_no_improvement_ends_a_supervision_run_done() -> None:
    # SPEC U6: "no improvement" is a valid outcome: the run ends done, nothing filed, nothing to merge
    d = Driver(loop_graph(), supervision=True)
    d.finish("Nothing to improve.\nVERDICT: PASS")
    d.finish("Agreed.\nVERDICT: PASS")
    assert d.run.status is Status.DONE and d.of(Finish) == [Finish(Status.DONE)]
    assert d.of(FileRequest) == [] and not [e for e in d.effects if isinstance(e, DispatchMission)]
