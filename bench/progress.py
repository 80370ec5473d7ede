"""progress.py — how far `make bench` has got.

On a terminal: one status line on stderr, redrawn in place every second
("make bench: 3/14 done, lstm_fwd_b64: PyTorch (41 s, about 2 min left)"),
which lines of results clear and draw again around themselves. Elsewhere (a
pipe, a log file): a plain line as each step starts. The C side's equivalent
is tools/progress.c.
"""
import os
import sys
import threading
import time


class Progress:
    def __init__(self, task, total, stream=None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() and os.environ.get("TERM", "") != "dumb"
        self.task, self.total, self.done, self.item = task, total, 0, ""
        self.started = time.monotonic()
        self.drawn = False
        self.lock = threading.Lock()
        if self.tty:  # the elapsed time moves on while a step runs
            threading.Thread(target=self._tick, daemon=True).start()

    def _line(self):
        elapsed = time.monotonic() - self.started
        line = f"{self.task}: {self.done}/{self.total} done"
        if self.item:
            line += f", {self.item}"
        line += f" ({elapsed:.0f} s"
        if 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            line += f", about {left / 60:.0f} min left" if left >= 120 else f", about {left:.0f} s left"
        return line + ")"

    def _draw(self):
        line = self._line()
        if self.tty:
            try:  # a full line would wrap, and \r return only to its second half
                columns = os.get_terminal_size(self.stream.fileno()).columns
            except OSError:
                columns = 0
            self.stream.write("\r\033[K" + line[:(columns if columns > 20 else 80) - 1])
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _clear(self):
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False

    def _tick(self):
        while True:
            time.sleep(1.0)
            with self.lock:
                if self.drawn:
                    self._draw()

    def step(self, done, item):
        """Step `item` starts with `done` of the total finished: shown at once."""
        with self.lock:
            self.done, self.item = done, item
            self._draw()

    def say(self, text):
        """Prints a line of results to stdout, around the status line."""
        with self.lock:
            had = self.drawn
            self._clear()
            print(text, flush=True)
            if had:
                self._draw()

    def end(self, done):
        """The work ends with `done` finished."""
        with self.lock:
            self.done, self.item = done, ""
            self._clear()
            if not self.tty:
                self._draw()
