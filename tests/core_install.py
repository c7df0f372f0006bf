"""A mission job's environment in a test: the core install of pyproject.toml, without the ``service`` extra.

The suite's own environment has every extra (the ``test`` extra pulls ``service`` in), so a job-side import of
FastAPI or cryptography would pass unnoticed there. A command run through :func:`core_only_command` cannot
import any module of a distribution that only the service extra brings (read from pyproject.toml and the
installed distributions' metadata, not listed by hand): ``sys.modules[name] = None`` makes ``import name``
raise ModuleNotFoundError, exactly as in an environment that lacks it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys
import tomllib
from functools import cache

from packaging.requirements import Requirement

from tests.helpers import ROOT


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def closure(requirements: list[str]) -> set[str]:
    """The installed distributions ``requirements`` pull in, each with the extras asked of it."""
    extras_of: dict[str, set[str]] = {}
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        key, asked = _key(requirement.name), set(requirement.extras)
        if key in extras_of and asked <= extras_of[key]:
            continue
        extras_of[key] = extras_of.get(key, set()) | asked
        wanted = extras_of[key] | {""}
        for text in metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": extra}) for extra in wanted):
                pending.append(needed)
    return set(extras_of)


@cache
def project() -> dict[str, list[str]]:
    """The core dependencies and each extra, as pyproject.toml lists them (``""`` is the core)."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"": table["dependencies"], **table["optional-dependencies"]}


@cache
def service_only_modules() -> frozenset[str]:
    """The top-level modules of every distribution the service extra adds to the core install."""
    core = closure(project()[""])
    added = closure(project()[""] + project()["service"]) - core
    return frozenset(
        module
        for module, distributions in metadata.packages_distributions().items()
        if any(_key(name) in added for name in distributions) and not any(_key(name) in core for name in distributions)
    )


def core_only_command(*args: str) -> list[str]:
    """``interlock ARGS`` run by this Python with no module of the service extra importable."""
    blocked = sorted(service_only_modules())
    code = f"import sys; sys.modules.update(dict.fromkeys({blocked!r})); sys.argv[0] = 'interlock'; "
    return [sys.executable, "-c", code + "from app.cli import main; main()", *args]
