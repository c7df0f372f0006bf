"""Start-up time of the ``interlock`` command, next to an empty Python start (issue 16, item 5).

Run: ``python -m tests.bench.bench_cli [--rounds 15]`` (prints figures; not a test, exits 0 whatever they are).

Three commands, each in a fresh process, as a person types them: ``interlock --help``, ``interlock status RUN``
of a finished demo run (made once in a temporary folder), and ``interlock validate FILE`` of one bundled graph.
Every round runs the reference — the same Python with the same site-packages running ``-c pass`` — right
before each command, so that both see the same load on a shared machine; the figures are medians and ranges
over the rounds, wall-clock and CPU (user + system, of the child), and the ratio to the reference of the same
rounds. Target: each command in <= 0.15 s. Then ``python -X importtime`` of each command: its 10 slowest
imports (own time, with the cumulative time of what they import in turn), to see what a command still loads.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers import ROOT

TARGET_S = 0.15
GRAPH = ROOT / "graphs" / "delivery" / "feature.json"
RUN_ID = re.compile(r"\brun (r[0-9]{8}-[0-9]{6}-[0-9a-f]+) started")
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def interlock() -> list[str]:
    """The console script next to this Python, as a person runs it; else ``python -m app`` (the same code)."""
    script = Path(sys.executable).parent / "interlock"
    return [str(script)] if script.exists() else [sys.executable, "-m", "app"]


def demo_run(folder: Path) -> str:
    """A finished run of the feature graph in a fresh repository (``interlock demo --keep``): its id."""
    done = subprocess.run([*interlock(), "demo", "--keep", str(folder)], capture_output=True, text=True, check=True)
    found = RUN_ID.search(done.stdout + done.stderr)
    if found is None:
        raise RuntimeError(f"no run id in the demo's output:\n{done.stdout}{done.stderr}")
    return found.group(1)


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one fresh process running ``argv``."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):  # validate exits 1 on an invalid graph; anything else is a failure
        raise RuntimeError(f"{argv} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def spread(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:6.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def measure(commands: dict[str, list[str]], cwd: Path, rounds: int) -> None:
    reference = [sys.executable, "-c", "pass"]
    figures: dict[str, dict[str, list[float]]] = {
        name: {key: [] for key in ("wall", "cpu", "ref_wall", "ref_cpu")} for name in commands
    }
    for _ in range(rounds):
        for name, argv in commands.items():  # the reference right before each command: the same load
            wall, cpu = timed(reference, cwd)
            figures[name]["ref_wall"].append(wall)
            figures[name]["ref_cpu"].append(cpu)
            wall, cpu = timed(argv, cwd)
            figures[name]["wall"].append(wall)
            figures[name]["cpu"].append(cpu)
    print(f"{rounds} rounds, each command right after `python -c pass`; median (min-max)")
    print(f"{'command':<22} {'wall':>22} {'python -c pass':>22} {'ratio':>6} {'cpu':>22} {'cpu ratio':>9}  target")
    for name, got in figures.items():
        wall, cpu = statistics.median(got["wall"]), statistics.median(got["cpu"])
        ratio = wall / statistics.median(got["ref_wall"])
        cpu_ratio = cpu / statistics.median(got["ref_cpu"])
        verdict = "OK" if wall <= TARGET_S else "MISSED"
        print(
            f"{name:<22} {spread(got['wall']):>22} {spread(got['ref_wall']):>22} {ratio:5.1f}x "
            f"{spread(got['cpu']):>22} {cpu_ratio:8.1f}x  <= {TARGET_S * 1000:.0f} ms: {verdict}"
        )


def slowest_imports(argv: list[str], cwd: Path, count: int = 10) -> list[tuple[int, int, str]]:
    """``python -X importtime`` of the command: (own µs, cumulative µs, module) of its ``count`` slowest."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "app", *argv[len(interlock()) :]],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    rows = [
        (int(found.group(1)), int(found.group(2)), found.group(4))
        for line in done.stderr.splitlines()
        if (found := IMPORT_LINE.match(line))
    ]
    total = sum(own for own, _, _ in rows)
    print(f"  {len(rows)} modules, {total / 1000:.0f} ms of imports in all")
    return sorted(rows, reverse=True)[:count]


def main() -> int:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 15
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder) / "demo"
        run_id = demo_run(repo)
        commands = {
            "interlock --help": [*interlock(), "--help"],
            "interlock status RUN": [*interlock(), "status", run_id, "--repo", str(repo)],
            "interlock validate FILE": [*interlock(), "validate", str(GRAPH)],
        }
        load = os.getloadavg()
        print(f"load average at the start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
        measure(commands, Path(folder), rounds)
        for name, argv in commands.items():
            print(f"\npython -X importtime, {name}: the 10 slowest imports (own ms, cumulative ms)")
            for own, cumulative, module in slowest_imports(argv, Path(folder)):
                print(f"  {own / 1000:7.1f} {cumulative / 1000:8.1f}  {module}")
        print(f"load average at the end: {' '.join(f'{value:.1f}' for value in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
