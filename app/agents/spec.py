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
from app.agents.http import anthropic_agent, openai_agent
from app.agents.presets import AiderAgent, ClaudeAgent, CodexAgent
from app.agents.prices import ModelPrice, price_table
from app.engine.errors import InterlockError


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
    if spec in ("claude", "aider"):
        return {"claude": ClaudeAgent, "aider": AiderAgent}[spec]()
    if name in ("openai", "anthropic") and rest:
        model, _, url = rest.partition("@")
        if name == "openai":
            return openai_agent(model, url or None, prices)
        return anthropic_agent(model, url or None, prices)
    if name == "command" and rest:
        spec = rest
    if not shlex.split(spec):
        raise AgentSpecError("an empty agent command")
    return CommandAgent(spec, name=shlex.split(spec)[0].rsplit("/", 1)[-1])
