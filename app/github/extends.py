"""``extends: owner/repo[:path]`` in ``.github/interlock.yml`` (issue 13): a repository inherits an
organisation's shared configuration, as Probot's ``_extends`` does, so that teams, gatekeepers and runners are
written once for many repositories.

As in Probot: ``repo`` alone is a repository of the same owner; without ``:path`` the file is at the same path
(``.github/interlock.yml``), except in a repository named ``.github``, where it is ``interlock.yml`` at its root;
an extended file may extend another, and each is read from its repository's default branch. Unlike Probot's
shallow merge, mappings merge key by key (``merge``), so a repository can change one key of a team it inherits.
A cycle, a chain longer than ``MAX_CHAIN``, a repository the App cannot read and a missing file are
configuration errors: the caller starts nothing and says why.

A graphset folder an extended file names is a folder of the repository that file is in: it is kept as
``owner/name:folder`` (the spelling of ``extends:``), and ``folder_home`` says where to read it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

from app.github.config import CONFIG_PATH, ConfigInvalid, RepoConfig, read_config_data, validate_config

MAX_CHAIN = 5  # files in one chain, the repository's own included: each costs two API calls


class Reader(Protocol):
    """What loading needs of the GitHub client (``app/github/client.py`` ``Installation``)."""

    def repository(self, repo: str) -> dict[str, Any] | None: ...

    def file(self, repo: str, path: str, ref: str) -> bytes | None: ...


class Source(NamedTuple):
    repo: str
    path: str

    def __str__(self) -> str:
        return f"{self.repo}:{self.path}"


def source_of(spec: str, owner: str) -> Source:
    """Where ``extends: spec`` points, written in a repository of ``owner`` (Probot's rules, above)."""
    target, _, path = spec.partition(":")
    repo = target if "/" in target else f"{owner}/{target}"
    if not path:
        path = CONFIG_PATH.removeprefix(".github/") if repo.split("/")[1] == ".github" else CONFIG_PATH
    return Source(repo, path)


def load_config(api: Reader, repo: str, branch: str) -> RepoConfig:
    """The repository's configuration from ``branch`` (its default branch), merged over every file it extends,
    each file validated on its own first so that an error names the file it is in."""
    own = read_config_data(api.file(repo, CONFIG_PATH, branch))
    validate_config(own)
    return extend(api, repo, own)


def extend(api: Reader, repo: str, own: dict[str, Any], source: str = CONFIG_PATH) -> RepoConfig:
    """``own``, the configuration of ``repo`` (already checked on its own), merged over every file it extends
    (``interlock config check --file F --repo R`` gives a file of a checkout here); the first problem raised."""
    files, broken = _chain(api, repo, own, source)
    for where, data in files[1:]:
        validate_config(data, where)
    if broken:
        raise ConfigInvalid(broken[0])
    return _merged([data for _, data in files], source)


class Layers(NamedTuple):
    """Every file of a chain checked (``interlock config check``, issue 28): each problem named by its file, and
    the configuration with the unknown keys left out (``None`` when another problem leaves none to check)."""

    problems: list[str]
    config: RepoConfig | None


def every_layer(api: Reader, repo: str, own: dict[str, Any], source: str = CONFIG_PATH) -> Layers:
    """As ``extend``, but every problem of every file at once: a file whose only problems are unknown keys is
    merged without them, so that the graphs can still be checked against the teams."""
    files, broken = _chain(api, repo, own, source)
    problems: list[str] = []
    kept: list[dict[str, Any] | None] = []
    for where, data in files:
        try:
            validate_config(data, where)
            kept.append(data)
        except ConfigInvalid as exc:
            problems += exc.problems
            kept.append(exc.known_only)
    clean = [data for data in kept if data is not None]
    if broken or len(clean) < len(kept):
        return Layers(problems + broken, None)
    try:
        return Layers(problems, _merged(clean, source))
    except ConfigInvalid as exc:  # each file valid, the whole not
        return Layers(problems + exc.problems, None)


def alone(data: dict[str, Any], source: str) -> Layers:
    """One file checked on its own (a checkout's, offline), as ``every_layer`` checks each file of a chain."""
    try:
        return Layers([], validate_config(data, source))
    except ConfigInvalid as exc:
        return Layers(exc.problems, None if exc.known_only is None else validate_config(exc.known_only, source))


def _chain(
    api: Reader, repo: str, own: dict[str, Any], source: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Each file of the chain, the repository's own first, as ``(where, data)`` (an extended file's graphsets
    homed), and why the chain broke where it did (``[]``: it did not)."""
    files, chain = [(source, own)], [Source(repo, source)]
    spec = own.get("extends")
    while isinstance(spec, str):
        extended = source_of(spec, chain[-1].repo.split("/")[0])
        try:
            data = _read_extended(api, chain, extended, spec)
        except ConfigInvalid as exc:
            return files, exc.problems
        files.append((str(extended), with_home(data, extended.repo)))
        chain.append(extended)
        spec = data.get("extends")
    return files, []


def _merged(layers: list[dict[str, Any]], source: str) -> RepoConfig:
    merged: dict[str, Any] = {}
    for data in reversed(layers):  # the most general first; each nearer file over it
        merged = merge(merged, data)
    return validate_config(merged, f"{source} with what it extends")


INHERITED_FOLDER = re.compile(r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}):(?P<path>.+)$")


def with_home(data: dict[str, Any], repo: str) -> dict[str, Any]:
    """An extended file's data, each graphset folder it names (top-level and per team) as ``repo:folder``, so
    that its graphs are read from the repository that declared them, not from the one that inherits them."""
    homed = dict(data)

    def home(folders: Any) -> Any:
        if not isinstance(folders, list):
            return folders
        return [f"{repo}:{f}" if isinstance(f, str) and folder_home(f)[0] is None else f for f in folders]

    if "graphsets" in homed:
        homed["graphsets"] = home(homed["graphsets"])
    if isinstance(homed.get("teams"), dict):
        homed["teams"] = {
            name: {**team, "graphsets": home(team["graphsets"])}
            if isinstance(team, dict) and "graphsets" in team
            else team
            for name, team in homed["teams"].items()
        }
    return homed


def folder_home(folder: str) -> tuple[str | None, str]:
    """The repository a graphset folder belongs to (``None``: the repository whose configuration it is) and its
    path there."""
    found = INHERITED_FOLDER.match(folder)
    return (found["repo"], found["path"]) if found else (None, folder)


def folder_place(api: Reader, repo: str, branch: str, folder: str) -> tuple[str, str, str] | None:
    """Where a graphset folder's files are read: ``(repository, path, branch)``, an inherited folder on its own
    repository's default branch; ``None`` when the App cannot read that repository."""
    home, path = folder_home(folder)
    if home is None:
        return repo, folder, branch
    info = api.repository(home)
    if info is None or not isinstance(info.get("default_branch"), str):
        return None
    return home, path, info["default_branch"]


def _read_extended(api: Reader, chain: list[Source], source: Source, spec: str) -> dict[str, Any]:
    """One extended file's data (not validated yet), or the configuration error that says why it cannot be had."""
    where = f"{chain[-1]}: extends: {spec}"
    if source in chain:
        cycle = " → ".join(str(s) for s in [*chain[chain.index(source) :], source])
        raise ConfigInvalid(f"{where}: a cycle of extends ({cycle})")
    if len(chain) >= MAX_CHAIN:
        raise ConfigInvalid(f"{where}: more than {MAX_CHAIN} files extend one another")
    if ".." in source.path.split("/"):
        raise ConfigInvalid(f"{where}: the path may not leave the repository (`..`)")
    info = api.repository(source.repo)
    if info is None or not isinstance(info.get("default_branch"), str):
        raise ConfigInvalid(
            f"{where}: the App cannot read {source.repo} (it does not exist, or the App is not installed on it)"
        )
    raw = api.file(source.repo, source.path, info["default_branch"])
    if raw is None:
        raise ConfigInvalid(f"{where}: {source.repo} has no {source.path} on its default branch")
    return read_config_data(raw, str(source))


def merge(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """``own`` over ``base``: two mappings merge key by key, recursively (teams by name, roles given as mappings
    by name, runners and prices by key); anything else, a list included, is ``own``'s whole. ``own``'s keys
    come first, in its order, then those only ``base`` has: a repository's first team stays its default team."""
    merged: dict[str, Any] = {}
    for key, value in own.items():
        inherited = base.get(key)
        merged[key] = merge(inherited, value) if isinstance(value, dict) and isinstance(inherited, dict) else value
    return {**merged, **{key: value for key, value in base.items() if key not in own}}
