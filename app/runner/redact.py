"""Secrets never leave a job or the service in anything written: records, comments, logs.

Two nets: the values of the environment's secret variables (whatever their shape), and the shapes of
well-known credentials (GitHub tokens, API keys, private keys) wherever they came from — an agent may
print a key it found in a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "[redacted]"
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PRIVATE_KEY|API_KEY|ACCESS_KEY|CREDENTIALS?)$", re.I)
SHAPES = re.compile(
    r"gh[opusr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
    re.DOTALL,
)
MIN_SECRET_LENGTH = 8  # shorter values ("true", "1") would mask ordinary words


class Redactor:
    def __init__(self, env: Mapping[str, str] | None = None, extra: list[str] | None = None) -> None:
        source = os.environ if env is None else env
        values = {value for name, value in source.items() if SECRET_NAME.search(name)}
        values |= set(extra or [])
        self.values = sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)

    def text(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return SHAPES.sub(MASK, text)

    def data(self, value: Any) -> Any:
        """Every string inside JSON-like data, redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.data(item) for item in value]
        return value
