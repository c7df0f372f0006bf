"""The work phase's own process starts with nothing an agent may not have.

An agent can read the environment any process of its user started with (``/proc/<pid>/environ``, no privilege
needed), and Interlock's process is its parent: the allow-list of ``app/agents/environment.py`` would mean
little if that process still held the job's variables — the job's token, a deploy key a workflow sets for
every step. So ``interlock step --phase work`` first replaces itself (``exec``, same process) by one started
with only the allow-list, every agent's key variables (which agent runs is known only once the order is
read), Interlock's own settings and the proxy and certificate variables its git and HTTP agents need. The
job's token, with which Interlock's git reads the state and run branches, goes over a pipe, never in an
environment, and so does the satellites' token (``INTERLOCK_SATELLITE_TOKEN``, the action's ``satellite-token``:
private satellites, or another account's, are cloned with it); Interlock reads both once and closes the pipe
before anything else starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from app.agents.environment import AGENT_KEYS, allowed_environment, parse_names

TOKEN_FD = "INTERLOCK_TOKEN_FD"
TOKENS = ("GITHUB_TOKEN", "INTERLOCK_PUSH_TOKEN")  # git's token in the work phase, first found
SATELLITE_TOKEN = "INTERLOCK_SATELLITE_TOKEN"  # the satellites' token (SPEC U7): on the pipe too, never in the env
OWN = ("INTERLOCK_AGENT", "INTERLOCK_AGENT_ENV", "INTERLOCK_LIBRARY", "INTERLOCK_READ_TOKEN", "INTERLOCK_DEBUG")
PYTHON = ("PYTHONSAFEPATH", "PYTHONPATH", "VIRTUAL_ENV")
NETWORK = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def isolated_environment(source: Mapping[str, str]) -> dict[str, str]:
    """What the work phase's process starts with (the read token stays ``INTERLOCK_READ_TOKEN``: the job
    hands it on to the agent as ``GITHUB_TOKEN`` itself)."""
    keys = {name for names in AGENT_KEYS.values() for name in names}
    network = {*NETWORK, *(name.lower() for name in NETWORK)}
    listed = parse_names(source.get("INTERLOCK_AGENT_ENV", ""))  # a refused name stops here, clearly
    env = allowed_environment(source, (*keys, *OWN, *PYTHON, *network, *listed))
    read_token = source.get("INTERLOCK_READ_TOKEN")  # a name the allow-list refuses to pass *as itself*
    return env | ({"INTERLOCK_READ_TOKEN": read_token} if read_token else {})


def isolate() -> None:
    """Re-execute this very command in the isolated environment, the job's token on a pipe; returns only
    when this process is already the isolated one."""
    if TOKEN_FD in os.environ:
        return
    token = next((os.environ[name] for name in TOKENS if os.environ.get(name)), "")
    tokens = f"{token}\n{os.environ.get(SATELLITE_TOKEN, '')}"  # a token holds no line break
    read, write = os.pipe()
    os.write(write, tokens.encode())  # two tokens are far smaller than a pipe's buffer: this never blocks
    os.close(write)
    os.set_inheritable(read, True)
    env = isolated_environment(os.environ) | {TOKEN_FD: str(read)}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)


def take_tokens(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The job's and the satellites' token the isolated process was handed on its pipe (read once, then closed);
    ``None`` for one not given, or outside the isolated process."""
    handed = take_token(env) or ""
    git, _, satellites = handed.partition("\n")
    return git or None, satellites or None


def take_token(env: Mapping[str, str]) -> str | None:
    """What the isolated process was handed on its pipe (read once, then closed); ``None`` outside it."""
    fd = env.get(TOKEN_FD)
    if not fd:
        return None
    chunks = []
    try:
        while chunk := os.read(int(fd), 4096):
            chunks.append(chunk)
        os.close(int(fd))
    except (OSError, ValueError):
        return None
    return b"".join(chunks).decode() or None
