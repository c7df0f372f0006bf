"""Seconds a mission job spends installing Interlock, built from scratch as action/action.yml builds it.

Run: ``python -m tests.bench.bench_install [--rounds N] [--source folder|wheel]`` (prints a table; not a test).
Target (issue 16): <= 3 s with a warm cache, <= 10 s cold, beyond setting up Python.

Each round builds, in an order that rotates from round to round:
- ``uv, cold``: a fresh ``uv venv`` and ``uv pip install`` of the core with an empty uv cache (a job whose
  environment is in no cache: the first job after a new version of the action);
- ``uv, warm``: the same with the uv cache kept from the round's cold build;
- ``cached environment``: the action's warm path, a hit of ``actions/cache``: the built environment unpacked
  from a tar archive compressed as actions/cache compresses (zstd where installed, else gzip), then checked
  with ``python -I -c "import app"``. Downloading the archive from GitHub's cache is not included (it cannot
  be measured here);
- ``uv download``: ``pip install --target DIR uv==0.13.9``, which the action runs first where the runner has
  no uv (pip's cache off);
- ``pip, core``: the action's fallback, ``python -m venv`` and ``pip install`` of the core (pip's cache empty,
  as on a fresh runner);
- ``pip, the old way`` (the peer): what the action did before, the whole project with every dependency the
  service needs (``.[service]``: FastAPI, uvicorn, githubkit's App auth, cryptography), pip's cache empty.

Every build installs from the same sources: pip's own configuration (``pip config list``: this machine's
local indexes, find-links and constraints besides PyPI) is handed to uv as the same flags, with uv's index
strategy set to pip's (the best version across every index). ``--source folder`` (the default) installs from
a copy of the project's folder, as the action does (so each build includes building Interlock's wheel);
``--source wheel`` from a wheel of the checkout built once beforehand.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT

UV_VERSION = "0.13.9"  # the action's pin (action/action.yml)
SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "app", "graphs")  # the Dockerfile's build context
PIP_QUIET = ("--quiet", "--disable-pip-version-check")


@dataclass
class Built:
    """One environment built: how long it took, and what it holds."""

    seconds: float
    distributions: int
    megabytes: float
    cpu: float = 0.0  # the build's processes' user + system seconds: what the machine's load does not inflate


def run(*command: str | Path, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(list(map(str, command)), env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{shlex.join(map(str, command))} failed:\n{result.stdout}{result.stderr}")


def pip_sources() -> list[str]:
    """pip's configured sources (``pip config list``, files and environment) as uv's flags."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    flags: list[str] = []
    names = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links"}
    names |= {"constraint": "--constraint"}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        flag = names.get(key.rpartition(".")[2])
        for item in value.strip("'\"").split():
            if flag and item not in flags:
                flags += [flag, item]
    return [*flags, "--index-strategy", "unsafe-best-match"]


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def contents(venv: Path) -> tuple[int, float]:
    """Distributions installed (pip itself not counted) and the environment's size on disk in MB."""
    dists = [p for p in venv.glob("lib/python*/site-packages/*.dist-info") if not p.name.startswith("pip-")]
    size = sum(p.lstat().st_size for p in venv.rglob("*") if p.is_file() and not p.is_symlink())
    return len(dists), size / 1e6


def check(venv: Path, service: bool) -> None:
    """The environment runs a job; the service's packages are in it only when asked for."""
    probe = "import app.runner.job, app.webhooks.appless, importlib.util as u; print(bool(u.find_spec('fastapi')))"
    found = subprocess.run([venv / "bin" / "python", "-I", "-c", probe], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(service), f"{venv}: FastAPI installed: {found.stdout.strip()}"


class Builds:
    """The builds of one run, in one scratch folder; ``spec`` is what is installed (a folder or a wheel)."""

    def __init__(self, scratch: Path, uv: str, spec: str) -> None:
        self.scratch, self.uv, self.spec, self.sources = scratch, uv, spec, pip_sources()
        self.venv, self.uv_cache = scratch / "interlock-venv", scratch / "uv-cache"
        self.python = sys.base_prefix + "/bin/python3"

    def fresh(self) -> None:
        shutil.rmtree(self.venv, ignore_errors=True)

    def timed(self, build: Callable[[], None], service: bool = False) -> Built:
        self.fresh()
        cpu, start = children_cpu(), time.perf_counter()
        build()
        seconds, cpu = time.perf_counter() - start, children_cpu() - cpu
        check(self.venv, service)
        return Built(seconds, *contents(self.venv), cpu)

    def uv_install(self) -> None:
        env = {**os.environ, "UV_CACHE_DIR": str(self.uv_cache)}
        run(self.uv, "venv", "--quiet", "--python", self.python, self.venv, env=env)
        run(
            self.uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            self.venv / "bin/python",
            *self.sources,
            self.spec,
            env=env,
        )

    def uv_cold(self) -> Built:
        shutil.rmtree(self.uv_cache, ignore_errors=True)
        return self.timed(self.uv_install)

    def uv_warm(self) -> Built:
        return self.timed(self.uv_install)

    def pip_install(self, spec: str) -> None:
        cache = self.scratch / "pip-cache"
        shutil.rmtree(cache, ignore_errors=True)
        run(self.python, "-I", "-m", "venv", self.venv)
        run(self.venv / "bin/python", "-I", "-m", "pip", "install", *PIP_QUIET, "--cache-dir", cache, spec)

    def pip_core(self) -> Built:
        return self.timed(lambda: self.pip_install(self.spec))

    def pip_old_way(self) -> Built:
        return self.timed(lambda: self.pip_install(f"{self.spec}[service]"), service=True)

    def cached(self) -> Built:
        """A hit of actions/cache: the archive of a built environment unpacked where it was, then checked."""
        archive = self.scratch / "cache.tar"
        compress = ["--use-compress-program", "zstd -T0"] if shutil.which("zstd") else ["-z"]
        if not archive.exists():  # saved once, as the first job's post step saves it
            self.fresh()
            self.uv_install()
            run("tar", *compress, "-cf", archive, "-C", self.scratch, self.venv.name)

        def unpack() -> None:
            run("tar", *compress, "-xf", archive, "-C", self.scratch)
            run(self.venv / "bin/python", "-I", "-c", "import app")

        return self.timed(unpack)

    def uv_download(self) -> Built:
        target = self.scratch / "uv-download"
        shutil.rmtree(target, ignore_errors=True)
        cpu, start = children_cpu(), time.perf_counter()
        download = ("install", *PIP_QUIET, "--no-cache-dir", "--target", target, f"uv=={UV_VERSION}")
        run(sys.executable, "-m", "pip", *download)
        return Built(time.perf_counter() - start, 1, contents(target)[1], children_cpu() - cpu)


def source(scratch: Path, kind: str) -> str:
    """What the builds install: a copy of the project's folder (as the action installs), or its wheel."""
    folder = scratch / "project"
    folder.mkdir()
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, folder / name)
    if kind == "folder":
        return str(folder)
    run(sys.executable, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "-w", scratch / "dist", folder)
    (wheel,) = (scratch / "dist").glob("interlock-*.whl")
    return str(wheel)


def find_uv(scratch: Path) -> str:
    """uv from PATH or beside this Python; else downloaded as the action downloads it."""
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found:
        return found
    run(sys.executable, "-m", "pip", "install", *PIP_QUIET, "--target", scratch / "uv", f"uv=={UV_VERSION}")
    return str(scratch / "uv" / "bin" / "uv")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", choices=("folder", "wheel"), default="folder")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-install-") as name:
        scratch = Path(name)
        builds = Builds(scratch, find_uv(scratch), source(scratch, options.source))
        systems: dict[str, Callable[[], Built]] = {
            "uv, cold": builds.uv_cold,
            "uv, warm": builds.uv_warm,
            "cached environment": builds.cached,
            "uv download": builds.uv_download,
            "pip, core": builds.pip_core,
            "pip, the old way": builds.pip_old_way,
        }
        results: dict[str, list[Built]] = {label: [] for label in systems}
        order = list(systems)
        for round_number in range(options.rounds):
            shift = round_number % len(order)
            for label in order[shift:] + order[:shift]:
                if label == "uv, warm" and not builds.uv_cache.exists():
                    builds.uv_cold()  # a warm build needs a cache: filled first when the rotation puts it before
                results[label].append(systems[label]())
                print(f"round {round_number + 1}: {label:<20} {results[label][-1].seconds:6.2f} s", file=sys.stderr)
    report(results, options)
    return 0


def report(results: dict[str, list[Built]], options: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"{options.rounds} rounds, source: {options.source}, uv {UV_VERSION}, Python {sys.version.split()[0]}, "
          f"load average {load[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    print(f"{'build':<20} {'median':>8} {'range':>15} {'cpu':>7} {'dists':>6} {'MB':>7} {'vs old way':>11}")
    peer = statistics.median(b.seconds for b in results["pip, the old way"])
    for label, built in results.items():
        seconds = [b.seconds for b in built]
        median = statistics.median(seconds)
        spread = f"{min(seconds):.2f}-{max(seconds):.2f} s"
        print(
            f"{label:<20} {median:7.2f}s {spread:>15} {statistics.median(b.cpu for b in built):6.2f}s "
            f"{built[-1].distributions:>6} {built[-1].megabytes:>7.1f} "
            f"{peer / median:>10.1f}x"
        )
    cold = statistics.median(b.seconds for b in results["uv, cold"]) + statistics.median(
        b.seconds for b in results["uv download"]
    )
    warm = statistics.median(b.seconds for b in results["cached environment"])
    print(f"a job, cold (uv download + uv, cold): {cold:.2f} s (target <= 10 s); warm (cached environment): "
          f"{warm:.2f} s (target <= 3 s)")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
