"""A real redis-server for the tests that share state through Redis (issue 27, SPEC GH8)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A redis-server on a free port in ``workdir``, persisting nothing unless ``appendonly`` (then its data
    outlives a stop); stopped and started again on the same port by the tests of what a replica does while
    Redis is away."""

    def __init__(self, workdir: Path, appendonly: bool = False) -> None:
        self.workdir = workdir
        self.appendonly = appendonly
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir)]
        argv += ["--save", "", "--appendonly", "yes" if self.appendonly else "no"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


def redis_available() -> None:
    if not Path(REDIS_SERVER).exists():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")


def start_redis(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a free port in ``workdir``, persisting nothing, and its URL, once it takes connections."""
    redis_available()
    server = RedisServer(workdir)
    server.start()
    assert server.proc is not None
    return server.proc, server.url


def stop_redis(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server on a free port in a tmp dir, persisting nothing; its URL; stopped after the module."""
    redis_available()
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
