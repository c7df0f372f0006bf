"""The environment an agent's process gets, built from an allow-list.

Locally (``interlock run``) an agent inherits the environment of the person who runs it: their keys are
theirs to give. In an Actions job the process that runs the agent may hold the job's token, the runner's
own credentials (``ACTIONS_*``) and the files whose lines change later steps (``GITHUB_ENV``...), so there
the agent's environment is built from names that are *allowed*, never by removing names known to be bad: a
credential nobody thought of never reaches the agent. What passes:

- ``BASE`` and every ``LC_*`` locale variable: what programs need to run at all;
- ``PASSED``: Interlock's own settings meant for missions (the check nodes' test command);
- the API key variables of the agent named (``AGENT_KEYS``), and the names a person lists (``agent-env``);
- the read-only token, when one is given, as ``GITHUB_TOKEN`` and ``GH_TOKEN``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from app.agents.base import AgentCall
from app.engine.errors import InterlockError

BASE = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "LANG", "LANGUAGE", "TZ")
LOCALE_PREFIX = "LC_"
PASSED = ("INTERLOCK_TEST_COMMAND",)
ANTHROPIC = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
OPENAI = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
AGENT_KEYS = {
    "claude": (*ANTHROPIC, "CLAUDE_CODE_OAUTH_TOKEN"),
    "anthropic": ANTHROPIC,
    "codex": OPENAI,
    "openai": OPENAI,
    "aider": (*ANTHROPIC, *OPENAI),
}
KEY_NAMES = frozenset(name for names in AGENT_KEYS.values() for name in names)
READ_TOKEN_NAMES = ("GITHUB_TOKEN", "GH_TOKEN")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Never passed, even when listed: Interlock's tokens, the runner's credentials, the files that change later steps.
REFUSED = re.compile(
    r"^(INTERLOCK_(PUSH_|READ_|FETCH_)?TOKEN|GITHUB_TOKEN|GH_TOKEN|ACTIONS_.*"
    r"|GITHUB_(ENV|PATH|OUTPUT|STATE|STEP_SUMMARY))$"
)


class AgentEnvError(InterlockError):
    pass


def agent_keys(spec: str) -> tuple[str, ...]:
    """The API key variables the agent named by ``spec`` needs: ``claude``, ``codex``, ``aider``,
    ``openai:MODEL``, ``anthropic:MODEL``; a command gets none unless they are listed."""
    name = spec.strip().split(":", 1)[0] if ":" in spec else spec.strip()
    return AGENT_KEYS.get(name, ())


def parse_names(text: str) -> tuple[str, ...]:
    """Names of variables a person lets through (the action's ``agent-env``: commas or whitespace between)."""
    names = tuple(dict.fromkeys(part for part in re.split(r"[\s,]+", text) if part))
    for name in names:
        if not NAME.match(name):
            raise AgentEnvError(f"agent-env: {name!r} is not the name of an environment variable")
        if REFUSED.match(name):
            raise AgentEnvError(f"agent-env: {name} is a credential Interlock never passes to an agent")
    return names


def allowed_environment(
    source: Mapping[str, str], names: Iterable[str] = (), read_token: str | None = None
) -> dict[str, str]:
    """The environment of an agent or check in a job: the allowed names of ``source`` and the read token.
    An empty key variable is left out: the workflow passes every preset's secrets, and a secret the
    repository does not have arrives empty — an agent must see no key, not an empty one (an empty
    ``OPENAI_BASE_URL`` would be a URL)."""
    wanted = {*BASE, *PASSED, *names}
    env = {
        name: value
        for name, value in source.items()
        if (name in wanted or name.startswith(LOCALE_PREFIX))
        and not REFUSED.match(name)
        and (value or name not in KEY_NAMES)
    }
    if read_token:
        env.update(dict.fromkeys(READ_TOKEN_NAMES, read_token))
    return env


def process_environment(call: AgentCall, files: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the agent's process gets: the environment its caller built (an allow-list, in a job) or, when
    it built none, the caller's own (a local run); then the mission's variables and files."""
    base = os.environ if call.environment is None else call.environment
    return {**base, **call.env, **call.variables(), **(files or {})}
