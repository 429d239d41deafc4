"""Durable storage of the object table in SQLite (WAL), written by one thread with group commit.

The event loop never touches SQLite: writes are queued, a single writer thread commits
whatever has accumulated in one transaction, and each write's future resolves only once
its transaction is committed. That gives both "no blocking calls on the loop" and
throughput (one fsync per batch, not per write).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Row:
    """One object as stored: its table key, resourceVersion and JSON bytes (None = deleted)."""

    storage_key: str
    namespace: str
    name: str
    rv: int
    data: bytes | None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    storage_key TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    rv          INTEGER NOT NULL,
    data        BLOB NOT NULL,
    PRIMARY KEY (storage_key, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SqliteJournal:
    """The objects table in ``<data_dir>/apiserver.db``; the highest resourceVersion in ``meta``."""

    def __init__(self, data_dir: Path, on_committed: Callable[[Sequence[Row]], None]) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self._path = data_dir / "apiserver.db"
        self._on_committed = on_committed
        self._pending: list[tuple[Row, asyncio.Future[None]]] = []
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._failure: BaseException | None = None

    async def open(self) -> tuple[int, list[Row]]:
        """Open (creating if needed) and read everything back: (last resourceVersion, rows)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._open_sync)

    def _open_sync(self) -> tuple[int, list[Row]]:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        self._conn = conn
        rv_row = conn.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
        rows = [Row(k, ns, n, rv, bytes(d)) for k, ns, n, rv, d in
                conn.execute("SELECT storage_key, namespace, name, rv, data FROM objects")]
        last = max([rv_row[0] if rv_row else 0, *(r.rv for r in rows)])
        return last, rows

    def submit(self, row: Row) -> asyncio.Future[None]:
        """Queue a write; the future resolves when it is committed."""
        if self._failure is not None:
            raise RuntimeError("storage has failed") from self._failure
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((row, future))
        self._wakeup.set()
        return future

    async def run_writer(self) -> None:
        """The group-commit loop; owned by the server's task group, ends when cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            batch, self._pending = self._pending, []
            if not batch:
                continue
            try:
                await asyncio.shield(loop.run_in_executor(self._executor, self._commit_sync,
                                                          [r for r, _ in batch]))
            except Exception as exc:  # disk full, corrupted file: fail every waiter, stop writing
                self._failure = exc
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(RuntimeError(f"storage write failed: {exc}"))
                raise
            self._on_committed([r for r, _ in batch])
            for _, fut in batch:
                if not fut.done():
                    fut.set_result(None)

    def _commit_sync(self, rows: list[Row]) -> None:
        conn = self._conn
        assert conn is not None
        with self._lock:
            conn.execute("BEGIN")
            try:
                for row in rows:
                    if row.data is None:
                        conn.execute("DELETE FROM objects WHERE storage_key=? AND namespace=? AND name=?",
                                     (row.storage_key, row.namespace, row.name))
                    else:
                        conn.execute(
                            "INSERT OR REPLACE INTO objects (storage_key, namespace, name, rv, data) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (row.storage_key, row.namespace, row.name, row.rv, row.data))
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('rv', ?)", (rows[-1].rv,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        """Commit what is still queued (the writer task is stopped first), then close the file."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        batch, self._pending = self._pending, []
        if batch and self._conn is not None and self._failure is None:
            await loop.run_in_executor(self._executor, self._commit_sync, [r for r, _ in batch])
        for _, fut in batch:
            if not fut.done():
                fut.set_result(None)
        await loop.run_in_executor(self._executor, self._close_sync)
        self._executor.shutdown(wait=True)

    def _close_sync(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
