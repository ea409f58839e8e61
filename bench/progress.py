"""A progress bar on stderr for the suite's longer runs (no dependency: one line redrawn in place)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

WIDTH = 30


def bar_text(label: str, done: int, total: int, elapsed_s: float) -> str:
    """`label [#####.....] 12/40 3.1 s`: the line the bar draws."""
    share = 0.0 if total <= 0 else min(1.0, done / total)
    filled = round(share * WIDTH)
    return f"{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} {elapsed_s:.1f} s"


class Progress:
    """with Progress("P7 N=1000", total=1000) as bar: bar.advance()  (redraws at most 10 times a second)"""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self._stream = stream if stream is not None else sys.stderr
        self._started = time.monotonic()
        self._drawn = 0.0

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        now = time.monotonic()
        if now - self._drawn >= 0.1 or self.done >= self.total:
            self._drawn = now
            self._draw()

    def set(self, done: int) -> None:
        self.advance(done - self.done)

    def _draw(self) -> None:
        if self._stream.isatty():
            text = bar_text(self.label, self.done, self.total, time.monotonic() - self._started)
            self._stream.write("\r" + text)
            self._stream.flush()

    def __enter__(self) -> Progress:
        self._draw()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        text = bar_text(self.label, self.done, self.total, time.monotonic() - self._started)
        self._stream.write(("\r" if self._stream.isatty() else "") + text + "\n")
        self._stream.flush()
