"""Attacks on ``interlock resume --upgrade`` on a person's machine (SPEC J7): the real console, real repositories."""

from __future__ import annotations

from app.engine.record import Status
from tests.local.test_pinned_graph import REVIEWED, Place, place  # noqa: F401 - the fixture
from tests.test_cli_runs import run_json


def test_an_upgrade_at_a_stage_the_new_version_lacks_moves_nothing(place: Place) -> None:  # noqa: F811
    # SPEC J7: `--at STAGE` that the current version lacks is refused before the move, as on GitHub
    started = place.start("p6")
    place.write(REVIEWED)
    refused = place.cli("resume", "p6", "--upgrade", "--graph", str(place.graph), "--at", "nowhere")
    assert refused.returncode == 2 and "no stage 'nowhere'" in refused.stderr
    after = run_json(place.cli("status", "p6", "--json"))
    assert (after["status"], after["graph_hash"], after["version"]) == (
        Status.GATE_WAIT.value,
        started["graph_hash"],
        started["version"],
    )
