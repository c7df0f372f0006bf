"""What ``interlock run`` decides before a run starts: which configuration file, which graph, which team; and
the team's turn (app/local/queue.py) that a process driving a run of a team with ``concurrency`` holds."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import GraphFileError, InterlockError
from app.engine.graph.model import Graph
from app.engine.record import Run
from app.github.config import CONFIG_PATH
from app.github.teams import IMPLICIT_TEAM
from app.graphset import find_graph, library_dirs
from app.local.config import ConfigError, LocalConfig
from app.local.launch import ConfigFile, read_config_file
from app.local.queue import queue_folder, team_place
from app.local.repofile import find_team_graph
from app.local.shell import LocalShell
from app.store.gitstore import common_dir


@dataclass(frozen=True)
class RunPlan:
    """The graph of a new run and the settings of its team; ``file`` is the configuration file read (``None``
    without one, or when it is invalid: the preflight then lists its problems with the rest)."""

    graph: Graph
    settings: LocalConfig
    file: ConfigFile | None = None


def own_config(repo: Path) -> Path | None:
    """The repository's own ``.github/interlock.yml`` in its work tree, read when ``--config`` is not given."""
    path = repo / CONFIG_PATH
    return path if path.is_file() else None


def plan_run(repo: Path, config: Path | None, reference: str | None, team: str | None) -> RunPlan:
    try:
        file = read_config_file(config) if config is not None else None
    except ConfigError as exc:  # the preflight lists every problem of the file with the others
        try:
            return RunPlan(find_graph(reference or "", library_dirs()), LocalConfig())
        except GraphFileError:  # nor can the graph be had without the file's graphsets: the file first
            raise ConfigError(f"the run cannot start; nothing was created and nothing charged: {exc}") from None
    if file is not None and file.repo is not None:
        graph, settings = find_team_graph(reference, file.repo, team, repo)
        return RunPlan(graph, settings, file)
    settings = file.config if file is not None else LocalConfig()
    if reference is None:
        raise ConfigError("give GRAPH, a graph file or name (a configuration with `teams:` gives a default graph)")
    if team is not None and team != team_name(settings):
        where = f"{file.path} has `team:` named {team_name(settings)!r}" if file else "no configuration file was read"
        raise ConfigError(f"--team {team}: {where}; teams are named under `teams:` (.github/interlock.yml)")
    return RunPlan(find_graph(reference, library_dirs()), settings, file)


def team_name(config: LocalConfig) -> str:
    return config.team.name if config.team is not None else IMPLICIT_TEAM


@contextmanager
def team_turn(shell: LocalShell, run_id: str, wait: bool = True) -> Iterator[None]:
    """Hold a place of the run's team while the body drives run ``run_id`` (SPEC U5), given up while the run
    asks a person at the terminal; no limit without ``concurrency``. The place names the run's agent file, so
    that the next holder stops an agent this process leaves running if it is killed."""
    limit = shell.config.concurrency
    if limit is None:
        yield
        return
    name = team_name(shell.config)
    folder = queue_folder(common_dir(Path(shell.repo.git_dir)), name)
    place = team_place(folder, name, limit, shell.progress.line, wait, shell.agent_path(run_id))
    with place:
        shell.away_from_team = place.stepped_out
        try:
            yield
        finally:
            shell.away_from_team = contextlib.nullcontext


def refuse_moved_on(seen: Run, run: Run, command: str) -> None:
    """A command that waited in line for a place applies to the run the person saw (SPEC H5: a gate binds to what
    the person reviewed): if another command moved the run on meanwhile, it is refused and changes nothing."""
    if run.version != seen.version:
        raise InterlockError(
            f"run {run.id} moved on while `{command}` waited (it was {seen.status.value} at {seen.stage}, now "
            f"{run.status.value} at {run.stage}): nothing was changed; look at `interlock status {run.id}` and "
            "type the command again if it still applies"
        )
