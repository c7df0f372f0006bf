"""Reading the files a person names on the command line: graphs, team rosters, configurations, requests.

Each is read the same guarded way, because each can be anything: a FIFO (``open`` blocks for ever waiting
for a writer), ``/dev/zero`` (a read never ends until memory runs out), a file in another encoding, YAML
nested deeper than Python's stack, or a number too long for ``int``. Only a regular file is opened, at most
``MAX_INPUT_BYTES`` are read, YAML and JSON nested more than ``MAX_DEPTH`` levels are refused before they are
built, and every way the text can fail to parse becomes one ``InputUnreadable`` with a sentence saying why,
never an internal error.

Text that does not come from a file (a repository's configuration fetched from GitHub) goes through the same
limits with ``parse_yaml_text`` and ``parse_json_text``: the size, UTF-8, the depth.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

MAX_INPUT_BYTES = 16 * 1024 * 1024
# deeper than any graph, roster or configuration needs, far below what exhausts the stack (in a thread too)
MAX_DEPTH = 64
TOO_DEEP = f"nested too deeply to read (more than {MAX_DEPTH} levels)"
JSON_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
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
    hold: a syntax error, nesting deeper than ``MAX_DEPTH``, an integer too long to convert.

    The depth is measured on the parser's events first (the parser keeps its own stack; building the
    document recurses, and deep enough nesting would end in a ``RecursionError`` or worse)."""
    import yaml  # loaded by the first YAML file, not by every command that might read one (issue 16, item 5)

    try:
        _check_yaml_depth(path, text)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputUnreadable(path, f"not YAML or JSON: {_one_line(str(exc))}") from None
    except RecursionError:
        raise InputUnreadable(path, TOO_DEEP) from None
    except ValueError:  # int() of a number of more than 4,300 digits
        raise InputUnreadable(path, f"not usable YAML: {TOO_MANY_DIGITS}") from None


def parse_json(path: Path, text: str) -> Any:
    """The JSON document ``text``, with the same refusals as ``parse_yaml``."""
    _check_json_depth(path, text)
    try:
        return json.loads(text)
    except RecursionError:
        raise InputUnreadable(path, TOO_DEEP) from None
    except ValueError as exc:  # a syntax error, or a number of more than 4,300 digits
        reason = TOO_MANY_DIGITS if "digits" in str(exc) else _one_line(str(exc))
        raise InputUnreadable(path, f"not JSON: {reason}") from None


def parse_yaml_text(source: str, data: bytes | str, limit: int = MAX_INPUT_BYTES) -> Any:
    """YAML that did not come from a file (``source`` names where it did come from), held to a file's limits."""
    return parse_yaml(Path(source), _limited_text(source, data, limit))


def parse_json_text(source: str, data: bytes | str, limit: int = MAX_INPUT_BYTES) -> Any:
    """JSON that did not come from a file, held to a file's limits."""
    return parse_json(Path(source), _limited_text(source, data, limit))


def _limited_text(source: str, data: bytes | str, limit: int) -> str:
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data
    if len(raw) > limit:
        raise InputUnreadable(Path(source), f"too large ({len(raw):,} bytes; the limit is {limit:,})")
    return decode_utf8(Path(source), raw)


def _check_yaml_depth(path: Path, text: str) -> None:
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise InputUnreadable(path, TOO_DEEP)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_json_depth(path: Path, text: str) -> None:
    """Brackets outside strings, counted without building anything (a syntax error is json's to report)."""
    brackets = NOT_BRACKETS.sub("", JSON_STRINGS.sub("", text))
    if max(itertools.accumulate(1 if char in "[{" else -1 for char in brackets), default=0) > MAX_DEPTH:
        raise InputUnreadable(path, TOO_DEEP)


def _check_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputUnreadable(path, f"{kind}: give a regular file", found=False)


def _one_line(text: str) -> str:
    return " ".join(text.split())
