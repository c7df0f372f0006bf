"""The README's benchmark commands name benchmarks that exist, with the options they take (issue 16)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT, doc


def test_every_benchmark_the_readme_names_exists() -> None:
    readme = doc("benchmarks.md")
    named = re.findall(r"python -m tests\.bench\.(\w+)", readme)
    assert "bench_burr" in named
    for name in named:
        assert (ROOT / "tests" / "bench" / f"{name}.py").is_file(), name


def test_the_burr_benchmark_takes_the_options_the_readme_gives() -> None:
    readme = doc("benchmarks.md")
    line = next(line for line in readme.splitlines() if "tests.bench.bench_burr" in line)
    source = (ROOT / "tests" / "bench" / "bench_burr.py").read_text(encoding="utf-8")
    for option in re.findall(r"--\w+", line):
        assert f'"{option}"' in source, option
    assert "burr" in (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("bench = [", 1)[1].split("]", 1)[0]


def test_the_checkout_benchmark_delivers_the_same_mission_with_fewer_bytes_blobless(tmp_path: Path) -> None:
    # issue 27: bench_checkout's rounds each deliver one commit (Mission.once asserts it) and the blobless
    # round moves a fraction of the full one's bytes, at a size that takes a second
    from tests.bench.bench_checkout import Mission

    mission = Mission(tmp_path, 300, 4, files=10)  # 290 old versions, 10 checked out
    full, blobless = mission.once(False), mission.once(True)
    assert blobless.checkout_mb < full.checkout_mb / 3 and blobless.deliver_mb < full.deliver_mb / 3
    assert mission.once(True).deliver_mb == pytest.approx(blobless.deliver_mb, rel=0.05)  # the refs were put back
