"""What a preflight or ``interlock doctor`` finds: one finding per thing checked, with how to fix it.

The local checks (``app/local/preflight.py``) and the GitHub checks (``app/github/doctor.py``) live in
different layers, yet their findings are printed together and scripted against (``--json``), so the type
sits here, below both. The ``code`` names *what* was checked and never changes; ``severity`` says how it
went. A finding that is not ``ok`` always says how to fix it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"  # a run would fail or cannot start: ``run`` refuses, ``doctor`` exits 1
    WARNING = "warning"  # something may go wrong, or could not be checked
    OK = "ok"  # checked and fine: shown by ``doctor`` so that one sees what was checked


class FindingCode(StrEnum):
    GIT_VERSION = "git-version"
    GIT_REPOSITORY = "git-repository"
    BASE_BRANCH = "base-branch"
    CONFIG_FILE = "config-file"
    CONFIG_KEY = "config-key"
    RUN_SETTINGS = "run-settings"
    AGENT_SPEC = "agent-spec"
    AGENT_PROGRAM = "agent-program"
    AGENT_KEY = "agent-key"
    AGENT_ENDPOINT = "agent-endpoint"
    CHECK_PROGRAM = "check-program"
    PYTHON_MODULE = "python-module"
    GRAPH = "graph"
    GITHUB_API = "github-api"
    APP_CREDENTIALS = "app-credentials"
    APP_INSTALLATION = "app-installation"
    APP_PERMISSION = "app-permission"
    APP_EVENT = "app-event"
    REPOSITORY = "repository"
    WORKFLOW_FILE = "workflow-file"
    WORKFLOW_INPUTS = "workflow-inputs"
    WORKFLOW_RUNNER = "workflow-runner"
    TRIGGER_LABEL = "trigger-label"
    REPO_CONFIG = "repo-config"
    RUNNER_LABELS = "runner-labels"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: FindingCode
    subject: str  # what was checked: "agent claude (stages build, review)", "branch develop"
    message: str  # what was found, in one sentence
    fix: str = ""  # how to fix it; empty only when severity is ok

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity.value,
            "code": self.code.value,
            "subject": self.subject,
            "message": self.message,
            "fix": self.fix,
        }


def ok(code: FindingCode, subject: str, message: str) -> Finding:
    return Finding(Severity.OK, code, subject, message)


def error(code: FindingCode, subject: str, message: str, fix: str) -> Finding:
    return Finding(Severity.ERROR, code, subject, message, fix)


def warning(code: FindingCode, subject: str, message: str, fix: str) -> Finding:
    return Finding(Severity.WARNING, code, subject, message, fix)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.is_error for finding in findings)


def problems(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are not ``ok``, errors first (the order within each severity is kept)."""
    found = [finding for finding in findings if finding.severity is not Severity.OK]
    return sorted(found, key=lambda finding: finding.severity is not Severity.ERROR)
