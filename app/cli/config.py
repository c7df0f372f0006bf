"""``interlock config check``: the repository configuration (``.github/interlock.yml``) with every graph its
teams attach to, from a checkout (``--file``) or from GitHub through the App's credentials (``--repo``).

Exit codes as ``interlock validate``: 0 when nothing is wrong (warnings allowed), 1 when the configuration or a
graph has an error, 2 when the file or the repository cannot be read at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from app.cli.common import EXIT_INVALID, app_installation, render
from app.engine.errors import InterlockError
from app.engine.findings import Finding, FindingCode, has_errors, warning

CONFIG_PATH = ".github/interlock.yml"  # app.github.config's, named here for the help without loading it


def register(cli: typer.Typer) -> None:
    group = typer.Typer(
        name="config",
        help="The repository configuration, .github/interlock.yml.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    cli.add_typer(group, name="config")

    @group.command("check")
    def check(
        repo: Annotated[
            str | None, typer.Option("--repo", metavar="OWNER/NAME", help="Check a repository's file on GitHub.")
        ] = None,
        file: Annotated[
            Path | None,
            typer.Option(
                "--file",
                help=f"Check a file of a checkout (default: ./{CONFIG_PATH}); with --repo, follow its extends.",
            ),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    ) -> None:
        """Validate the configuration and every graph of every graphset its teams attach to, against each
        team's roster: every error at once. Exit 0 when valid, 1 on an error, 2 when it cannot be read."""
        if repo is not None and file is None:
            findings, title = _github(repo), f"interlock config check: {repo} on GitHub"
        else:
            path = file or Path(CONFIG_PATH)
            findings, title = _local(path, repo), f"interlock config check: {path}" + (f" as {repo}'s" if repo else "")
        if as_json:
            typer.echo(
                json.dumps({"ok": not has_errors(findings), "findings": [f.to_json() for f in findings]}, indent=2)
            )
        else:
            typer.echo(render(findings, title))
        if has_errors(findings):
            raise typer.Exit(EXIT_INVALID)


def _local(path: Path, repo: str | None) -> list[Finding]:
    """A file of a checkout; its graphsets are folders of the repository it is in (the folder above
    ``.github/``, else the current folder). ``extends`` is followed through the App when ``repo`` names the
    repository the file is for (its owner completes ``extends: name``); offline it cannot be, and a warning
    says so."""
    from app.github.config import ConfigInvalid, read_config_data
    from app.github.configcheck import config_problems, layers_findings, local_graphsets
    from app.github.extends import alone
    from app.graphset import library_dirs
    from app.inputfile import InputUnreadable, read_input_bytes

    try:
        raw = read_input_bytes(path)
    except InputUnreadable as exc:
        raise InterlockError(f"cannot read {path}: {exc.reason}") from None
    subject = str(path)
    root = path.resolve().parent.parent if path.resolve().parent.name == ".github" else Path.cwd()
    try:
        data = read_config_data(raw, subject)
    except ConfigInvalid as exc:
        return config_problems(exc, subject)
    extends = data.get("extends")
    if isinstance(extends, str) and repo is not None:
        from app.github.configcheck import github_graphsets
        from app.github.extends import every_layer

        api = app_installation(repo)
        inherited = local_graphsets(root, github_graphsets(api, repo, ""))
        return layers_findings(every_layer(api, repo, data, subject), inherited, library_dirs(), subject)
    found = layers_findings(alone(data, subject), local_graphsets(root), library_dirs(), subject)
    if isinstance(extends, str):
        message = f"extends: {extends} cannot be followed offline: only this file was checked"
        fix = "add --repo OWNER/NAME (the repository the file is for) and the App's credentials to follow it"
        found.insert(1, warning(FindingCode.REPO_CONFIG, subject, message, fix))
    return found


def _github(repo: str) -> list[Finding]:
    """The repository's file on its default branch and every file it extends, through the App's credentials:
    every problem of every file, and the graphs unless a problem other than an unknown key leaves none."""
    from app.github.config import ConfigInvalid, read_config_data
    from app.github.configcheck import config_problems, github_graphsets, layers_findings
    from app.github.extends import every_layer
    from app.graphset import library_dirs

    api = app_installation(repo)
    branch = (api.repository(repo) or {}).get("default_branch") or "main"
    subject = f"{CONFIG_PATH} on {repo}@{branch}"
    try:
        own = read_config_data(api.file(repo, CONFIG_PATH, branch))
    except ConfigInvalid as exc:
        return config_problems(exc, subject)
    return layers_findings(every_layer(api, repo, own), github_graphsets(api, repo, branch), library_dirs(), subject)
