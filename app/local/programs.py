"""Which programs a command line will run, found the way ``/bin/sh`` would, and whether they are there.

Check nodes and command agents are shell lines (``/bin/sh -c``), so a missing program shows only when the
mission runs — after the run was created and the attempt charged. Reading the line as ``sh`` would —
parameter expansion with its defaults (``${INTERLOCK_TEST_COMMAND:-python -m pytest -q}``), field splitting,
``;``/``&&``/``|`` lists, assignments and redirections skipped, builtins known — finds every program before
the run starts. What ``sh`` decides only at run time (command substitution, loops, ``case``) is said to be
unchecked rather than guessed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

BUILTIN_NAMES = (  # the commands sh runs itself: nothing to find on PATH
    ": . [ alias bg break cd command continue echo eval exec exit export false fg getopts hash jobs kill local "
    "printf pwd read readonly return set shift source test times trap true type ulimit umask unalias unset wait"
)
BUILTINS = frozenset(BUILTIN_NAMES.split())
LEADING_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "time"})
CLOSING_KEYWORDS = frozenset({"fi", "done", "}", "esac", ")"})
HEADER_KEYWORDS = frozenset({"for", "select", "[["})  # `for x in a b` and `[[ -f x ]]` run no program
OPAQUE_KEYWORDS = frozenset({"case", "function"})  # their words cannot be split into commands statically
SUBSTITUTION = "__interlock_substitution__"
WRAPPERS = frozenset({"exec", "command", "nohup", "env"})
SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", ";&"})
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
EXPANSION = re.compile(r"\$\{(\w+)(:?[-=+?])?([^}]*)\}|\$(\w+)")
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
# ``python -c`` with the cwd on sys.path first, as ``python -m`` has it: exit 0 importable, 1 not.
PROBE = (
    "import importlib.util, sys\n"
    "try:\n    found = importlib.util.find_spec(sys.argv[1])\nexcept Exception:\n    found = None\n"
    "sys.exit(0 if found else 1)\n"
)

TreeMode = Callable[[str], str | None]  # a path relative to the worktree -> git file mode, None if absent


@dataclass(frozen=True)
class Invocation:
    """One simple command of a line: the program as ``sh`` will look it up, and its arguments."""

    program: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Reading:
    """What a line runs; ``unchecked`` says what could not be read statically (empty when all was)."""

    invocations: tuple[Invocation, ...]
    unchecked: str = ""


def expand(line: str, env: Mapping[str, str]) -> str:
    """Parameter expansion as ``sh`` does it, outside single quotes: ``$X``, ``${X}``, ``${X:-word}``,
    ``${X-word}``, ``${X:=word}``, ``${X:+word}``. Unset variables expand to nothing."""
    pieces = re.split(r"('[^']*')", line)
    return "".join(
        p if p.startswith("'") and p.endswith("'") else EXPANSION.sub(lambda m: _value(m, env), p) for p in pieces
    )


def _value(match: re.Match[str], env: Mapping[str, str]) -> str:
    if match.group(4):
        return env.get(match.group(4), "")
    name, operator, word = match.group(1), match.group(2) or "", match.group(3)
    value = env.get(name)
    if operator in (":-", ":="):
        return value if value else word
    if operator in ("-", "="):
        return value if value is not None else word
    if operator == ":+":
        return word if value else ""
    if operator == "+":
        return word if value is not None else ""
    return value or ""


def read_line(line: str, env: Mapping[str, str]) -> Reading:
    """The programs ``line`` runs, after expansion and field splitting, in the order ``sh`` meets them."""
    text = _without_substitutions(expand(line, env)).replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = [*list(lexer), ";"]
    except ValueError as exc:
        return Reading((), f"the line does not parse as sh would read it ({exc})")
    found: list[Invocation] = []
    functions: set[str] = set()
    command: list[str] = []
    for index, token in enumerate(tokens):
        if len(command) == 1 and (token == "()" or (token == "(" and tokens[index + 1] == ")")):
            functions.add(command.pop())  # `name() { ...; }` defines a function: calling it runs no program
        elif token in SEPARATORS or token in ("(", ")"):
            reading = _simple_command(command)
            if isinstance(reading, str):
                return Reading(tuple(found), reading)
            found += [call for call in reading if call.program not in functions]
            command = []
        else:
            command.append(token)
    return Reading(tuple(found))


def _without_substitutions(text: str) -> str:
    """``$(...)`` and backquotes replaced by a marker word: what they print is known only at run time."""
    text = re.sub(r"`[^`]*`", SUBSTITUTION, text)
    while (start := text.find("$(")) >= 0:
        depth, end = 0, start + 1
        while end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
            end += 1
        text = text[:start] + SUBSTITUTION + text[end + 1 :]
    return text


def _simple_command(words: list[str]) -> list[Invocation] | str:
    """The program of one simple command (none for a bare assignment or a closing keyword), or why not."""
    words = _without_redirections(words)
    while words and (words[0] in LEADING_KEYWORDS or ASSIGNMENT.match(words[0])):
        words = words[1:]
    while words and words[0] in WRAPPERS:
        wrapper, words = words[0], words[1:]
        if wrapper == "command" and words and words[0] in ("-v", "-V"):
            return []  # a look-up, not a run: `command -v x || ...` is how scripts test for x
        while words and (words[0].startswith("-") or (wrapper == "env" and ASSIGNMENT.match(words[0]))):
            words = words[1:]
    if not words or words[0] in CLOSING_KEYWORDS | HEADER_KEYWORDS or words[0] in BUILTINS:
        return []
    if words[0] in OPAQUE_KEYWORDS:
        return f"a `{words[0]}` construct"
    if SUBSTITUTION in words[0]:
        return "a program computed by a command substitution"
    return [Invocation(words[0], tuple(words[1:]))]


def _without_redirections(words: list[str]) -> list[str]:
    """The words without ``> file``, ``2>&1``, ``< input``: a redirection's target is not a command."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word and set(word) <= set("<>&|") and ("<" in word or ">" in word):
            skip = True
            if kept and kept[-1].isdigit():
                kept.pop()  # the descriptor of `2>`
        else:
            kept.append(word)
    return kept


def python_module(invocation: Invocation) -> str | None:
    """``x`` of ``python -m x`` (any ``python3.12``-like name), ``None`` for any other command."""
    if not PYTHON.match(os.path.basename(invocation.program)):
        return None
    args = list(invocation.args)
    for index, arg in enumerate(args):
        if arg == "-m":
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith("-m"):
            return arg[2:]
        if not arg.startswith("-"):
            return None
    return None


def locate(program: str, env: Mapping[str, str], tree_mode: TreeMode | None) -> tuple[str | None, str]:
    """(the file that will run, or ``None``; why not). A relative path is looked up in the run's worktree
    (the base branch's files), a bare name on ``PATH`` as ``sh`` would."""
    if "/" not in program:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
        return (found, "") if found else (None, f"`{program}` is not on PATH")
    if os.path.isabs(program):
        if not os.path.isfile(program):
            return None, f"{program} does not exist"
        if not os.access(program, os.X_OK):
            return None, f"{program} is not executable"
        return program, ""
    if tree_mode is None:
        return program, ""  # relative to a worktree that does not exist yet: checked when the run starts
    mode = tree_mode(os.path.normpath(program))
    if mode is None:
        return None, f"{program} is not in the base branch (missions run in a worktree of it)"
    if mode != "100755":
        return None, f"{program} is in the base branch but not executable (mode {mode})"
    return program, ""


def importable(python: str, module: str, cwd: Path) -> bool | None:
    """Whether ``python -m module`` would find the module, run from ``cwd``; ``None`` when it cannot be told."""
    try:
        result = subprocess.run(
            [python, "-c", PROBE, module], cwd=cwd, capture_output=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(result.returncode)


def quote(words: tuple[str, ...] | list[str]) -> str:
    return shlex.join(words)
