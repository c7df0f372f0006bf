"""The service's configuration, from the environment; it refuses to start on anything missing or broken.

- ``GITHUB_APP_ID`` (or ``GITHUB_APP_CLIENT_ID``): which app this is.
- ``GITHUB_APP_PRIVATE_KEY`` (PEM text) or ``GITHUB_APP_PRIVATE_KEY_PATH``: signs the app's JWTs.
- ``GITHUB_WEBHOOK_SECRET`` (or ``GITHUB_WEBHOOK_SECRET_PATH``, a file holding it, as a container's secret
  is mounted): verifies ``X-Hub-Signature-256`` on every delivery.
- ``GITHUB_API_URL``: ``https://api.github.com`` by default; a GitHub Enterprise Server URL, or a test double.
- ``INTERLOCK_LOG_LEVEL``: ``info`` by default.
- ``GITHUB_APP_SLUG`` (optional): the app's slug, so that events its own bot caused are ignored.
- ``INTERLOCK_DATA_DIR``: the folder of the durable delivery queue (``queue.sqlite3``); ``.interlock`` in the
  working directory by default. Settings built directly with none get a fresh temporary folder (tests).
- ``INTERLOCK_WORKERS``: how many threads apply queued deliveries; 4 by default.
- ``INTERLOCK_DELIVERY_ATTEMPTS``: how many times a delivery whose handler fails is tried before it is
  recorded FAILED; 5 by default.
- ``INTERLOCK_VISIBILITY_S``: seconds a worker's lease on a delivery lasts before another worker may take it
  (the worker died); 120 by default, longer than any handler.
- ``INTERLOCK_REDIS_URL`` (optional): a Redis that every replica of the service shares (``redis://``,
  ``rediss://`` or ``unix://``): the content-creating quota and GitHub's pauses are counted there, once for all
  replicas. Unset: one process, everything in memory. The delivery queue is there too, shared by the replicas
  (``app/webhooks/deliveries/redis_queue.py``); a replica that finds Redis unreachable at start queues in its data
  folder.
- ``INTERLOCK_REPLICAS``: how many replicas run; 1 by default. While Redis cannot be reached, each replica
  keeps to its share of the quota (80 ÷ replicas a minute) so that together they stay within GitHub's limit.
- the web board's OAuth client and session secret (optional): ``app/webhooks/board/settings.py``.
- the periodic sweep of failed deliveries (``INTERLOCK_SWEEP_*``): ``app/webhooks/deliveries/sweep_settings.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from app.engine.errors import InterlockError
from app.github.client import AppIdentity
from app.inputfile import InputUnreadable, read_input_text
from app.webhooks.board.settings import BoardSettings, board_settings
from app.webhooks.deliveries.sweep_settings import SweepSettings, sweep_settings

DEFAULT_API_URL = "https://api.github.com"
KEY_LIMIT = 64 * 1024  # an RSA key of 4096 bits is about 3 kB of PEM
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
DEFAULT_DATA_DIR = ".interlock"
DEFAULT_WORKERS = 4
DEFAULT_ATTEMPTS = 5
DEFAULT_VISIBILITY_S = 120.0
MAX_REPLICAS = 64
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
SECRET_LIMIT = 4096


class SettingsError(InterlockError):
    """The service cannot start: ``problems`` says every reason, with the variable to set."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the service cannot start:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class ServiceSettings:
    app_id: str
    private_key: str
    webhook_secret: bytes
    api_url: str = DEFAULT_API_URL
    log_level: str = "info"
    app_slug: str | None = None
    board: BoardSettings | None = None  # the web board; None: off (app/webhooks/board/settings.py)
    data_dir: Path | None = None  # the delivery queue's folder; None: a fresh temporary one, not durable
    workers: int = DEFAULT_WORKERS
    delivery_attempts: int = DEFAULT_ATTEMPTS
    visibility_s: float = DEFAULT_VISIBILITY_S
    redis_url: str | None = None  # shared by the replicas; None: one process, all in memory
    replicas: int = 1
    sweep: SweepSettings | None = (
        None  # the sweep of failed deliveries; None: off (app/webhooks/deliveries/sweep_settings.py)
    )

    def __post_init__(self) -> None:
        problems = queue_problems(self.workers, self.delivery_attempts, self.visibility_s)
        problems += fleet_problems(self.redis_url, self.replicas)
        if problems:
            raise SettingsError(problems)

    def app_identity(self) -> AppIdentity:
        """The plain values the GitHub adapter takes."""
        secret = self.webhook_secret.decode("utf-8", errors="replace")
        return AppIdentity(
            self.app_id, self.private_key, self.api_url, secrets=(secret,) if secret else (), slug=self.app_slug
        )

    def __repr__(self) -> str:  # never print secrets
        return f"ServiceSettings(app_id={self.app_id!r}, api_url={self.api_url!r}, log_level={self.log_level!r})"


def settings_from_env(env: Mapping[str, str] | None = None) -> ServiceSettings:
    env = os.environ if env is None else env
    problems: list[str] = []
    app_id = env.get("GITHUB_APP_ID") or env.get("GITHUB_APP_CLIENT_ID") or ""
    if not app_id:
        problems.append("GITHUB_APP_ID (or GITHUB_APP_CLIENT_ID) is not set: the app's id from its settings page")
    key = _private_key(env, problems)
    secret = _webhook_secret(env, problems)
    level = _log_level(env, problems)
    api_url = _api_url(env, problems)
    board = board_settings(env, problems)
    workers = _number(env, "INTERLOCK_WORKERS", DEFAULT_WORKERS, problems)
    attempts = _number(env, "INTERLOCK_DELIVERY_ATTEMPTS", DEFAULT_ATTEMPTS, problems)
    visibility = _number(env, "INTERLOCK_VISIBILITY_S", DEFAULT_VISIBILITY_S, problems)
    problems += queue_problems(int(workers), int(attempts), visibility)
    redis_url = env.get("INTERLOCK_REDIS_URL", "").strip() or None
    replicas = int(_number(env, "INTERLOCK_REPLICAS", 1, problems))
    problems += fleet_problems(redis_url, replicas)
    sweep = sweep_settings(env, problems)
    data_dir = Path(env.get("INTERLOCK_DATA_DIR") or DEFAULT_DATA_DIR)
    if problems:
        raise SettingsError(problems)
    slug = env.get("GITHUB_APP_SLUG") or None
    return ServiceSettings(
        app_id,
        key,
        secret.encode("utf-8"),
        api_url,
        level,
        slug,
        board,
        data_dir=data_dir,
        workers=int(workers),
        delivery_attempts=int(attempts),
        visibility_s=visibility,
        redis_url=redis_url,
        replicas=replicas,
        sweep=sweep,
    )


def _log_level(env: Mapping[str, str], problems: list[str]) -> str:
    level = env.get("INTERLOCK_LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        problems.append(f"INTERLOCK_LOG_LEVEL={level!r} is not one of {', '.join(LOG_LEVELS)}")
    return level


def _api_url(env: Mapping[str, str], problems: list[str]) -> str:
    api_url = env.get("GITHUB_API_URL", DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        problems.append(f"GITHUB_API_URL={api_url!r} is not an http(s) URL")
    return api_url


def _number(env: Mapping[str, str], name: str, default: float, problems: list[str]) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text) if isinstance(default, int) else float(text)
    except ValueError:
        kind = "a whole number" if isinstance(default, int) else "a number of seconds"
        problems.append(f"{name}={text!r} is not {kind}")
        return default
    return value


def queue_problems(workers: int, attempts: int, visibility_s: float) -> list[str]:
    """What is wrong with the delivery queue's settings, each with its variable."""
    problems = []
    if not 1 <= workers <= 64:
        problems.append(f"INTERLOCK_WORKERS={workers} is not between 1 and 64")
    if not 1 <= attempts <= 100:
        problems.append(f"INTERLOCK_DELIVERY_ATTEMPTS={attempts} is not between 1 and 100")
    if not 1.0 <= visibility_s <= 86_400.0:  # also refuses nan and inf
        problems.append(f"INTERLOCK_VISIBILITY_S={visibility_s} is not between 1 and 86400 seconds")
    return problems


def fleet_problems(redis_url: str | None, replicas: int) -> list[str]:
    """What is wrong with the settings of several replicas, each with its variable."""
    problems = []
    if redis_url is not None and not redis_url.startswith(REDIS_SCHEMES):
        shown = redis_url.split("://", 1)[0] + "://…" if "://" in redis_url else "a value without a scheme"
        problems.append(f"INTERLOCK_REDIS_URL ({shown}) is not a {', '.join(REDIS_SCHEMES)} URL")
    if not 1 <= replicas <= MAX_REPLICAS:
        problems.append(f"INTERLOCK_REPLICAS={replicas} is not between 1 and {MAX_REPLICAS}")
    return problems


def _text_or_file(
    env: Mapping[str, str],
    names: tuple[str, str],
    limit: int,
    problems: list[str],
    tidy: Callable[[str], str] = lambda text: text,
) -> str | None:
    """The variable ``names[0]``, else the text of the file that ``names[1]`` names (as a container's secret is
    mounted), ``tidy``-ed; "" when neither is set, None when that file cannot be read (the problem said)."""
    text = env.get(names[0], "")
    path = env.get(names[1], "")
    if not text and path:
        try:
            text = tidy(read_input_text(Path(path), limit))
        except InputUnreadable as exc:  # missing, a FIFO or a device, too large, not UTF-8
            problems.append(f"{names[1]}={path!r} cannot be read: {exc.reason}")
            return None
    return text


def _webhook_secret(env: Mapping[str, str], problems: list[str]) -> str:
    secret = _text_or_file(
        env, ("GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_PATH"), SECRET_LIMIT, problems, str.strip
    )
    if secret == "":
        problems.append(
            "GITHUB_WEBHOOK_SECRET is not set (nor GITHUB_WEBHOOK_SECRET_PATH, a file holding it): the secret"
            " entered in the app's webhook settings"
        )
    return secret or ""


def _private_key(env: Mapping[str, str], problems: list[str]) -> str:
    text = _text_or_file(env, ("GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_PRIVATE_KEY_PATH"), KEY_LIMIT, problems)
    if text is None:
        return ""
    if not text:
        problems.append("GITHUB_APP_PRIVATE_KEY (PEM text) or GITHUB_APP_PRIVATE_KEY_PATH is not set")
        return ""
    text = text.replace("\\n", "\n")  # keys passed through one-line environment variables
    # here, not at the top: App-less mode reads this module's constants in a core install, without the service
    # extra that brings cryptography (app/cli/common.py)
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(text.encode("utf-8"), password=None)
    except (ValueError, TypeError) as exc:
        problems.append(f"the app's private key does not parse as an unencrypted PEM key ({exc})")
    return text
