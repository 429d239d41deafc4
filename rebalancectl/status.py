"""A rebalancer's outcome: whether it has finished, and waiting until it has (``--wait``, ``status``)."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from karmada_api.resources import WORKLOAD_REBALANCERS
from karmada_api.shapes import rebalancer_status
from sharedcli.flagtypes import format_duration

from .errors import CommandError
from .retry import retrying, transient

NOTICE_AFTER = 30.0  # seconds of --wait before saying which rebalancers have not finished yet
WATCH_SECONDS = 60  # one watch request; the wait re-watches from the last resourceVersion until its deadline
RETRY_PAUSE = 1.0  # after an answer a restarting or busy API server also gives, before reading again


def is_finished(rebalancer: Obj) -> bool:
    """Finished: ``status.finishTime`` is set for the current generation (``observedGeneration`` == generation)."""
    status = rebalancer_status(rebalancer)
    observed = int(status.get("observedGeneration") or 0)
    return bool(status.get("finishTime")) and observed == objects.generation(rebalancer)


async def get(client: KubeClient, name: str) -> Obj:
    """The rebalancer; ApiError (kube's NotFound message) when there is none."""
    return await client.get(WORKLOAD_REBALANCERS, name)


def gone_before_read(name: str) -> CommandError:
    """What to say of a rebalancer this command created that is gone before its result was read: deleted by its
    ``ttlSecondsAfterFinished`` (once finished, when that is shorter than the reads took) or by someone. Its result
    is unknown, not a failure."""
    return CommandError(f"workloadrebalancer {name} was deleted before its result was read, so its result is "
                        "unknown (by its ttlSecondsAfterFinished once finished, if that is shorter than the wait, or "
                        "by someone else); use a longer --ttl")


async def _read(client: KubeClient, name: str) -> Obj:
    """:func:`get` of a rebalancer this command created, read again after a transient error (the caller's deadline
    bounds it)."""
    try:
        return await retrying(lambda: get(client, name))
    except ApiError as exc:
        if exc.is_not_found:
            raise gone_before_read(name) from None
        raise


async def _until_finished(client: KubeClient, name: str) -> Obj:
    """Watch the one rebalancer (by a field selector on its name) until it has finished.

    An expired watch, a restarting or overloaded API server, a dropped connection: read it again and
    re-watch. Its deletion ends the wait: with its result if the deleted object had finished (its TTL), else
    with an error, as does any other error.
    """
    current = await _read(client, name)
    while not is_finished(current):
        version = objects.metadata(current).get("resourceVersion", "")
        try:
            async for event in client.watch(WORKLOAD_REBALANCERS, resource_version=str(version),
                                            timeout_seconds=WATCH_SECONDS, field_selector=f"metadata.name={name}"):
                if event.get("type") == "DELETED":
                    final = dict(event["object"])
                    if is_finished(final):  # deleted by its TTL: the event holds its final state
                        return final
                    raise CommandError(f"workloadrebalancer {name} was deleted before it finished")
                if event.get("type") in ("ADDED", "MODIFIED"):
                    current = dict(event["object"])
                    if is_finished(current):
                        return current
        except Exception as exc:
            if not transient(exc):
                raise
            if not (isinstance(exc, ApiError) and exc.status == 410):
                await anyio.sleep(RETRY_PAUSE)
        current = await _read(client, name)
    return current


async def wait_finished(client: KubeClient, names: list[str], timeout: float,
                        notice: Callable[[str], None] | None = None) -> list[Obj]:
    """Every rebalancer, once finished; CommandError naming those still running after ``timeout`` seconds.
    ``notice`` is told once, after :data:`NOTICE_AFTER` seconds, which are still running, so that a wait for a
    controller that is not there does not stay silent until its timeout."""
    done: dict[str, Obj] = {}

    async def one(name: str) -> None:
        done[name] = await _until_finished(client, name)

    async def all_finished() -> None:
        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)

    async def still_waiting() -> None:
        await anyio.sleep(NOTICE_AFTER)
        if notice is not None:
            waiting = [n for n in names if n not in done]
            notice(f"still waiting for workloadrebalancer(s) {', '.join(waiting)} to finish after "
                   f"{format_duration(NOTICE_AFTER)} (is a WorkloadRebalancer controller running?)")

    with anyio.move_on_after(timeout) as scope:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(still_waiting)
                await all_finished()
                group.cancel_scope.cancel()
        except BaseExceptionGroup as failed:  # anyio groups what a task raised: report the first, as itself
            first: BaseException = failed
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
    if scope.cancelled_caught:
        waiting = [n for n in names if n not in done]
        raise CommandError(f"timed out after {format_duration(timeout)} waiting for workloadrebalancer(s) "
                           f"{', '.join(waiting)} to finish (is a WorkloadRebalancer controller running?)")
    return [done[name] for name in names]
