"""Progress of a long command on stderr: a bar redrawn in place on a terminal, plain
lines elsewhere (a log or a pipe would otherwise collect every redraw as one line)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """Called with ``(done, total)`` as work advances; ``every`` is the least time between
    two plain lines (a change is always shown on a terminal, the end always)."""

    def __init__(
        self,
        what: str,
        out: TextIO | None = None,
        every: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.out = out if out is not None else sys.stderr
        self.tty = self.out.isatty()
        self.every = every
        self.clock = clock
        self._last: tuple[int, int] | None = None
        self._shown_at = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        if (done, total) == self._last:
            return
        self._last = (done, total)
        if self.tty:
            width = 30
            filled = width * done // max(total, 1)
            bar = "#" * filled + "." * (width - filled)
            end = "\n" if done >= total else ""
            self.out.write(f"\r  [{bar}] {done}/{total} {self.what}{end}")
        elif done >= total or self.clock() - self._shown_at >= self.every:
            self._shown_at = self.clock()
            self.out.write(f"  {done}/{total} {self.what}\n")
        self.out.flush()

    def close(self) -> None:
        """End a bar left unfinished (a timeout), so what follows starts on its line."""
        if self.tty and self._last is not None and self._last[0] < self._last[1]:
            self.out.write("\n")
            self.out.flush()
