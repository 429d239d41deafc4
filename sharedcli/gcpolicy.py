"""The garbage-collector settings of a process that keeps a large heap of API objects.

The dev API server keeps every object, and a window of past versions for watches; a component
(controller-manager, descheduler) keeps every watched object in its informer caches. Both are
tens of thousands of long-lived Python dicts and lists, and a full collection walks them all.
With CPython's default thresholds (700, 10, 10), a full collection runs every time the survivors
since the last one reach a quarter of the heap: under a burst of writes that is every few
thousand writes (or watch events). With 10,000 bindings each one stopped the server for
200-300 ms, and the controller-manager for 80-110 ms (three of them, about 12% of its CPU, while
it finished 1,000 rebalancers; docs/benchmarks.md, WorkloadRebalancer). The settings below make
young collections rarer and full ones wait for about four million surviving allocations (some
100,000 writes of a Karmada binding) instead. API objects never form reference cycles, so they
are freed by reference counting as usual; only cyclic garbage that has lived long (closed
connections, mostly) waits longer for the full pass.

Applied by the programs (``karmada-devplane apiserver`` and ``up``, and every component's
``run_component``): a process-wide policy is the program's choice, so the libraries (``ApiServer``,
``Manager``, used in-process by tests) leave it alone.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)


def tune_for_large_heap() -> None:
    gc.set_threshold(*THRESHOLDS)
