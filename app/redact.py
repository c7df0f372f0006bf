"""Secrets never leave a job or the service in anything written: records, comments, logs.

Two nets: the values of the environment's secret variables (whatever their shape), and the shapes of
well-known credentials (GitHub tokens, API keys, private keys) wherever they came from — an agent may
print a key it found in a file.

One redactor for every shell: an agent's text is masked where it enters Interlock (``masked_outcome`` in
app/runner/records.py, used by the local shell and the Actions job), and so is the text people type — the
request, answers, notes, a chosen route (``Redactor.event`` where the local shell applies an event; the GitHub
handlers where they read an issue, a comment or a review) — so the engine never holds a secret and nothing
derived from its state — records, prompts, decision files, questions, comments, progress lines — can carry one.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any, TypeVar

MASK = "[redacted]"
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PRIVATE_KEY|API_KEY|ACCESS_KEY|CREDENTIALS?)$", re.I)
# PEM keys (RSA, EC, OPENSSH...) and PGP private key blocks, masked first (a token's pattern could otherwise
# take the dashes of a BEGIN line glued to it and leave the key's body); a block cut before its END line (an
# answer or an output cut short) is masked to the end of the text, never left half shown
KEY_BLOCKS = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|.*)", re.DOTALL
)
# tokens and key ids; a token's mask runs on over the characters tokens are made of, so that a token glued to
# the next one (``ghp_…ghp_…``) never leaves the second's body shown
TOKEN_TAIL = r"[A-Za-z0-9_-]*"
TOKENS = re.compile(
    rf"gh[opusr]_[A-Za-z0-9]{{20,}}{TOKEN_TAIL}"
    rf"|github_pat_[A-Za-z0-9_]{{20,}}{TOKEN_TAIL}"
    rf"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{{20,}}"
    rf"|xox[abprs]-[A-Za-z0-9-]{{10,}}{TOKEN_TAIL}"
    r"|AKIA[0-9A-Z]{16}"
)
MIN_SECRET_LENGTH = 8  # shorter values ("true", "1") would mask ordinary words
# the fields of the engine's events (app/engine/events.py) that hold what a person typed: a request's title and
# body, a gate's note, an answer, a chosen route
PERSON_TEXT = ("title", "body", "note", "text", "verdict")
E = TypeVar("E")


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
        return TOKENS.sub(MASK, KEY_BLOCKS.sub(MASK, text))

    def event(self, event: E) -> E:
        """The event (a frozen dataclass) with every field a person typed masked; other events unchanged."""
        typed = {
            name: self.text(value)
            for name in PERSON_TEXT
            if isinstance(value := getattr(event, name, None), str) and self.text(value) != value
        }
        return dataclasses.replace(event, **typed) if typed else event  # type: ignore[type-var]

    def data(self, value: Any) -> Any:
        """Every string inside JSON-like data, redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.data(item) for item in value]
        return value
