"""The workflow users copy passes every preset's keys, and the README's table of secrets says what
``AGENT_KEYS`` lets each agent see (SPEC U1: each role's agent finds its own key in the job)."""

from __future__ import annotations

import re
from typing import Any

from app.agents.environment import AGENT_KEYS, KEY_NAMES, allowed_environment
from tests.helpers import DOCS
from tests.runner.test_action import MISSION_WORKFLOW, load

README = DOCS / "github" / "app.md"
HEADING = "**Secrets each agent needs.**"
NAME = re.compile(r"`([A-Z][A-Z0-9_]+)`")


def secrets_table() -> dict[str, tuple[set[str], set[str]]]:
    """The README's table: agent (``claude``, ``anthropic`` of ``anthropic:MODEL``, ``command``) to the
    names of its secrets and of its variables."""
    text = README.read_text(encoding="utf-8")
    lines = text[text.index(HEADING) :].splitlines()
    rows = [line for line in lines[lines.index("| agent | secrets | variables (optional) |") + 2 :]]
    table: dict[str, tuple[set[str], set[str]]] = {}
    for row in rows:
        if not row.startswith("|"):
            break
        agent, secrets, variables = (cell.strip() for cell in row.strip("|").split("|"))
        name = agent.strip("`").split(":")[0] if agent.startswith("`") else "command"
        table[name] = (set(NAME.findall(secrets)), set(NAME.findall(variables)))
    return table


def work_step_env() -> dict[str, Any]:
    steps = load(MISSION_WORKFLOW)["jobs"]["work"]["steps"]
    step = next(s for s in steps if s.get("with", {}).get("command") == "work")
    env: dict[str, Any] = step["env"]
    return env


def test_the_readme_table_names_exactly_what_each_agent_may_see() -> None:
    # SPEC U1: the README says which secret each preset needs, and it is the allow-list
    table = secrets_table()
    assert set(table) == {*AGENT_KEYS, "command"}
    for agent, names in AGENT_KEYS.items():
        secrets, variables = table[agent]
        assert secrets | variables == set(names), agent
        assert not secrets & variables
    assert table["command"] == (set(), set())


def test_the_workflow_passes_every_presets_keys_secrets_as_secrets_and_urls_as_variables() -> None:
    env = work_step_env()
    assert set(env) == KEY_NAMES
    secrets = {name for row in secrets_table().values() for name in row[0]}
    for name, value in env.items():
        kind = "secrets" if name in secrets else "vars"
        assert value == f"${{{{ {kind}.{name} }}}}", name
    assert {name for name in env if name.endswith("_BASE_URL")} == KEY_NAMES - secrets


def test_a_key_the_repository_does_not_have_arrives_empty_and_is_not_passed() -> None:
    source = {"ANTHROPIC_API_KEY": "sk-ant-x", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "TERM": ""}
    names = (*AGENT_KEYS["aider"],)
    assert allowed_environment(source, names) == {"ANTHROPIC_API_KEY": "sk-ant-x", "TERM": ""}
