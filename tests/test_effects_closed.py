"""The README's promise for a new effect: added to the ``Effect`` union, it fails type-checking at the
``assert_never`` of each shell's effect adapter until the shell handles it (issue 12). Tested by adding one
to a copy of ``app/`` and running mypy on the shells, as a developer would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

SHELLS = ("app/webhooks/shell.py", "app/local/shell.py")
EXTRA = "@dataclass\nclass ForgottenEffect:\n    pass\n\n\n"


def _copy(into: Path) -> None:
    shutil.copytree(ROOT / "app", into / "app", ignore=shutil.ignore_patterns("__pycache__"))
    (into / "mypy.ini").write_text("[mypy]\nstrict = True\nplugins = pydantic.mypy\n")
    if (ROOT / ".mypy_cache").is_dir():  # the test command's own mypy run leaves it: seconds instead of a minute
        shutil.copytree(ROOT / ".mypy_cache", into / ".mypy_cache")


def _add_an_effect(folder: Path) -> None:
    effects = folder / "app" / "engine" / "effects.py"
    text = effects.read_text()
    assert "    | Finish\n)" in text, "the Effect union no longer ends with Finish: update this test"
    text = text.replace("    | Finish\n)", "    | Finish\n    | ForgottenEffect\n)")
    anchor = "# Every effect a transition can emit"
    effects.write_text(text.replace(anchor, EXTRA + anchor))


def _mypy(folder: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", ".mypy_cache", *SHELLS]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)


def test_an_effect_no_shell_handles_fails_type_checking_in_every_shell(tmp_path: Path) -> None:
    _copy(tmp_path)
    as_it_is = _mypy(tmp_path)
    assert as_it_is.returncode == 0, as_it_is.stdout + as_it_is.stderr
    _add_an_effect(tmp_path)
    result = _mypy(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    for shell in SHELLS:
        errors = [line for line in result.stdout.splitlines() if line.startswith(f"{shell}:")]
        assert any('"ForgottenEffect"; expected "Never"' in line for line in errors), result.stdout
