"""The citations a supervision run's request must carry (SPEC U6), read purely from the request's body.

A supervision run proposes improvements to other teams' work; a proposal that points at nothing measured is an
opinion, and the rule that refuses it must be code, not a line of the prompt the agent may ignore. So the body of
every request a supervision run files names its findings, one per line, in a form code can check:

    Finding: app/store/journal.py:42@<sha>      a file and line, at a commit (its full 40-digit sha)
    Finding: commit <sha>                       a commit (its full sha)
    Finding: run issue-7 mission 3              a run and one of its missions

The engine checks the form (here); the shell checks, before filing, that each cited thing exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.engine.verdict import own_lines

_FINDING = re.compile(r"^[\s*_`-]*finding[\s*_`]*:[\s*_]*(?P<ref>.*?)[\s*]*$", re.IGNORECASE)
_FILE_LINE = re.compile(r"^`?(?P<path>[^\s:@`]+):(?P<line>[1-9]\d{0,6})`?\s*@\s*`?(?P<commit>[0-9a-fA-F]{40})`?$")
_COMMIT = re.compile(r"^commit\s+`?(?P<commit>[0-9a-fA-F]{40})`?$", re.IGNORECASE)
_RUN_MISSION = re.compile(r"^run\s+`?(?P<run>[\w-][\w.-]{0,99})`?\s+mission\s+#?(?P<seq>[1-9]\d{0,8})$", re.IGNORECASE)
FORMS = (
    "`Finding: <path>:<line>@<commit>` (a file and line at a commit), `Finding: commit <sha>`, or "
    "`Finding: run <run-id> mission <number>`, each commit by its full 40-digit sha"
)


@dataclass(frozen=True)
class FileLine:
    path: str
    line: int
    commit: str


@dataclass(frozen=True)
class Commit:
    commit: str


@dataclass(frozen=True)
class RunMission:
    run: str
    seq: int


Citation = FileLine | Commit | RunMission


@dataclass(frozen=True)
class Cited:
    """What a request's body cites: the well-formed findings, and the ``Finding:`` lines that are not."""

    found: tuple[Citation, ...]
    malformed: tuple[str, ...]

    def problem(self) -> str | None:
        """Why the request may not be filed as it is; ``None`` when it cites at least one finding, all well formed."""
        if self.malformed:
            shown = ", ".join(repr(line[:80]) for line in self.malformed[:3])
            return f"these findings are not in a form Interlock can check: {shown}"
        if not self.found:
            return "it cites no measured finding"
        return None


def cited(body: str) -> Cited:
    """The findings of a request's body: its own lines only (a quoted or fenced line is not the agent's claim)."""
    found: list[Citation] = []
    malformed: list[str] = []
    for _, line in own_lines(body):
        match = _FINDING.match(line)
        if match is None:
            continue
        citation = parse_citation(match.group("ref"))
        if citation is None:
            malformed.append(line.strip())
        else:
            found.append(citation)
    return Cited(tuple(found), tuple(malformed))


def parse_citation(ref: str) -> Citation | None:
    """One finding's reference, or ``None`` when it is in no checkable form (an absolute path or ``..`` too:
    a file of the repository is named from its top)."""
    ref = ref.strip()
    if (file_line := _FILE_LINE.match(ref)) is not None:
        path = file_line.group("path")
        if path.startswith("/") or ".." in path.split("/"):
            return None
        return FileLine(path, int(file_line.group("line")), file_line.group("commit").lower())
    if (commit := _COMMIT.match(ref)) is not None:
        return Commit(commit.group("commit").lower())
    if (run := _RUN_MISSION.match(ref)) is not None:
        return RunMission(run.group("run"), int(run.group("seq")))
    return None


def citation_note(problem: str) -> str:
    """The note of the one re-ask a request without a valid citation gets (SPEC U6)."""
    return (
        f"Your request was not filed: {problem}. A supervision run files only requests that cite a measured "
        f"finding. Answer again with the request block, its body naming each finding on its own line as {FORMS}, "
        "and end with `VERDICT: NEEDS_UPSTREAM`; or, if no finding supports a request, end with the stage's "
        "other verdict."
    )
