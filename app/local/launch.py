"""How a local run was launched, kept in its record so that every command that continues it works the same way.

``interlock run GRAPH --agent ./my-agent.sh`` stops at a gate; ``interlock approve RUN`` is another process,
maybe days later and from another terminal, whose own command line names no agent. It must drive the run
with ``./my-agent.sh`` all the same. So the start records a ``Launch`` in the run record, in the start
transition: the resolved configuration, the agent of each kind of work, the configuration file with the
hash of its bytes, and the gates. A continuing command rebuilds its configuration from the launch in force;
what its own command line overrides (``--agent``, ``--config``, ``--gates``) is recorded as a new launch
carried by the command's event, in that same transition, and is in force from then on.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from app.engine.record import Launch, Run
from app.local.config import (
    ConfigError,
    GateMode,
    LocalConfig,
    decide_spec,
    describe,
    read_config_bytes,
)
from app.local.repofile import RepoFile, parse_either
from app.redact import Redactor


@dataclass(frozen=True)
class ConfigFile:
    """A configuration file as read once: where it is, the sha256 of its bytes, and what they say."""

    path: Path
    sha256: str
    config: LocalConfig  # a repository-format file's: its default team's
    repo: RepoFile | None = None  # the repository-format reading, to choose another team


def read_config_file(path: Path) -> ConfigFile:
    content = read_config_bytes(path)
    config, repo = parse_either(content, path)
    return ConfigFile(path.resolve(), hashlib.sha256(content).hexdigest(), config, repo)


@dataclass(frozen=True)
class CommandLine:
    """What a continuing command's own options say; ``None`` leaves that part as the run was launched."""

    agent: str | None = None
    config: Path | None = None
    gates: GateMode | None = None

    def changed(self) -> list[str]:
        return [name for name in ("agent", "config", "gates") if getattr(self, name) is not None]


def person() -> str:
    return os.environ.get("USER") or os.environ.get("USERNAME") or "local user"


def agents_of(config: LocalConfig) -> dict[str, str]:
    """The agent spec of each kind of work, resolved (a role without its own agent uses the default)."""
    agents = {"default": config.agent, "decide": decide_spec(config), "advisor": config.advisor}
    for role in config.team.roles if config.team else []:
        agents[f"role:{role.name}"] = role.agent or config.agent
    return {name: spec for name, spec in agents.items() if spec}


def make_launch(
    config: LocalConfig,
    gates: GateMode | None,
    source: tuple[str | None, str | None],
    command: str,
    at: datetime,
    changed: list[str] | None = None,
) -> Launch:
    """The launch record of ``config``; ``source`` is the configuration file and its sha256, if any.

    The record is journaled and shown: a configuration that carries a secret (a key written into an agent's
    command line, say) is refused rather than stored; the agent should read it from its environment.
    """
    settings = describe(config.model_copy(update={"gates": gates}))
    if Redactor().data(settings) != settings:
        raise ConfigError(
            "the configuration carries a secret (a token or key in an agent's command line?): it would be "
            "stored in the run record. Put it in an environment variable the agent reads instead"
        )
    return Launch(
        command=command,
        at=at,
        by=person(),
        changed=list(changed or []),
        agents=agents_of(config),
        gates=gates,
        config_file=source[0],
        config_sha256=source[1],
        settings=settings,
    )


def launch_in_force(run: Run) -> Launch | None:
    return run.relaunches[-1] if run.relaunches else run.launch


def config_of(run_id: str, launch: Launch) -> LocalConfig:
    try:
        return LocalConfig.model_validate(launch.settings)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"run {run_id}: its recorded launch cannot be read ({problems}); give --config") from None


def changed_config_note(launch: Launch) -> str | None:
    """A word on stderr when the configuration file a run was launched with is no longer what it was."""
    if launch.config_file is None:
        return None
    path = Path(launch.config_file)
    try:
        now = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        now = None
    if now == launch.config_sha256:
        return None
    what = "is gone" if now is None else f"has changed (sha256 {now[:12]}, was {str(launch.config_sha256)[:12]})"
    return (
        f"note: the configuration file {path} {what} since the run was launched; the run goes on with the "
        f"configuration recorded at its launch (give --config {path} to use the file as it is now)"
    )


def continue_launch(
    run: Run, line: CommandLine, command: str, at: datetime
) -> tuple[LocalConfig, GateMode | None, Launch | None]:
    """The configuration and gates a continuing command drives ``run`` with, and the override to record
    (``None`` when its command line overrides nothing).

    ``--config FILE`` replaces the recorded configuration, keeping the run's base, policy and context tiers
    (they took effect at the start) and the agent in force if the file names none; ``--agent`` and
    ``--gates`` replace those parts. A run launched before launches were recorded has only the command line.
    """
    current = launch_in_force(run)
    config = config_of(run.id, current) if current else LocalConfig(base=run.base)
    gates = GateMode(current.gates) if current and current.gates else None
    source = (current.config_file, current.config_sha256) if current else (None, None)
    if line.config is not None:
        file = read_config_file(line.config)
        kept = {name: getattr(config, name) for name in ("base", "policy", "context")}
        if file.repo is not None:  # the run's own team, as the file says it now (SPEC U1)
            file = replace(file, config=file.repo.settings(file.repo.team_or_default(config.team)))
        config = file.config.model_copy(update={**kept, "agent": file.config.agent or config.agent})
        gates = file.config.gates or gates
        source = (str(file.path), file.sha256)
    if line.agent is not None:
        config = config.model_copy(update={"agent": line.agent})
    gates = line.gates or gates
    changed = line.changed()
    return config, gates, make_launch(config, gates, source, command, at, changed) if changed else None
