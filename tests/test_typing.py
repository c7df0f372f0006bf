"""The test command type-checks all of ``app/`` strictly: ``mypy`` with no arguments reads its files and its
strictness from ``pyproject.toml``, so narrowing those settings would quietly check less. The check itself is
the ``mypy`` of the test command; this test keeps the settings honest and the README true."""

from __future__ import annotations

import tomllib

from tests.helpers import ROOT, doc


def test_mypy_checks_all_of_app_strictly() -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["files"] == ["app"]
    assert mypy["strict"] is True
    assert not {"ignore_errors", "ignore_missing_imports", "exclude", "overrides"} & set(mypy)


def test_readme_test_command_runs_mypy() -> None:
    readme = doc("index.md", "development.md")
    assert "pip install -e '.[test]' && ruff check . && mypy && pytest" in readme
    assert "`mypy` (strict, on all of `app/`;" in readme
