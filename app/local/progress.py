"""Progress lines of a local run: the elapsed time, then what happened; on a terminal, a live line that
counts the seconds while a mission runs. Text of several lines is printed whole and indented."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class Progress:
    """Progress lines with the run's elapsed time; on a terminal, a live line while a mission runs."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        """One event, stamped; a text of several lines (a question, an answer) is printed whole, indented."""
        if self.quiet:
            return
        stamp = f"{time.monotonic() - self.started:7.1f}s  "
        first, *rest = text.splitlines() or [""]
        lines = [stamp + first, *(" " * len(stamp) + line if line else "" for line in rest)]
        print("\n".join(lines), file=self.stream, flush=True)

    @contextmanager
    def running(self, text: str) -> Iterator[None]:
        """A line that counts the seconds while ``text`` goes on (terminals only; plain lines elsewhere)."""
        self.line(f"{text} started")
        if self.quiet or not self.stream.isatty():
            yield
            return
        from rich.console import Console

        began = time.monotonic()
        with Console(file=self.stream).status(text) as status:
            stop = threading.Event()

            def tick() -> None:
                while not stop.wait(0.5):
                    status.update(f"{text} — {time.monotonic() - began:.0f}s")

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
            try:
                yield
            finally:
                stop.set()
                ticker.join()
