"""``onRunEnd`` (SPEC U6, issue 13 item 6): a team's supervision graph, in its configuration, its JSON Schema and
``interlock config check``, which looks for the graph in the team's graphsets, then the bundled library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.github.config import ConfigInvalid, parse_config
from app.github.config_schema import SCHEMA_FILE
from tests.github.test_config_check import check, checkout, findings

TEAMS = """teams:
  core:
    defaultGraph: small
  watch:
    graphsets: [teams/watch]
    defaultGraph: feature
    onRunEnd: {graph}
"""


def test_on_run_end_is_a_team_setting() -> None:
    # SPEC U6: the written key reaches the team's settings; left out, the team supervises nothing
    teams = parse_config(TEAMS.format(graph="supervision").encode()).team_settings()
    assert [(team.name, team.on_run_end) for team in teams] == [("core", None), ("watch", "supervision")]
    with pytest.raises(ConfigInvalid, match="onRunEnd"):
        parse_config(TEAMS.format(graph='""').encode())
    schema = json.loads(SCHEMA_FILE.read_text())
    assert "onRunEnd" in json.dumps(schema)  # editor completion knows it


def test_config_check_finds_the_supervision_graph_or_says_it_is_missing(tmp_path: Path) -> None:
    # SPEC U6, G6: a graph of the team's graphsets, else the bundled library; else an error naming the key
    path = checkout(tmp_path, TEAMS.format(graph="audit"))
    (tmp_path / "teams/docs/bad.json").unlink()
    (tmp_path / "teams/watch").mkdir()
    missing = check("--file", str(path), "--json")
    assert missing.returncode == 1, missing.stderr
    said = {(f["severity"], f["subject"]) for f in findings(missing)}
    assert ("error", "team watch: onRunEnd audit") in said
    audit = json.loads((tmp_path / ".github/interlock/graphs/small.json").read_text()) | {"name": "audit"}
    (tmp_path / "teams/watch/audit.json").write_text(json.dumps(audit))
    assert check("--file", str(path), "--json").returncode == 0
    path.write_text(TEAMS.format(graph="supervision"))  # the bundled supervision graph
    bundled = check("--file", str(path), "--json")
    assert bundled.returncode == 0, bundled.stdout
    assert any(f["subject"] == "team watch: supervision (bundled library)" for f in findings(bundled))
