"""A mission's two jobs on a large repository: full clones (before issue 27) against blobless ones (now).

Run: ``python -m tests.bench.bench_checkout [commits] [kib_per_commit] [repeats]`` (defaults 20000 10 3: a
generated repository of 20,000 commits and 200 MB of history that does not compress; prints a table, never a
test).

The repository is written with ``git fast-import``: each commit replaces one of 2,000 files with new random
bytes, so the history is 20,000 blobs that neither delta nor compress. On it the bench seeds a run as the
service does (``develop``, the run branch, the state branch with the record and the first order) and runs the
mission's jobs as Actions runs them, in this process:

- **work**: the checkout (``git clone`` of every branch, as ``actions/checkout`` with ``fetch-depth: 0`` does;
  with ``--filter=blob:none`` as the workflow asks now), then ``work_phase`` with an agent that writes one file;
- **deliver**: a bare scratch repository and ``deliver_phase``, fetching without a filter (before) or blobless.

The remote is a ``file://`` URL served by ``git upload-pack`` with filters allowed, as GitHub allows them: the
figures are git's own work and the bytes it moves, without a network. On a runner the bytes are what cost:
GitHub's network, not its API quota, binds a checkout. The systems alternate, a round each, and the origin's
branches are put back after every round, so each round delivers the same mission.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from app.runner.job import JobSettings, deliver_phase, work_phase
from app.runner.partial import BLOBLESS
from app.store.journal import STATE_BRANCH
from tests.runner.test_job import BRANCH, RUN, seed_origin

FILES = 2000
AGENT = 'import sys, pathlib; sys.stdin.read(); pathlib.Path("hello.txt").write_text("hi\\n"); print("VERDICT: PASS")'


def generate(bare: Path, commits: int, kib: int, files: int = FILES) -> None:
    """``commits`` commits on ``develop``, each replacing one of ``files`` files with ``kib`` KiB of random bytes."""
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "develop", str(bare)], check=True)
    importer = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=bare, stdin=subprocess.PIPE)
    assert importer.stdin is not None
    for n in range(commits):
        message = f"change {n}\n".encode()
        head = f"commit refs/heads/develop\ncommitter Bench <b@b.invalid> {1_700_000_000 + n} +0000\n"
        blob = os.urandom(kib * 1024)
        path = f"data/{n % files:04}.bin"
        importer.stdin.write(head.encode() + b"data %d\n" % len(message) + message)
        importer.stdin.write(f"M 100644 inline {path}\ndata {len(blob)}\n".encode() + blob + b"\n")
    importer.stdin.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


@dataclass
class Round:
    clone_s: float
    work_s: float
    deliver_s: float
    checkout_mb: float
    deliver_mb: float


class Mission:
    """The seeded origin and one mission's two jobs against it, full or blobless."""

    def __init__(self, root: Path, commits: int, kib: int, files: int = FILES) -> None:
        self.root = root
        generate(root / "origin.git", commits, kib, files)
        self.origin = seed_origin(root)  # develop's tip gets the README, the run branch and the state branch
        self.url = f"file://{self.origin}"
        subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=self.origin, check=True)
        self.tips = {ref: self._ref(ref) for ref in (f"refs/heads/{BRANCH}", f"refs/heads/{STATE_BRANCH}")}
        (root / "agent.py").write_text(AGENT)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)}

    def _ref(self, ref: str) -> str:
        return subprocess.run(["git", "rev-parse", ref], cwd=self.origin, capture_output=True, text=True).stdout.strip()

    def once(self, blobless: bool) -> Round:
        with tempfile.TemporaryDirectory(dir=self.root) as scratch:
            folder = Path(scratch)
            checkout, handoff, bare = folder / "checkout", folder / "handoff", folder / "deliver.git"
            started = time.perf_counter()
            filters = [f"--filter={BLOBLESS}"] if blobless else []
            subprocess.run(["git", "clone", "--quiet", *filters, "-b", BRANCH, self.url, str(checkout)], check=True)
            cloned = time.perf_counter()
            settings = JobSettings(checkout, RUN, 1, agent=f"command:{sys.executable} {self.root / 'agent.py'}")
            assert work_phase(settings, handoff, self.env) is None
            worked = time.perf_counter()
            subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
            deliver = replace(settings, workdir=bare, remote=self.url, partial=BLOBLESS if blobless else "")
            result = deliver_phase(deliver, handoff, "success", self.env)
            delivered = time.perf_counter()
            assert result.commits == 1, result.message
            figures = Round(
                cloned - started, worked - cloned, delivered - worked, size_mb(checkout / ".git"), size_mb(bare)
            )
        for ref, tip in self.tips.items():  # the next round delivers the same mission
            subprocess.run(["git", "update-ref", ref, tip], cwd=self.origin, check=True)
        return figures


def main() -> None:
    commits, kib, repeats = (int(a) for a in (sys.argv[1:] + ["20000", "10", "3"][len(sys.argv) - 1 :])[:3])
    with tempfile.TemporaryDirectory(prefix="interlock-bench-checkout-") as folder:
        started = time.perf_counter()
        mission = Mission(Path(folder), commits, kib)
        history = size_mb(mission.origin / "objects")
        made_s = time.perf_counter() - started
        print(f"repository: {commits} commits, {history:.0f} MB of objects, made in {made_s:.0f} s")
        rounds: dict[str, list[Round]] = {"full": [], "blobless": []}
        for _ in range(repeats):
            for name in ("full", "blobless"):  # alternating: a machine that slows down weighs on both
                rounds[name].append(mission.once(name == "blobless"))
        columns = (
            ("clone s", 10),
            ("work s", 10),
            ("deliver s", 11),
            ("total s", 10),
            ("checkout MB", 13),
            ("deliver MB", 12),
        )
        print(f"{'system':<10}" + "".join(f"{name:>{width}}" for name, width in columns))
        medians = {}
        for name, seen in rounds.items():
            m = {f: statistics.median(getattr(r, f) for r in seen) for f in Round.__dataclass_fields__}
            medians[name] = m
            total = m["clone_s"] + m["work_s"] + m["deliver_s"]
            print(
                f"{name:<10}{m['clone_s']:>10.2f}{m['work_s']:>10.2f}{m['deliver_s']:>11.2f}{total:>10.2f}"
                f"{m['checkout_mb']:>13.1f}{m['deliver_mb']:>12.1f}"
            )
        full, blobless = medians["full"], medians["blobless"]
        ratio = lambda *fields: sum(blobless[f] for f in fields) / sum(full[f] for f in fields)  # noqa: E731
        print(
            f"blobless / full (medians of {repeats}): checkout + work {ratio('clone_s', 'work_s'):.2f}x, "
            f"deliver {ratio('deliver_s'):.2f}x, both jobs {ratio('clone_s', 'work_s', 'deliver_s'):.2f}x; "
            f"bytes: checkout {ratio('checkout_mb'):.3f}x, deliver {ratio('deliver_mb'):.3f}x; load average "
            f"{os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
