"""The Development page's "Where a new piece goes" says, for each kind of change, which file it goes in and what
else must change. These tests hold it to the code: every file it names exists, every name it places in a file is
defined there, and the lists it says a test keeps in step are in step."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from app.agents.environment import AGENT_KEYS
from app.agents.spec import PRESETS, agent_from_spec
from app.engine import events
from app.engine.step import HANDLERS
from app.local.agentcheck import INSTALL
from tests.helpers import ROOT, doc

PLACED = re.compile(r"`(\w+)`(?: \w+)? (?:of|in)\s+`([\w/.]+\.py)`")  # `HANDLERS` of `app/engine/step.py`
PATH = re.compile(r"`((?:app|tests|action|\.github)/[\w/.*-]*)`")


def section(title: str) -> str:
    """The Development page's section or subsection ``title``, up to the next heading of any level or its end."""
    text = doc("development.md")
    found = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#|\Z)", text, re.S | re.M)
    assert found, f"docs/development.md has no section {title!r}"
    return found.group(1)


def guide() -> str:
    return section("Where a new piece goes")


def names_defined(path: Path) -> set[str]:
    """The names a module defines or imports at its top level, and the names of its classes' members."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def test_every_file_the_guide_names_exists() -> None:
    paths = PATH.findall(guide())
    assert len(paths) >= 12
    assert [path for path in paths if not list(ROOT.glob(path))] == []


def test_every_file_and_engine_module_the_development_section_names_exists() -> None:
    text = section("The house")  # the map of the packages, with the engine's modules
    assert [path for path in PATH.findall(text) if not list(ROOT.glob(path))] == []
    concepts = re.search(r"One module per concept:\s(.*?)\.\n", text, re.S)
    assert concepts, "the Development section lists the engine's modules"
    modules = re.findall(r"`([\w/]+)`", re.sub(r"\([^)]*\)", "", concepts.group(1)))  # not the words in brackets
    assert len(modules) >= 15
    assert [name for name in modules if not (ROOT / "app" / "engine" / f"{name}.py").exists()] == []


def test_every_name_the_guide_places_in_a_file_is_there() -> None:
    placed = PLACED.findall(guide())
    assert len(placed) >= 8
    assert [f"{name} in {path}" for name, path in placed if name not in names_defined(ROOT / path)] == []


def test_every_event_has_a_handler() -> None:
    # the guide: "a test fails for an event without a handler" (Start makes a run; it is applied to none)
    kinds = {kind for kind in vars(events).values() if isinstance(kind, type) and issubclass(kind, events.Event)}
    assert kinds - {events.Event, events.Start} == set(HANDLERS)


def test_every_agent_preset_is_named_in_all_three_places() -> None:
    # the guide: a preset's class is under its name in PRESETS; AGENT_KEYS and INSTALL name it too
    assert set(PRESETS) == set(INSTALL) and set(PRESETS) <= set(AGENT_KEYS)
    for name, preset in PRESETS.items():
        agent = agent_from_spec(name)
        assert type(agent) is preset and agent.name == name


def test_the_suite_runs_on_every_core_as_the_readme_says() -> None:
    # the README's test command is plain `pytest`: the parallel run is the configuration's, and says so
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    options = project["tool"]["pytest"]["ini_options"]["addopts"]
    extra = project["project"]["optional-dependencies"]["test"]
    assert "-n auto" in options and "--maxprocesses=4" in options
    assert any(requirement.startswith("pytest-xdist") for requirement in extra)
    text = " ".join(doc("development.md").split())
    assert "`pytest` runs the suite on every core, four at most (pytest-xdist; `pytest -n 0` runs it in one" in text
