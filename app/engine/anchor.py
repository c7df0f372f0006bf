"""The anchor of a run's hash chain (SPEC J6): its head, written where the state branch cannot rewrite it.

Why: the chain of records and events files lives on the state branch, and whoever can push there can also strip
it (every chain and events file removed) or roll it back (the branch reset to an earlier commit, the last
transition's files removed) and leave a journal that is consistent in itself. So after each save the shells write
the head somewhere else — on GitHub the run's check run (only the App can write it) and its status comment (the
App's bot's), locally a file in the repository's git folder that no push, fetch or reset touches — and ``interlock
verify`` compares. The anchor is written after the save, so it may lag: only an anchor newer than the journal's
head, or one whose hash is not the journal's at its version, is tampering. Plain values and text, no I/O: every
shell writes and reads the same line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARK = "interlock:anchor"
LINE = re.compile(
    rf"<!-- {MARK} run=(?P<run>[^\s>]+) version=(?P<version>\d{{1,12}}) hash=(?P<hash>[0-9a-f]{{64}}) "
    r"state=(?P<state>[0-9a-f]{0,64}) -->"
)


@dataclass(frozen=True)
class Anchor:
    """Version ``version`` of run ``run`` had the record hash ``hash`` (SHA-256 of the record as the journal stores
    it), written by (or read at) the state branch's commit ``state`` (``""``: not known)."""

    run: str
    version: int
    hash: str
    state: str = ""

    def hidden(self) -> str:
        """The machine-readable line: an HTML comment, which GitHub does not show."""
        return f"<!-- {MARK} run={self.run} version={self.version} hash={self.hash} state={self.state} -->"

    def visible(self) -> str:
        """The short line people read: what a rollback would have to contradict."""
        state = f" · state commit `{self.state[:12]}`" if self.state else ""
        return (
            f"**Journal head** version {self.version} · record `{self.hash[:12]}`{state} "
            "(what `interlock verify` checks the state branch against)"
        )

    def lines(self) -> list[str]:
        return [self.visible(), "", self.hidden()]


@dataclass(frozen=True)
class Witness:
    """An anchor as read from one place (``where``: "the check run", "the status comment", "the local anchor")."""

    where: str
    anchor: Anchor


def settled(anchor: Anchor, shown: str) -> Anchor:
    """``anchor`` as ``shown`` already carries it when that names the same version and record: its state is then the
    commit that wrote the version, not the later head a redelivery read it at, and nothing needs writing again."""
    same = (
        found for found in anchors_in(shown, anchor.run) if (found.version, found.hash) == (anchor.version, anchor.hash)
    )
    return next(same, anchor)


def anchors_in(text: str, run_id: str) -> list[Anchor]:
    """The anchor of run ``run_id`` that ``text`` carries as its last line, where the App writes it; none else:
    the check run and the status comment quote an agent's answer (a stop's reason), and a line an agent wrote
    there is no anchor (issue 28 review: a forged one raised a false alarm). Another run's is not this run's."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = LINE.fullmatch(lines[-1]) if lines else None
    if found is None or found["run"] != run_id:
        return []
    return [Anchor(run_id, int(found["version"]), found["hash"], found["state"])]
