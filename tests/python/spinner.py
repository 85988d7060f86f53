"""A thread that counts as fast as Python lets it: how fast it counts while a call runs tells
whether the call lets go of the GIL (test_loader.py, scenarios.py)."""

import threading
import time


class Spinner:
    """`with Spinner() as spinner: spinner.rate(work)`: counts per second while work() runs."""

    def __init__(self) -> None:
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin)

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.count += 1

    def rate(self, work) -> float:
        before, start = self.count, time.perf_counter()
        work()
        return (self.count - before) / (time.perf_counter() - start)

    def __enter__(self) -> "Spinner":
        self._thread.start()
        return self

    def __exit__(self, *exception) -> None:
        self._stop.set()
        self._thread.join()
