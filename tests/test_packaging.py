"""A normal install carries the graph library: the wheel, installed outside the checkout, runs the demo.

The wheel is built the way the Docker image builds it: from the folder its ``COPY`` lines fill (read from
the Dockerfile, so the image cannot drift from this test), with pip's isolated build. It is installed into
a fresh virtual environment in a temporary folder, and ``interlock`` runs there from a folder with no
``graphs/`` and without ``INTERLOCK_LIBRARY``: the library can only come from the package data.

The fresh environment borrows its dependencies from the one running the tests, by a ``.pth`` file naming
that environment's site-packages. A path named that way is not a site folder, so the editable install's
finder (started by a ``.pth`` file of its own) is not loaded, and nothing of the checkout can be imported;
the test checks that too. Installing the dependencies from the index would take the same test half a
minute more and test pip rather than this package.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import GRAPHS, ROOT

IMAGE_BUILD = "/tmp/build"  # the folder the Dockerfile installs the project from
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")


def run(*command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(list(map(str, command)), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
    return result.stdout


def build_context(into: Path) -> Path:
    """The image's build folder, filled here by the Dockerfile's own ``COPY ... /tmp/build...`` lines."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    for *sources, target in (line.split()[1:] for line in lines if line.startswith("COPY ")):
        if not target.startswith(IMAGE_BUILD):
            continue
        destination = into / target.removeprefix(IMAGE_BUILD).strip("/")
        for source in sources:
            place = destination / source if target.endswith("/") else destination
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, place, ignore=IGNORED)
            else:
                place.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, place)
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    context = build_context(folder / "build")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
        "-w", folder / "dist", context)  # fmt: skip
    (built,) = (folder / "dist").glob("interlock-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the checkout with the wheel installed; its folder."""
    venv = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    packages = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    borrowed = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (packages / "borrowed-dependencies.pth").write_text("".join(f"{path}\n" for path in borrowed))
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--quiet",
        "--disable-pip-version-check", wheel)  # fmt: skip
    return venv


def outside(venv: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working folder with no graphs/ in it, and an environment that points nowhere near the checkout."""
    hidden = ("PYTHONPATH", "INTERLOCK_LIBRARY", "VIRTUAL_ENV", "PYTHONHOME")
    env = {key: value for key, value in os.environ.items() if key not in hidden}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    (tmp_path / "work").mkdir()
    return tmp_path / "work", env


def test_the_wheel_carries_every_module_and_the_graph_library_with_its_schema(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "app").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules <= names, f"modules missing from the wheel (list them in pyproject.toml): {modules - names}"
    assert "app/github/interlock.schema.json" in names  # the configuration's JSON Schema (issue 13)
    library = {f"app/library/{p.relative_to(GRAPHS).as_posix()}": p.read_bytes() for p in GRAPHS.rglob("*.json")}
    assert "app/library/graph.schema.json" in library and len(library) > 2
    with zipfile.ZipFile(wheel) as archive:
        assert {name: archive.read(name) for name in library} == library


def test_an_installed_package_runs_the_demo_and_validates_its_library_outside_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    work, env = outside(installed, tmp_path)
    where = "import app, app.graphset as g; print(app.__file__); print(g.library_dirs()[-1])"
    module, library = run(installed / "bin" / "python", "-c", where, cwd=work, env=env).split()
    assert Path(module).is_relative_to(installed) and Path(library).is_relative_to(installed)
    assert (Path(library) / "graph.schema.json").read_bytes() == (GRAPHS / "graph.schema.json").read_bytes()
    demo = run("interlock", "demo", "--keep", tmp_path / "demo", cwd=work, env=env)
    assert "feature (sha256:" in demo and "awaiting_merge at __end__" in demo and "review:PASS → end" in demo
    graphs = len([p for p in GRAPHS.rglob("*.json") if not p.name.endswith(".schema.json")])
    report = run("interlock", "validate", library, cwd=work, env=env)
    assert report.splitlines()[-1] == f"{graphs} file(s): {graphs} valid, 0 invalid"
    assert not (work / "graphs").exists() and not list(work.iterdir())


def test_a_checkout_finds_the_library_in_its_graphs_folder_after_the_override_and_the_working_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from app.graphset import library_dirs

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTERLOCK_LIBRARY", str(tmp_path / "mine"))
    assert library_dirs() == [tmp_path / "mine", tmp_path / "graphs", GRAPHS]
    monkeypatch.delenv("INTERLOCK_LIBRARY")
    assert library_dirs() == [tmp_path / "graphs", GRAPHS]
