"""Reading the files a person names on the command line: graphs, team rosters, configurations, requests.

Each is read the same guarded way, because each can be anything: a FIFO (``open`` blocks for ever waiting
for a writer), ``/dev/zero`` (a read never ends until memory runs out), a file in another encoding, YAML
nested deeper than Python's stack, or a number too long for ``int``. Only a regular file is opened, at most
``MAX_INPUT_BYTES`` are read, and every way the text can fail to parse becomes one ``InputUnreadable``
with a sentence saying why, never an internal error.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import yaml

MAX_INPUT_BYTES = 16 * 1024 * 1024
TOO_MANY_DIGITS = f"a number has more than {sys.get_int_max_str_digits():,} digits"


class InputUnreadable(Exception):
    """``path`` could not be had as text: ``reason`` says why. ``found`` is false when there was no regular
    file to read at all (missing, a folder, a device, a FIFO, no permission)."""

    def __init__(self, path: Path, reason: str, *, found: bool = True) -> None:
        self.path = path
        self.reason = reason
        self.found = found
        super().__init__(f"{path}: {reason}")


def read_input_bytes(path: Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, refused when it is anything else or larger than ``limit``.

    The file is opened non-blocking and checked again after opening, so a FIFO swapped in after the first
    check cannot hang the read either."""
    try:
        _check_regular(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputUnreadable(path, exc.strerror or str(exc), found=False) from None
    try:
        info = os.fstat(fd)
        _check_regular(path, info.st_mode)
        if info.st_size > limit:
            raise InputUnreadable(path, f"file is too large ({info.st_size:,} bytes; the limit is {limit:,})")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise InputUnreadable(path, exc.strerror or str(exc), found=False) from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise InputUnreadable(path, f"file is too large (more than {limit:,} bytes)")
    return data


def read_input_text(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (see ``read_input_bytes``)."""
    return decode_utf8(path, read_input_bytes(path, limit))


def decode_utf8(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputUnreadable(path, f"not UTF-8 text (byte {exc.start})") from None


def parse_yaml(path: Path, text: str) -> Any:
    """The YAML (or JSON) document ``text``; ``InputUnreadable`` for any text that is not one Interlock can
    hold: a syntax error, nesting deeper than the stack, an integer too long to convert."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputUnreadable(path, f"not YAML or JSON: {_one_line(str(exc))}") from None
    except RecursionError:
        raise InputUnreadable(path, "nested too deeply to read") from None
    except ValueError:  # int() of a number of more than 4,300 digits
        raise InputUnreadable(path, f"not usable YAML: {TOO_MANY_DIGITS}") from None


def _check_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputUnreadable(path, f"{kind}: give a regular file", found=False)


def _one_line(text: str) -> str:
    return " ".join(text.split())
