"""The progress bar of long fits: steps (or fits, for one model per series), the training loss,
the elapsed time and an estimate of the time left, on one line of stderr redrawn in place
(a terminal and a notebook cell both honour the carriage return).

It shows when the caller asks (verbose=True) or when stderr is a terminal, and only once a fit
has run for DELAY seconds, so short fits print nothing. Dask workers and other processes
without a terminal stay silent unless asked.
"""

from __future__ import annotations

import math
import sys
import time

DELAY = 1.0  # seconds a fit runs before its bar appears


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 60:02d}:{seconds % 60:02d}" if seconds < 3600 else \
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ProgressBar:
    """Callable as callback(done, total, loss) from the C++ fit's polling; close() ends it."""

    width = 24

    def __init__(self, label, unit="step", stream=None, delay=None):
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY if delay is None else delay
        self.start = time.perf_counter()
        self.shown = False
        self.last = (0, 0, math.nan)

    def __call__(self, done, total, loss):
        self.last = (int(done), int(total), float(loss))
        if self.shown or time.perf_counter() - self.start >= self.delay:
            self._draw()

    def _draw(self):
        done, total, loss = self.last
        elapsed = time.perf_counter() - self.start
        frac = done / total if total > 0 else 0.0
        fill = int(self.width * frac)
        bar = "#" * fill + "-" * (self.width - fill)
        eta = _clock(elapsed / frac - elapsed) if 0 < frac < 1 else "--:--"
        text = (f"\r{self.label}: {100 * frac:3.0f}%|{bar}| {done}/{total} {self.unit}s "
                f"[{_clock(elapsed)}<{eta}")
        if not math.isnan(loss):
            text += f", loss {loss:.4g}"
        self.stream.write(text + "]")
        self.stream.flush()
        self.shown = True

    def close(self, done=None):
        """Draws the final state (`done`: the steps the fit ran; None: the last seen) and ends
        the line, if the bar was shown. Later calls do nothing."""
        if not self.shown:
            return
        last_done, total, loss = self.last
        self.last = (last_done if done is None else int(done), total, loss)
        self._draw()
        self.stream.write("\n")
        self.stream.flush()
        self.shown = False
        self.delay = math.inf  # closed: no more drawing


def wanted(verbose):
    """Whether a fit shows a bar: asked for, or stderr is an interactive terminal."""
    if verbose:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
