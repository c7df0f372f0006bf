"""The ``interlock`` command as a user runs it: real processes, exit codes, output (SPEC G3, G6, V1–V4, W4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, GRAPHS, ROOT

FEATURE = str(GRAPHS / "delivery" / "feature.json")


def interlock(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "Traceback" not in result.stderr + result.stdout
    return result


def test_validate_library_succeeds() -> None:
    result = interlock("validate", "graphs/")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 valid, 0 invalid" in result.stdout


def test_validate_json_report_shape() -> None:
    # SPEC G3: each issue with code, stage, edge and message
    result = interlock("validate", "--json", str(FIXTURES / "graphs" / "errors"), FEATURE)
    assert result.returncode == 1
    files = json.loads(result.stdout)["files"]
    assert len(files) == 12
    by_name = {Path(f["path"]).stem: f for f in files}
    assert by_name["feature"] == {"path": FEATURE, "valid": True, "errors": [], "warnings": []}
    edge_issue = by_name["edge-verdict-missing"]["errors"][0]
    assert edge_issue == {
        "code": "edge-verdict-missing",
        "stage": "a",
        "edge": 0,
        "message": "edge 0 (a -> b) has no verdict label",
    }
    assert all(set(f) == {"path", "valid", "errors", "warnings"} for f in files)


def test_team_roster_enables_capability_warnings() -> None:
    # SPEC G4
    path = str(FIXTURES / "graphs" / "warnings" / "capability-uncarried.json")
    plain = json.loads(interlock("validate", "--json", path).stdout)["files"][0]
    assert plain["warnings"] == []
    result = interlock("validate", "--json", "--team", str(FIXTURES / "team.yml"), path)
    assert result.returncode == 0
    warned = json.loads(result.stdout)["files"][0]
    assert [w["code"] for w in warned["warnings"]] == ["capability-uncarried"] and warned["valid"]


def test_bad_team_roster_is_a_usage_error(tmp_path: Path) -> None:
    roster = tmp_path / "team.yml"
    roster.write_text("roles:\n  - name: a\n    fullAuthority: true\n  - name: b\n    fullAuthority: true\n")
    result = interlock("validate", "--team", str(roster), FEATURE)
    assert result.returncode == 2 and "only one role may be full-authority" in result.stderr


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "file is empty"),
        (b"   \n", "file is empty"),
        (b"{nope", "not valid JSON"),
        (b"[1, 2]", "not a list"),
        (b'{"name": 3, "entry": [], "nodes": "x", "edges": 1}', "name"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_files_get_a_clear_error_and_the_others_are_still_validated(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    result = interlock("validate", "--json", str(bad), FEATURE)
    assert result.returncode == 1
    files = {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["feature.json"]["valid"] is True
    assert files["bad.json"]["valid"] is False
    assert any(fragment in error["message"] for error in files["bad.json"]["errors"]), files["bad.json"]


def test_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(17 * 1024 * 1024)
    result = interlock("validate", str(huge), FEATURE)
    assert result.returncode == 1
    assert f"{huge}: INVALID" in result.stdout and "too large" in result.stdout


def test_unreadable_path_exits_2_but_reports_the_readable_ones(tmp_path: Path) -> None:
    result = interlock("validate", "--json", str(tmp_path / "missing.json"), FEATURE)
    assert result.returncode == 2
    assert "missing.json: no such file or folder" in result.stderr
    assert json.loads(result.stdout)["files"][0]["valid"] is True


def test_folder_walk_skips_schema_files() -> None:
    result = interlock("validate", "--json", "graphs")
    paths = [f["path"] for f in json.loads(result.stdout)["files"]]
    assert not any(p.endswith(".schema.json") for p in paths) and len(paths) == 6


def test_usage_errors_exit_2() -> None:
    assert interlock("frobnicate").returncode == 2
    assert interlock("validate").returncode == 2


def test_contract_prints_by_kind() -> None:
    # SPEC V2, V3, V4
    assert interlock("contract", "graphs/basics/quote-edit.json", "edit").stdout == ""
    review = interlock("contract", FEATURE, "review")
    assert review.returncode == 0 and "PASS, FAIL" in review.stdout and "read as PASS" in review.stdout
    observe = interlock("contract", "graphs/supervision/supervision.json", "observe")
    assert "NOTHING_NEW, DELTA" in observe.stdout and "required" in observe.stdout


def test_contract_of_unknown_stage_or_invalid_graph() -> None:
    unknown = interlock("contract", FEATURE, "deploy")
    assert unknown.returncode == 2 and "no stage 'deploy'" in unknown.stderr and "plan, implement" in unknown.stderr
    invalid = interlock("contract", str(FIXTURES / "graphs" / "errors" / "entry-unknown.json"), "a")
    assert invalid.returncode == 1 and "entry-unknown" in invalid.stderr


def test_draw_marks_current_and_visits() -> None:
    # SPEC W4
    result = interlock("draw", FEATURE, "--current", "review", "--visits", "implement=2,review=1")
    assert result.returncode == 0
    assert result.stdout.startswith("flowchart TD") and "class s3 current" in result.stdout
    assert "visits 2/4" in result.stdout and "class s0 gate" in result.stdout


@pytest.mark.parametrize("args", [("--visits", "implement"), ("--visits", "implement=x"), ("--current", "nope")])
def test_draw_rejects_bad_options(args: tuple[str, str]) -> None:
    result = interlock("draw", FEATURE, *args)
    assert result.returncode == 2 and result.stderr.startswith("error:")
