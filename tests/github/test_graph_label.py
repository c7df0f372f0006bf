"""A `graph:<name>` label (and `default_graph:`) names a graph of the repository's graphsets or Interlock's library,
never a file on the service's machine (SPEC GH1, GH9; found by the issue 11 review).

Anyone with triage permission can add a label, and the graph it names used to be looked up with the local CLI's
rule: a path to an existing file, or one ending in `.json`, was read from the service's own disk. A label
`graph:/some/graph.json` started a run on any graph file there, and the comment told which paths exist.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.webhooks.router import Outcome
from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World, retry_waits  # noqa: F401  (autouse: no retry waits)
from tests.helpers import GRAPHS


@pytest.fixture
def world(settings: ServiceSettings) -> Iterator[World]:
    made = World(settings)
    yield made
    assert made.fake.problems == []


def said(world: World) -> list[str]:
    return [comment["body"] for comment in world.fake.comments.values()]


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_a_graph_file_on_the_services_machine_is_not_a_graph_a_label_can_name(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # SPEC GH1, GH9: a valid graph file on the service's disk, named by path, starts nothing
    shutil.copy(GRAPHS / "basics" / "quote-edit.json", tmp_path / "local.json")
    monkeypatch.chdir(tmp_path)
    name = str(tmp_path / "local.json") if where == "absolute" else "local.json"
    outcome, issue = world.label(labels=(f"graph:{name}",))
    assert outcome is Outcome.HANDLED
    assert world.runs().store.find(f"issue-{issue}") is None and world.fake.dispatches == []
    assert len(said(world)) == 1 and "cannot start" in said(world)[0]


def test_the_comment_on_a_path_does_not_tell_whether_the_file_exists(world: World, tmp_path: Path) -> None:
    # SPEC GH9: what the service's disk holds is not disclosed by the answer to a label
    (tmp_path / "there.json").write_text(json.dumps({"client_secret": "not-a-graph"}))
    world.label(labels=(f"graph:{tmp_path / 'there.json'}",))
    world.label(labels=(f"graph:{tmp_path / 'absent.json'}",))
    there, absent = (text.replace(str(tmp_path / "there.json"), "X") for text in said(world))
    assert there == absent.replace(str(tmp_path / "absent.json"), "X")
    assert "client_secret" not in there


def test_a_name_of_the_library_still_starts_its_graph(world: World) -> None:
    outcome, issue = world.label(labels=("graph:quote-edit",))
    assert outcome is Outcome.HANDLED and world.run(issue).graph == "quote-edit"
