"""What the benchmarks share: child processes that die with them, the dev API server as one, /proc readings.

Imported as ``benchmarks.support`` (each benchmark puts the repository root on ``sys.path``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
READY_PREFIX = "apiserver ready at "
STARTUP_TIMEOUT = 30.0
REQUEST_TIMEOUT = 30.0

CLIENT_TLS: ssl.SSLContext | None = None
"""The TLS (CA and client certificate) of the benchmarks' own HTTP clients: None for the dev plane's plain HTTP;
``benchmarks/side_by_side.py`` sets the reference plane's admin certificate (:func:`use_tls`)."""


def use_tls(context: ssl.SSLContext | None) -> None:
    """Make every session and watch of the benchmarks use ``context`` (the server is then an https URL)."""
    global CLIENT_TLS
    CLIENT_TLS = context


def connector(limit: int) -> aiohttp.TCPConnector:
    """A connection pool of ``limit`` connections, with :data:`CLIENT_TLS`."""
    return aiohttp.TCPConnector(limit=limit, ssl=CLIENT_TLS if CLIENT_TLS is not None else True)


class BenchError(Exception):
    """A phase failed or ran out of time."""


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL it if the benchmark dies (Linux prctl PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def child_env() -> dict[str, str]:
    """The environment of a child: this checkout importable without installing it."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.wait_for(proc.wait(), 5.0)


def free_port() -> int:
    """A port free on 127.0.0.1 right now (for a child that must be told its port; it binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int | str = "self") -> float:
    """utime + stime of a process (all its threads), from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # fields 14 and 15 of proc(5)


def status_kib(key: str, pid: int | str = "self") -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/<pid>/status, in KiB (0 if unavailable)."""
    return status_number(key, pid)


def status_number(key: str, pid: int | str = "self") -> int:
    """The number on a line of /proc/<pid>/status (``VmHWM`` in KiB, ``nonvoluntary_ctxt_switches``...), or 0."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def preemptions(pid: int | str = "self") -> int:
    """How often the process (its main thread) lost its CPU while it could still run."""
    return status_number("nonvoluntary_ctxt_switches", pid)


def rotated(items: Sequence[T], turn: int) -> list[T]:
    """``items`` from index ``turn`` (modulo their number) round to the start: the order of the runs of round
    ``turn``, so that each kind of run goes first as often as the others (the host's speed drifts)."""
    start = turn % len(items)
    return [*items[start:], *items[:start]]


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class ServerProcess:
    """A running ``karmada-devplane apiserver`` child."""

    proc: asyncio.subprocess.Process
    url: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def status_kib(self, key: str) -> int:
        return status_kib(key, self.pid)

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines)


@contextlib.asynccontextmanager
async def run_server(log_path: Path, *args: str) -> AsyncIterator[ServerProcess]:
    """``python -m devplane apiserver --port 0 ARGS...`` until the block ends; waits for its ready line."""
    cmd = [sys.executable, "-m", "devplane", "apiserver", "--port", "0", *args]
    with log_path.open("wb") as log_file:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE, stderr=log_file,
                                                    stdin=asyncio.subprocess.DEVNULL, cwd=REPO, env=child_env(),
                                                    preexec_fn=die_with_parent)
    try:
        assert proc.stdout is not None
        url = ""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        for _ in range(100):  # the ready line comes first; bounded anyway
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), remaining)
            except TimeoutError:
                break
            if not line:
                break
            text = line.decode(errors="replace").strip()
            if text.startswith(READY_PREFIX):
                url = text[len(READY_PREFIX):].split()[0]
                break
        server = ServerProcess(proc, url, log_path)
        if not url:
            raise BenchError(f"server did not report ready within {STARTUP_TIMEOUT:.0f}s:\n{server.log_tail()}")
        yield server
    finally:
        await stop_process(proc)


def positive_counts(parser: argparse.ArgumentParser, text: str, flag: str) -> list[int]:
    """``--sizes 100,1000``: the comma-separated positive integers of ``flag``, or the parser's usage error."""
    try:
        counts = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        parser.error(f"{flag} takes comma-separated integers")
    if not counts or any(c < 1 for c in counts):
        parser.error(f"{flag} must be positive")
    return counts


def require_at_least_one(parser: argparse.ArgumentParser, args: argparse.Namespace, *names: str) -> None:
    """The parser's usage error for the first of the integer options ``names`` (``dest`` names) below 1."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")


def run_in_tmp(bench: Callable[[Path], Coroutine[Any, Any, None]], prefix: str, keep_logs: Path | None) -> int:
    """``asyncio.run(bench(tmp))`` in a fresh temp dir, always removed (``keep_logs``: its logs copied there first).

    The exit code: 0, 1 after a BenchError (printed), 130 when interrupted.
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix))

    async def unwinding_on_sigterm() -> None:
        task = asyncio.current_task()
        assert task is not None
        # SIGTERM unwinds like Ctrl-C: the children are stopped and the temp dir removed.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await bench(tmp)

    try:
        asyncio.run(unwinding_on_sigterm())
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    except TimeoutError:
        print("benchmark failed: it ran out of time (--time-limit)", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for path in tmp.glob("*.log"):
                shutil.copy(path, keep_logs / path.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


async def watch_until_all(url: str, path: str, resource_version: str, *, want: int, done: Callable[[Any], bool],
                          started: asyncio.Event, time_limit: float) -> float:
    """Watch ``path`` from ``resource_version`` (``started`` set once it answers); the monotonic time when ``want``
    distinct objects were seen ``done`` in an ADDED or MODIFIED event."""
    seen: set[str] = set()
    timeout = aiohttp.ClientTimeout(total=time_limit + 5, sock_read=time_limit)
    async with aiohttp.ClientSession(url, timeout=timeout, connector=connector(1)) as watch_http:
        params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(int(time_limit) + 5)}
        async with watch_http.get(path, params=params) as resp:
            if resp.status != 200:
                raise BenchError(f"watch {path}: HTTP {resp.status}")
            started.set()
            for _ in range(20 * want + 1000):  # a few events per object; bounded anyway
                line = await resp.content.readline()
                if not line:
                    break
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED") and done(obj):
                    meta = obj.get("metadata") or {}
                    seen.add(f"{meta.get('namespace', '')}/{meta.get('name')}")
                    if len(seen) >= want:
                        return time.monotonic()
    raise BenchError(f"watch {path}: only {len(seen)}/{want} done within {time_limit:.0f}s")


async def pool(count: int, concurrency: int, time_limit: float, job: Callable[[int], Awaitable[None]]) -> int:
    """Run ``job(0..count-1)`` with ``concurrency`` workers; stop taking new ones after ``time_limit``."""
    next_index = 0
    done = 0
    deadline = time.monotonic() + time_limit

    async def worker() -> None:
        nonlocal next_index, done
        while next_index < count and time.monotonic() < deadline:
            i = next_index
            next_index += 1
            await job(i)
            done += 1

    async with asyncio.timeout(time_limit + REQUEST_TIMEOUT):
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


async def pool_all(what: str, count: int, concurrency: int, time_limit: float,
                   job: Callable[[int], Awaitable[None]]) -> None:
    """:func:`pool`, and BenchError naming ``what`` unless every job ran within ``time_limit``."""
    if (done := await pool(count, concurrency, time_limit, job)) < count:
        raise BenchError(f"{what}: only {done:,} of {count:,} within {time_limit:.0f}s")


async def expect(resp: aiohttp.ClientResponse, *statuses: int) -> bytes:
    """The body, or BenchError naming the request when the status is not one of ``statuses``."""
    body = await resp.read()
    if resp.status not in statuses:
        raise BenchError(f"{resp.method} {resp.url.path}: HTTP {resp.status} (wanted {statuses}): {body[:300]!r}")
    return body


def py_spy() -> str:
    """py-spy next to this Python (a venv's bin/) or on PATH; only needed for --profile."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise BenchError("--profile needs py-spy (pip install py-spy)")
    return found


def prepare_profile_dir(directory: Path | None) -> str:
    """For --profile DIR: check py-spy is there and create DIR; the error to print, or "" when ready."""
    if directory is None:
        return ""
    try:
        py_spy()
    except BenchError as exc:
        return str(exc)
    directory.mkdir(parents=True, exist_ok=True)
    return ""


@contextlib.asynccontextmanager
async def py_spy_recording(outputs: Mapping[Path, int], *, rate: int, flags: Sequence[str] = ()
                           ) -> AsyncIterator[None]:
    """py-spy samples each pid into its file (raw collapsed stacks) while the body runs; none: a no-op."""
    spies: list[asyncio.subprocess.Process] = []
    try:
        for output, pid in outputs.items():
            spies.append(await asyncio.create_subprocess_exec(
                py_spy(), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", *flags,
                "--output", str(output), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL))
        if spies:
            await asyncio.sleep(1.0)  # let them attach
        yield
    finally:
        for spy in spies:
            with contextlib.suppress(ProcessLookupError):
                spy.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        for spy in spies:
            try:
                await asyncio.wait_for(spy.wait(), 15.0)
            except TimeoutError:
                spy.kill()
                await spy.wait()
