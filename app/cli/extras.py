"""What a command says when it needs the ``service`` extra and the environment has only the core install.

A mission job installs the core alone (pyproject.toml's ``dependencies``: the action's install is measured in
seconds, see the README's "The action"); the webhook service, its web board and signing in as the GitHub App
need the ``service`` extra (FastAPI, uvicorn, githubkit's App auth with PyJWT, cryptography, and the Redis
client replicas share their quota through). Those imports stand
inside the commands that need them, so a core install runs every job command, and a service command run there
fails with the line to type rather than an internal error.
"""

from __future__ import annotations

# The top-level modules of the service extra that app/ imports; tests/test_extras.py checks that every import
# in app/ of a package only the extra installs is named here.
SERVICE_MODULES = frozenset({"fastapi", "starlette", "uvicorn", "cryptography", "jwt", "redis"})
INSTALL_SERVICE = "pip install 'interlock[service]'"


def missing_extra(exc: BaseException) -> str | None:
    """The message for a module of the service extra that is not installed; None for any other failure."""
    module = (exc.name or "").partition(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
    if module not in SERVICE_MODULES:
        return None
    return f"this command needs Interlock's service extra ({module} is not installed here): {INSTALL_SERVICE}"
