"""Naming an agent in one string, the same everywhere: local configuration, team rosters, the Action's input.

A preset name (``claude``, ``codex``, ``aider``, ``demo``), ``openai:MODEL[@URL]``, ``anthropic:MODEL``,
``command:LINE``, or any command line.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping

from app.agents.base import Agent
from app.agents.command import CommandAgent
from app.agents.presets import AiderAgent, ClaudeAgent, CliPreset, CodexAgent
from app.agents.prices import ModelPrice, price_table
from app.engine.errors import InterlockError

# The agent CLIs known by name. A preset also needs its API key variables in environment.AGENT_KEYS (what it
# may see) and its install hint in app/local/agentcheck.py INSTALL; a test fails until all three name it.
PRESETS: dict[str, type[CliPreset]] = {preset.program: preset for preset in (ClaudeAgent, CodexAgent, AiderAgent)}


class AgentSpecError(InterlockError):
    pass


def agent_from_spec(spec: str, prices: Mapping[str, ModelPrice] | None = None) -> Agent:
    """A preset name (``claude``, ``codex``, ``aider``, ``demo``), ``openai:MODEL[@URL]``,
    ``anthropic:MODEL``, or any command line. ``prices`` add to or override the shipped price table of the
    HTTP agents' cost estimates."""
    name, _, rest = spec.partition(":")
    if spec == "demo":
        return CommandAgent([sys.executable, "-m", "app.agents.demo"], name="demo")
    if spec == "codex":
        return CodexAgent(prices=price_table(prices))
    if spec in PRESETS:
        return PRESETS[spec]()
    if name in ("openai", "anthropic") and rest:
        from app.agents.http import anthropic_agent, openai_agent  # httpx loads only for these (issue 16, item 5)

        model, _, url = rest.partition("@")
        if name == "openai":
            return openai_agent(model, url or None, prices)
        return anthropic_agent(model, url or None, prices)
    if name == "command" and rest:
        spec = rest
    if not shlex.split(spec):
        raise AgentSpecError("an empty agent command")
    return CommandAgent(spec, name=shlex.split(spec)[0].rsplit("/", 1)[-1])
