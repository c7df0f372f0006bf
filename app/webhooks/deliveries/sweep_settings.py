"""The periodic sweep's settings (SPEC GH8), from the environment; ``settings.py`` gathers their problems.

- ``INTERLOCK_SWEEP_S``: seconds between sweeps, 300 by default; 0 turns the sweep off. At least 10 otherwise:
  each sweep lists deliveries with the App's JWT, whose REST quota the App shares with nothing else but is
  still finite (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api).
- ``INTERLOCK_SWEEP_LOOKBACK``: how far back a sweep looks, ``6h`` by default, at most ``3d``: GitHub keeps
  about three days of deliveries (https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/viewing-webhook-deliveries).
- ``INTERLOCK_SWEEP_MAX_PER_HOUR``: how many redeliveries the fleet asks for in any rolling hour, 100 by
  default: a long outage of the service must not come back as a flood it fails again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from app.github.redeliver import parse_duration

DEFAULT_INTERVAL_S = 300
MIN_INTERVAL_S = 10
DEFAULT_LOOKBACK = "6h"
MAX_LOOKBACK = timedelta(days=3)
DEFAULT_MAX_PER_HOUR = 100


@dataclass(frozen=True)
class SweepSettings:
    interval_s: float = DEFAULT_INTERVAL_S
    lookback: timedelta = timedelta(hours=6)
    max_per_hour: int = DEFAULT_MAX_PER_HOUR


def sweep_settings(env: Mapping[str, str], problems: list[str]) -> SweepSettings | None:
    """The sweep's settings, or None when ``INTERLOCK_SWEEP_S`` is 0; each bad value adds to ``problems``."""
    interval = _whole(env, "INTERLOCK_SWEEP_S", DEFAULT_INTERVAL_S, problems)
    if interval is not None and 0 < interval < MIN_INTERVAL_S:
        problems.append(f"INTERLOCK_SWEEP_S={interval} is too short: 0 (off) or at least {MIN_INTERVAL_S} seconds")
    text = env.get("INTERLOCK_SWEEP_LOOKBACK", DEFAULT_LOOKBACK)
    lookback = parse_duration(text)
    if lookback is None or not timedelta(0) < lookback <= MAX_LOOKBACK:
        problems.append(
            f"INTERLOCK_SWEEP_LOOKBACK={text!r} is not a duration such as 30m, 6h or 2d, above 0 and at most 3d"
            " (GitHub keeps three days of deliveries)"
        )
    per_hour = _whole(env, "INTERLOCK_SWEEP_MAX_PER_HOUR", DEFAULT_MAX_PER_HOUR, problems)
    if per_hour == 0:
        problems.append("INTERLOCK_SWEEP_MAX_PER_HOUR=0 would redeliver nothing: set INTERLOCK_SWEEP_S=0 instead")
    if interval is None or lookback is None or per_hour is None or interval == 0 or per_hour == 0:
        return None
    return SweepSettings(float(interval), lookback, per_hour)


def _whole(env: Mapping[str, str], name: str, default: int, problems: list[str]) -> int | None:
    text = env.get(name, str(default)).strip()
    if not text.isascii() or not text.isdigit():
        problems.append(f"{name}={text!r} is not a whole number ≥ 0")
        return None
    return int(text)
