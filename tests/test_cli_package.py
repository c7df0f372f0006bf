"""The shape of ``app/cli/`` (issue 29): one module per command group, each registering its commands on the one
typer app that ``app/cli/assemble.py`` builds, and no command module importing another.

Why a test and not a convention: the command modules grew into a chain (the main module imported the runs
module, which imported the remote reports, which imported the configuration check, which imported the doctor),
so a change to one command's helper could break a command three modules away. What two command modules both
need lives in ``app/cli/common.py``, the one module a command module may import from the package; every import
counts, wherever it stands (at the top, inside a function, or under ``TYPE_CHECKING``). The sizes of its modules
and functions are held for all of ``app/`` by ``tests/test_house.py``.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT

CLI = ROOT / "app" / "cli"
PACKAGE = "app.cli"
ASSEMBLER = "assemble"  # builds the app and calls each module's register: it alone imports the command modules
SHARED = "common"  # what the commands share: option types, helpers, the mapping of errors to exit codes


def siblings_imported(path: Path) -> set[str]:
    """The modules of ``app/cli/`` that ``path`` imports, by their names (``runs`` for ``app.cli.runs``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = PACKAGE if node.level else (node.module or "")
            if node.level and node.module:
                base = f"{PACKAGE}.{node.module}"
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == PACKAGE.split(".") and len(parts) > 2 and (CLI / f"{parts[2]}.py").exists():
                found.add(parts[2])
    return found - {path.stem}


def command_modules() -> list[Path]:
    return [path for path in sorted(CLI.glob("*.py")) if path.stem not in ("__init__", ASSEMBLER, SHARED)]


def test_no_command_module_imports_a_sibling_but_common() -> None:
    assert len(command_modules()) >= 8
    wrong = {path.stem: sorted(siblings_imported(path) - {SHARED}) for path in command_modules()}
    assert {name: found for name, found in wrong.items() if found} == {}


def test_common_imports_no_command_module() -> None:
    assert sorted(siblings_imported(CLI / f"{SHARED}.py")) == []


def test_every_command_module_is_a_group_the_app_registers_and_the_entry_point_is_the_old_one() -> None:
    # a module imported but left out of GROUPS lost its commands with no test failing (issue 29 review)
    from app.cli import assemble, main

    assert sorted(group.__name__.rsplit(".", 1)[1] for group in assemble.GROUPS) == [
        path.stem for path in command_modules()
    ]
    assert sorted(str(command.name) for command in assemble.cli.registered_commands) == sorted(assemble.HELP_ORDER)
    # an install made before app/cli/ was a package has a script that runs `from app.cli import main; main()`
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"interlock": "app.cli:main"} and callable(main)


def test_a_command_whose_group_is_missing_stops_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from app.cli import assemble

    monkeypatch.setattr(
        assemble, "GROUPS", tuple(group for group in assemble.GROUPS if group.__name__ != "app.cli.simulate")
    )
    with pytest.raises(RuntimeError, match=r"not registered: \['simulate'\]"):
        assemble.build(typer.Typer())


def test_every_command_module_registers_its_commands_from_the_assembler() -> None:
    assembler = ast.parse((CLI / f"{ASSEMBLER}.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(assembler) if isinstance(node, ast.ImportFrom) for alias in node.names}
    for path in command_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert "register" in top, f"{path.name} has no register(cli)"
        assert path.stem in imported, f"app/cli/assemble.py does not import {path.stem}"
