"""``interlock doctor --github OWNER/NAME``: is a repository ready for the App, read through GitHub's API?

Everything the service relies on is checked with read-only calls, each problem a finding that says how to
fix it: the app's credentials, its installation on the repository with the permissions and events it
needs, the mission workflow on the default and the base branch declaring the inputs the service sends, the
base branch, the trigger label, ``.github/interlock.yml`` and every graph it names, the runner labels.
Plain values in and out: the caller (the CLI) reads the environment and prints.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from githubkit.exception import GitHubException

from app.engine.errors import InterlockError
from app.engine.findings import Finding, FindingCode, error, ok, warning
from app.engine.graph.validate import validate_graph
from app.github.client import GitHubApp, GitHubError, Installation
from app.github.config import CONFIG_LIMIT, CONFIG_PATH, ConfigInvalid, RepoConfig, read_config_data, validate_config
from app.github.extends import extend, folder_place
from app.github.web import web_url
from app.graphset import SCHEMA_SUFFIX, find_graph
from app.inputfile import InputUnreadable, parse_json_text, parse_yaml_text

# What the app manifest (.github/app-manifest.json) asks for; a test keeps the two equal.
APP_PERMISSIONS = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "actions": "write",
    "checks": "write",
    "metadata": "read",
}
DISPATCH_INPUTS = ("run", "mission", "stage", "runner")  # what GitHubRuns._dispatch sends; a test keeps them equal
LEVELS = {"none": 0, "read": 1, "write": 2, "admin": 3}
HOSTED_RUNNER = re.compile(r"^(ubuntu|windows|macos)-(latest|[\d.]+)(-arm|-xlarge|-large)?$")
WORKFLOW_EXAMPLE = "Interlock's .github/workflows/interlock.yml"


def check_repository(app: GitHubApp, repo: str, library: list[Path], events: Iterable[str]) -> list[Finding]:
    """Every finding about ``repo``; stops early only where nothing further can be read."""
    try:
        return _check(app, repo, library, events)
    except GitHubException as exc:  # no answer at all: the address, the network, a proxy
        fix = "check GITHUB_API_URL (for GitHub Enterprise Server: https://HOST/api/v3) and the network"
        return [error(FindingCode.GITHUB_API, app.identity.api_url, f"cannot reach GitHub: {exc}", fix)]


def _check(app: GitHubApp, repo: str, library: list[Path], events: Iterable[str]) -> list[Finding]:
    found, installation = installation_findings(app, repo, web_url(app.identity.api_url))
    if installation is None:
        return found
    found += permission_findings(installation) + event_findings(installation, sorted(events))
    api = app.installation(int(installation["id"]))
    details = _guarded(partial(repository_findings, api, repo), FindingCode.REPOSITORY, repo)
    found += details
    if details[-1].is_error:
        return found
    default = details[-1].message.removeprefix("default branch ")
    config = _config(api, repo, default, found)
    for branch in dict.fromkeys([default, config.base]):
        found += _guarded(partial(workflow_findings, api, repo, branch, config), FindingCode.WORKFLOW_FILE, repo)
    found += _guarded(partial(branch_and_label_findings, api, repo, config), FindingCode.BASE_BRANCH, repo)
    found += _guarded(partial(graph_findings, api, repo, default, config, library), FindingCode.GRAPH, repo)
    found += _guarded(partial(runner_findings, api, repo, config, installation), FindingCode.RUNNER_LABELS, repo)
    return found


def repository_findings(api: Installation, repo: str) -> list[Finding]:
    details = api.repository(repo)
    if details is None:
        fix = "grant the app Metadata: read, and check the repository's name"
        return [error(FindingCode.REPOSITORY, repo, f"the installation cannot see {repo}", fix)]
    return [ok(FindingCode.REPOSITORY, repo, f"default branch {details.get('default_branch') or 'main'}")]


def installation_findings(app: GitHubApp, repo: str, web: str) -> tuple[list[Finding], dict[str, Any] | None]:
    as_app = app.as_app()
    subject = f"app {app.identity.app_id}"
    try:
        identity = as_app.app_identity()
    except GitHubError as exc:
        fix = "check that GITHUB_APP_ID and the private key are the same app's, and that GITHUB_API_URL is right"
        return [error(FindingCode.APP_CREDENTIALS, subject, f"GitHub refused the app's credentials: {exc}", fix)], None
    slug = str(identity.get("slug") or app.identity.slug or "")
    found = [
        ok(FindingCode.APP_CREDENTIALS, subject, f"authenticated as the app {slug or '?'} at {app.identity.api_url}")
    ]
    try:
        installation = as_app.repo_installation(repo)
    except GitHubError as exc:
        fix = "check that the repository name is right"
        return [*found, error(FindingCode.APP_INSTALLATION, repo, str(exc), fix)], None
    if installation is None or "id" not in installation:
        page = f"{web}/apps/{slug}/installations/new" if slug else "the app's page, Install App"
        fix = f"install the app on {repo} ({page}), or add {repo} to its installation's repositories"
        return [*found, error(FindingCode.APP_INSTALLATION, repo, f"the app is not installed on {repo}", fix)], None
    if installation.get("suspended_at"):
        fix = "unsuspend the installation in its settings (Configure, Unsuspend)"
        message = f"installation {installation['id']} is suspended since {installation['suspended_at']}"
        return [*found, error(FindingCode.APP_INSTALLATION, repo, message, fix)], None
    found.append(ok(FindingCode.APP_INSTALLATION, repo, f"installation {installation['id']}"))
    return found, installation


def permission_findings(installation: dict[str, Any]) -> list[Finding]:
    granted = installation.get("permissions") or {}
    found = []
    for name, needed in APP_PERMISSIONS.items():
        level = str(granted.get(name) or "none")
        if LEVELS.get(level, 0) < LEVELS[needed]:
            title = name.replace("_", " ").capitalize()
            fix = (
                f"in the app's settings set Repository permissions > {title} to {needed.capitalize()}, "
                "then accept the new permissions in the installation's settings"
            )
            found.append(
                error(FindingCode.APP_PERMISSION, name, f"the installation has {name}: {level}, needs {needed}", fix)
            )
    if not found:
        found.append(
            ok(FindingCode.APP_PERMISSION, "permissions", ", ".join(f"{k}: {granted[k]}" for k in APP_PERMISSIONS))
        )
    return found


def event_findings(installation: dict[str, Any], events: list[str]) -> list[Finding]:
    subscribed = set(installation.get("events") or [])
    found = [
        error(
            FindingCode.APP_EVENT,
            event,
            f"the app is not subscribed to `{event}`: the service never hears of it",
            f"subscribe to the `{event}` event in the app's settings (Permissions & events)",
        )
        for event in events
        if event not in subscribed
    ]
    return found or [ok(FindingCode.APP_EVENT, "events", ", ".join(events))]


def _config(api: Installation, repo: str, default: str, found: list[Finding]) -> RepoConfig:
    """The repository's configuration as the App reads it, over what it extends (``extends:``); the defaults
    (said so) when it is absent or broken, so that the other checks still run."""
    subject = f"{CONFIG_PATH} on {default}"
    raw = None
    try:
        raw = api.file(repo, CONFIG_PATH, default)
        config = extend(api, repo, parse_config_data(raw))
    except ConfigInvalid as exc:
        message = f"{str(exc).removeprefix(CONFIG_PATH + ': ')} (the checks below use the defaults)"
        found.append(error(FindingCode.REPO_CONFIG, subject, message, _config_fix(raw, default)))
        return RepoConfig()
    except GitHubError as exc:
        found.append(error(FindingCode.REPO_CONFIG, subject, str(exc), "grant the app Contents: read"))
        return RepoConfig()
    said = "valid" if raw is not None else "absent: the defaults apply"
    found.append(ok(FindingCode.REPO_CONFIG, subject, f"{said}, over {config.extends}" if config.extends else said))
    return config


def parse_config_data(raw: bytes | None) -> dict[str, Any]:
    """The file's own data, checked on its own first, so that an error names the repository's file."""
    data = read_config_data(raw)
    validate_config(data)
    return data


def _config_fix(raw: bytes | None, default: str) -> str:
    """How to correct the file: the key a misspelt one probably meant, and the keys there are."""
    known = list(RepoConfig.model_fields)
    try:
        data = parse_yaml_text(CONFIG_PATH, raw or b"", CONFIG_LIMIT)
    except InputUnreadable:
        data = None
    meant = [
        f"`{key}` to `{close[0]}`"
        for key in (data if isinstance(data, dict) else {})
        if key not in known and (close := difflib.get_close_matches(str(key), known, n=1))
    ]
    hint = f"rename {', '.join(meant)} in" if meant else "correct"
    return f"{hint} {CONFIG_PATH} on {default}; the keys are {', '.join(known)}"


def workflow_findings(api: Installation, repo: str, branch: str, config: RepoConfig) -> list[Finding]:
    path = f".github/workflows/{config.workflow}"
    subject = f"{path} on {branch}"
    raw = api.file(repo, path, branch)
    if raw is None:
        why = (
            "GitHub dispatches only workflows on the default branch"
            if branch != config.base
            else ("run branches are made from the base, and each mission runs the workflow of its run branch")
        )
        fix = f"copy {WORKFLOW_EXAMPLE} to {path} on {branch}"
        return [error(FindingCode.WORKFLOW_FILE, subject, f"no workflow file: {why}", fix)]
    try:
        data = parse_yaml_text(path, raw, CONFIG_LIMIT)
    except InputUnreadable as exc:
        return [error(FindingCode.WORKFLOW_FILE, subject, exc.reason, "correct its syntax")]
    found = dispatch_findings(data, subject)
    if config.runners and b"inputs.runner" not in raw:
        found.append(
            warning(
                FindingCode.WORKFLOW_RUNNER,
                subject,
                "`runners:` is configured but the workflow never reads `inputs.runner`: its runs-on is fixed",
                "set the work job's `runs-on: ${{ fromJSON(inputs.runner) }}`",
            )
        )
    return found


def dispatch_findings(data: Any, subject: str) -> list[Finding]:
    """``on: workflow_dispatch`` declaring every input the service sends, and requiring none it does not."""
    triggers = (data.get("on", data.get(True)) if isinstance(data, dict) else None) or {}
    if isinstance(triggers, str | list):  # `on: push` or `on: [push, workflow_dispatch]`: events without settings
        events = [triggers] if isinstance(triggers, str) else triggers
        triggers = dict.fromkeys(event for event in events if isinstance(event, str))
    declare = f"declare them under on.workflow_dispatch.inputs as in {WORKFLOW_EXAMPLE}"
    if not isinstance(triggers, dict) or "workflow_dispatch" not in triggers:
        return [error(FindingCode.WORKFLOW_INPUTS, subject, "no `on: workflow_dispatch` trigger", declare)]
    dispatch = triggers["workflow_dispatch"]
    inputs = dispatch.get("inputs") if isinstance(dispatch, dict) else None
    inputs = inputs if isinstance(inputs, dict) else {}  # any other shape declares no input GitHub accepts
    found = []
    missing = [name for name in DISPATCH_INPUTS if name not in inputs]
    if missing:
        names = ", ".join(f"`{name}`" for name in missing)
        message = f"declares no input {names}: GitHub refuses every dispatch of a mission (422 Unexpected inputs)"
        found.append(error(FindingCode.WORKFLOW_INPUTS, subject, message, f"add {names}; {declare}"))
    for name, spec in inputs.items():
        spec = spec if isinstance(spec, dict) else {}
        if name not in DISPATCH_INPUTS and spec.get("required") and "default" not in spec:
            message = f"requires the input `{name}`, which the service never sends: every dispatch fails"
            found.append(
                error(FindingCode.WORKFLOW_INPUTS, subject, message, f"give `{name}` a default or make it optional")
            )
    return found or [ok(FindingCode.WORKFLOW_INPUTS, subject, f"workflow_dispatch with inputs {', '.join(inputs)}")]


def branch_and_label_findings(api: Installation, repo: str, config: RepoConfig) -> list[Finding]:
    found = []
    head = api.ref(repo, config.base)
    subject = f"base branch {config.base}"
    if head is None:
        fix = f"create the branch {config.base} on GitHub, or set `base:` in {CONFIG_PATH}"
        found.append(
            error(FindingCode.BASE_BRANCH, subject, f"{repo} has no branch {config.base}: no run can start", fix)
        )
    else:
        found.append(ok(FindingCode.BASE_BRANCH, subject, f"exists at {head[:12]}"))
    label = config.trigger_label
    if api.label(repo, label) is None:
        fix = (
            f"create it (`gh label create {json.dumps(label)} --repo {repo}`), or set `trigger_label:` in {CONFIG_PATH}"
        )
        found.append(
            error(FindingCode.TRIGGER_LABEL, label, f"{repo} has no label `{label}`: no issue can start a run", fix)
        )
    else:
        found.append(ok(FindingCode.TRIGGER_LABEL, label, "exists"))
    return found


def graph_findings(
    api: Installation, repo: str, default: str, config: RepoConfig, library: list[Path]
) -> list[Finding]:
    """Every graph file of the graphsets validates, and the default graph is found (graphsets, then library)."""
    found: list[Finding] = []
    files: list[str] = []
    for folder in config.graphsets:
        place = folder_place(api, repo, default, folder)  # a folder an extended file names: in its repository
        names = api.folder(*place) if place else None
        if place is None or names is None:
            if "graphsets" in config.model_fields_set:
                fix = f"create {folder} with graph files, or remove it from `graphsets:`"
                found.append(warning(FindingCode.GRAPH, folder, f"no folder {folder} on {default}", fix))
            continue
        for name in sorted(n for n in names if n.endswith(".json") and not n.endswith(SCHEMA_SUFFIX)):
            files.append(f"{folder.rstrip('/')}/{name}")
            found.append(graph_file_finding(files[-1], api.file(place[0], f"{place[1].rstrip('/')}/{name}", place[2])))
    wanted = config.default_graph
    in_repo = [path for path in files if path.rsplit("/", 1)[-1] == f"{wanted}.json"]
    if in_repo:
        found.append(ok(FindingCode.GRAPH, f"default_graph {wanted}", f"from {in_repo[0]}"))
        return found
    try:
        find_graph(wanted, library)
        found.append(ok(FindingCode.GRAPH, f"default_graph {wanted}", "from the bundled library"))
    except InterlockError as exc:
        folder = config.graphsets[0] if config.graphsets else ".github/interlock/graphs"
        fix = f"add {folder}/{wanted}.json, or set `default_graph:` to a graph that exists"
        found.append(error(FindingCode.GRAPH, f"default_graph {wanted}", str(exc), fix))
    return found


def graph_file_finding(path: str, raw: bytes | None) -> Finding:
    fix = f"run `interlock validate {path}` in a checkout and correct what it reports"
    try:
        outcome = validate_graph(parse_json_text(path, raw or b""))
    except InputUnreadable as exc:
        return error(FindingCode.GRAPH, path, exc.reason, fix)
    if outcome.errors:
        message = "; ".join(f"`{issue.code}`: {issue.message}" for issue in outcome.errors)
        return error(FindingCode.GRAPH, path, f"invalid graph: {message}", fix)
    return ok(FindingCode.GRAPH, path, f"valid ({len(outcome.warnings)} warning(s))" if outcome.warnings else "valid")


def runner_findings(api: Installation, repo: str, config: RepoConfig, installation: dict[str, Any]) -> list[Finding]:
    """GitHub-hosted labels are known by name; self-hosted ones need a repository runner carrying them all."""
    own: dict[str, list[str]] = {}
    found: list[Finding] = []
    for capability, value in config.runners.items():
        if isinstance(value, str) and HOSTED_RUNNER.match(value):
            found.append(ok(FindingCode.RUNNER_LABELS, f"runners.{capability}", f"GitHub-hosted {value}"))
        else:
            own[capability] = [value] if isinstance(value, str) else list(value)
    if not config.runners:
        found.append(ok(FindingCode.RUNNER_LABELS, "runners", "none configured: missions run on ubuntu-latest"))
    if not own:
        return found
    if (installation.get("permissions") or {}).get("administration") not in ("read", "write"):
        return found + [
            _runners_unchecked(capability, labels, "the app has no Administration: read permission")
            for capability, labels in own.items()
        ]
    try:
        runners = api.runners(repo)
    except GitHubError as exc:
        why = f"GitHub answered {exc.status}"
        return found + [_runners_unchecked(capability, labels, why) for capability, labels in own.items()]
    return found + [_runner_finding(repo, capability, labels, runners) for capability, labels in own.items()]


def _runner_finding(repo: str, capability: str, labels: list[str], runners: list[tuple[set[str], str]]) -> Finding:
    subject, names = f"runners.{capability}", ", ".join(labels)
    carriers = [status for carried, status in runners if {label.lower() for label in labels} <= carried]
    fix = f"register a runner with the labels {names} (Settings > Actions > Runners), or correct `runners:`"
    if not carriers:
        message = (
            f"no runner of {repo} carries all of {names}: its missions would wait (organisation runners not listed)"
        )
        return warning(FindingCode.RUNNER_LABELS, subject, message, fix)
    if "online" not in carriers:
        message = (
            f"the runners carrying {names} are all {', '.join(sorted(set(carriers)))}: missions wait until one is up"
        )
        return warning(FindingCode.RUNNER_LABELS, subject, message, "start one of those runners")
    return ok(FindingCode.RUNNER_LABELS, subject, f"{len(carriers)} runner(s) carry {names}")


def _runners_unchecked(capability: str, labels: list[str], why: str) -> Finding:
    names = ", ".join(labels)
    fix = f"check in Settings > Actions > Runners that a runner carries {names}, or grant Administration: read"
    return warning(FindingCode.RUNNER_LABELS, f"runners.{capability}", f"could not be checked: {why}", fix)


def _guarded(checks: Callable[[], list[Finding]], code: FindingCode, subject: str) -> list[Finding]:
    """One group of checks; a refused call becomes a finding instead of ending the whole report."""
    try:
        return checks()
    except GitHubError as exc:
        return [error(code, subject, str(exc), "grant the app the permissions listed above, or check GITHUB_API_URL")]
