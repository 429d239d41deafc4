"""How steady is this machine? The CPU time of one fixed piece of pure-Python work, sampled over a while.

Every figure in docs/benchmarks.md is a time measured on a shared VM. When the same work takes twice as
long from one second to the next (seen here: 14 ms, then 28 ms, with the machine otherwise idle), any
single timing, and any ratio of two timings taken 20 seconds apart, carries that noise. Run this before
reading a benchmark's figures: it prints the spread to expect.

    .venv/bin/python benchmarks/hostspeed.py                 # 60 s, a sample every 0.5 s
    .venv/bin/python benchmarks/hostspeed.py --seconds 20 --interval 0.2
"""

from __future__ import annotations

import argparse
import statistics
import time


def fixed_work() -> None:
    """Dict stores and int-to-str conversions: the interpreter work a controller or an API server does."""
    table: dict[int, str] = {}
    for i in range(200_000):
        table[i % 1000] = str(i)


def sample(seconds: float, interval: float) -> list[float]:
    """CPU milliseconds of ``fixed_work`` (process time: waiting for a CPU does not count), once per interval."""
    samples: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.process_time()
        fixed_work()
        samples.append((time.process_time() - started) * 1000)
        time.sleep(interval)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to sample (default 60)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    args = parser.parse_args()
    if args.seconds <= 0 or args.interval < 0:
        parser.error("--seconds must be positive and --interval not negative")
    samples = sample(args.seconds, args.interval)
    fastest, slowest = min(samples), max(samples)
    print(f"{len(samples)} samples of the same work over {args.seconds:.0f} s (CPU ms):")
    print(f"  fastest {fastest:.1f}, median {statistics.median(samples):.1f}, slowest {slowest:.1f}"
          f"  (slowest / fastest = {slowest / fastest:.2f}x)")
    slow = sum(1 for s in samples if s > 1.5 * fastest)
    print(f"  {slow} of {len(samples)} samples ({100 * slow / len(samples):.0f}%) took over 1.5x the fastest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
