"""Bytes per cached object: parsed dicts versus the compact cache (deflated JSON, controller_manager/jsonpack.py).

    .venv/bin/python benchmarks/cache_memory.py [--objects 20000]

Fills an Indexer the way an informer does (LIST pages of 500 decoded with json.loads) with
ConfigMaps shaped like benchmarks/framework.py's, and prints tracemalloc-retained bytes per
object, the ratio to the object's JSON size, and the cost of one ``get`` in each mode.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller_manager.cache import Indexer, share_item_strings


def configmap(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:05d}", "namespace": "bench", "uid": f"00000000-0000-4000-8000-{i:012d}",
                         "resourceVersion": str(1000 + i), "creationTimestamp": "2026-11-21T20:00:00Z",
                         "labels": {"app": "bench", "tier": f"t{i % 4}", "shard": str(i % 16)}},
            "data": {"key": f"value-{i}", "config.yaml": f"replicas: {i % 7}\nmode: steady\n"}}


def pages(n: int) -> list[bytes]:
    objects = [configmap(i) for i in range(n)]
    return [json.dumps({"items": objects[i:i + 500]}).encode() for i in range(0, n, 500)]


def fill(raw_pages: list[bytes], compact: bool) -> tuple[Indexer, int]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    store = Indexer(compact=compact)
    for raw in raw_pages:
        for item in json.loads(raw)["items"]:
            if not compact:
                share_item_strings(item)
            store.upsert(item)
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return store, retained


def get_cost(store: Indexer, n: int) -> float:
    keys = [f"bench/cm-{i:05d}" for i in range(0, n, max(n // 2000, 1))]
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        for key in keys:
            store.get(key)
        runs.append((time.perf_counter() - started) / len(keys))
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=20_000)
    n = parser.parse_args().objects
    raw_pages = pages(n)
    json_bytes = sum(len(json.dumps(configmap(i), separators=(",", ":"))) for i in range(n)) / n
    print(f"{n} ConfigMaps, average JSON {json_bytes:.0f} B")
    for compact in (False, True):
        store, retained = fill(raw_pages, compact)
        per_object = retained / n
        print(f"{'compact' if compact else 'dicts  '}: {per_object:7.0f} B/object  "
              f"{per_object / json_bytes:4.2f}x JSON   get {get_cost(store, n) * 1e6:5.1f} us")


if __name__ == "__main__":
    main()
