"""The garbage-collector settings of a process that serves an API server.

A dev API server keeps every object, and a window of past versions for watches, as long-lived
Python dicts. With CPython's default thresholds (700, 10, 10), a full collection runs every time
the survivors since the last one reach a quarter of the heap: under a burst of writes that is
every few thousand writes, and each one walks the whole store. With 10,000 bindings it stopped
the server for 200-300 ms, twice in a 5 s burst (docs/benchmarks.md, WorkloadRebalancer), and every
client and watch waited. The settings below make young collections rarer and full ones wait for
about four million surviving allocations (some 100,000 writes of a Karmada binding) instead. The
store's JSON never forms reference cycles, so it is freed by reference counting as usual; only
cyclic garbage that has lived long (closed connections, mostly) waits longer for the full pass.

Applied by the ``apiserver`` and ``up`` commands only: a process-wide policy is the program's
choice, so the library (``ApiServer``, used in-process by tests) leaves it alone.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)


def tune_for_large_heap() -> None:
    gc.set_threshold(*THRESHOLDS)
