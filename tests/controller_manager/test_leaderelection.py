"""Leader election against the dev API server over HTTP, with short timings (1.0 / 0.6 / 0.2 s).

Every wait is on a condition with a deadline. Timing bounds are derived from client-go's rules:
a standby polls every retry_period * (1 + U[0, 1.2)), so it sees a change at most 2.2 periods late,
and takes over at most one more such period after the lease it saw has expired.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from controller_manager.leaderelection import (
    MISSING_NAMESPACE_REMINDER,
    LeaderElectionConfig,
    LeaderElectionLost,
    LeaderElector,
    default_identity,
)
from descheduler.app import build_parser as descheduler_parser
from devplane.apiserver.server import ApiServer
from sharedcli.options import CommonOptions
from sharedcli.runner import leader_election_config
from tests.conftest import eventually

NS = "karmada-system"
FAST: dict[str, Any] = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.2}
MAX_POLL_GAP = 0.2 * 2.2  # the longest wait between two acquire attempts with FAST timings
SLACK = 0.4  # scheduling and HTTP latency on a loaded CI machine
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases"


# --- fixtures and helpers -------------------------------------------------------------------------


@pytest.fixture
async def namespace(api: client.ApiClient) -> str:
    body: Any = {"metadata": {"name": NS}}  # the typed API serializes plain dicts as they are
    await client.CoreV1Api(api).create_namespace(body, _request_timeout=5)
    return NS


@pytest.fixture
def lease_name() -> str:
    """Unique per test, so the process-wide metric series of one test never leak into another."""
    return f"le-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def new_client(server: ApiServer) -> AsyncIterator[Callable[[], client.ApiClient]]:
    """One ApiClient per elector, so a test can cut one elector off (its host) and not the other."""
    made: list[client.ApiClient] = []

    def make() -> client.ApiClient:
        api_client = client.ApiClient(client.Configuration(host=server.url))
        made.append(api_client)
        return api_client

    yield make
    for api_client in made:
        await api_client.close()


@pytest.fixture
async def tasks() -> AsyncIterator[list[asyncio.Task[Any]]]:
    """Tasks a test starts; whatever is still running at the end is cancelled and awaited."""
    started: list[asyncio.Task[Any]] = []
    yield started
    for task in started:
        task.cancel()
    await asyncio.gather(*started, return_exceptions=True)


class Proxy:
    """A pass-through HTTP proxy in front of the dev API server that counts requests, and whose
    ``answer`` can stand in for the server (to play an API server that does not serve a resource)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.seen: list[tuple[str, str]] = []
        self.answer: Callable[[web.Request], web.Response | None] = lambda request: None
        self.url = ""
        self._session: aiohttp.ClientSession | None = None

    def count(self, method: str, path_suffix: str) -> int:
        return sum(1 for m, p in self.seen if m == method and p.endswith(path_suffix))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path))
        if (stand_in := self.answer(request)) is not None:
            return stand_in
        assert self._session is not None
        async with self._session.request(request.method, self.upstream + request.path_qs, data=await request.read(),
                                         headers={"Content-Type": request.content_type}) as upstream:
            response = web.StreamResponse(status=upstream.status,
                                          headers={"Content-Type": upstream.content_type})
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():  # a watch streams: pass it on as it comes
                await response.write(chunk)
            await response.write_eof()
            return response


@pytest.fixture
async def proxy(server: ApiServer) -> AsyncIterator[Proxy]:
    proxy = Proxy(server.url)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    proxy.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    async with aiohttp.ClientSession() as session:
        proxy._session = session
        yield proxy
        await runner.cleanup()


class Leaders:
    """Records every lead() run, and whether two ever ran at the same time."""

    def __init__(self) -> None:
        self.active: set[str] = set()
        self.overlap = False
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.cancelled: set[str] = set()

    def lead(self, who: str) -> Callable[[], Awaitable[None]]:
        async def lead() -> None:
            if self.active:
                self.overlap = True
            self.active.add(who)
            self.started[who] = time.monotonic()
            try:
                await asyncio.Event().wait()  # lead until cancelled
            except asyncio.CancelledError:
                self.cancelled.add(who)
                raise
            finally:
                self.active.discard(who)
                self.ended[who] = time.monotonic()

        return lead


def config(lease_name: str, who: str, **overrides: Any) -> LeaderElectionConfig:
    return LeaderElectionConfig(lease_name=lease_name, namespace=NS, identity=who, **{**FAST, **overrides})


async def read_lease(api: client.ApiClient, name: str) -> dict[str, Any]:
    response = cast(aiohttp.ClientResponse, await client.CoordinationV1Api(api).read_namespaced_lease(
        name, NS, _preload_content=False, _request_timeout=5))
    async with response:
        assert response.status == 200
        data: dict[str, Any] = json.loads(await response.read())
    return data


def master_status(lease_name: str) -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": lease_name})


def parse_micro_time(value: str) -> datetime:
    assert MICROTIME.match(value), value
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def assert_recent(value: str, within: float = 5.0) -> None:
    assert abs((datetime.now(UTC) - parse_micro_time(value)).total_seconds()) < within


async def wait_leading(elector: LeaderElector, leaders: Leaders, who: str, timeout: float = 5.0) -> None:
    async def check() -> bool:
        return elector.is_leader and who in leaders.active
    await eventually(check, timeout=timeout, interval=0.01)


async def wait_observes(elector: LeaderElector, holder: str, timeout: float = 5.0) -> None:
    async def check() -> bool:
        return elector.observed_holder == holder
    await eventually(check, timeout=timeout, interval=0.01)


# --- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("overrides", "reason"), [
    ({"lease_name": ""}, "lease_name must not be empty"),
    ({"namespace": ""}, "namespace must not be empty"),
    ({"identity": ""}, "identity must not be empty"),
    ({"identity": "  "}, "identity must not be empty"),
    ({"retry_period": 0.0}, "retry_period must be a positive"),
    ({"retry_period": -1.0}, "retry_period must be a positive"),
    ({"lease_duration": float("nan")}, "lease_duration must be a positive"),
    ({"renew_deadline": 2.4}, "renew_deadline (2.4s) must be greater than 1.2 * retry_period"),
    ({"lease_duration": 10.0}, "lease_duration (10.0s) must be greater than renew_deadline (10.0s)"),
    ({"lease_duration": 10.5, "renew_deadline": 10.2}, "stored in whole seconds (10.5s -> 10s)"),
    ({"lease_duration": 0.9, "renew_deadline": 0.6, "retry_period": 0.2}, "stored in whole seconds"),
])
def test_config_validation_rejects(overrides: dict[str, Any], reason: str) -> None:
    cfg = LeaderElectionConfig(**{"lease_name": "karmada-rebalance-controller-manager", "namespace": NS, **overrides})
    with pytest.raises(ValueError, match=re.escape(reason)) as info:
        cfg.validate()
    assert "\n" not in str(info.value)


def test_config_defaults_and_short_timings_are_valid() -> None:
    args = descheduler_parser().parse_args([])  # the namespace's default is the flag's, not the runtime's
    cfg = leader_election_config(CommonOptions.from_args(args), args.leader_elect_resource_name)
    cfg.validate()
    assert (cfg.namespace, cfg.lease_duration, cfg.renew_deadline, cfg.retry_period) == (
        "karmada-system", 15.0, 10.0, 2.0)
    assert cfg.release_on_cancel
    host, _, uid = cfg.identity.rpartition("_")
    assert host and uuid.UUID(uid)
    assert LeaderElectionConfig(lease_name="x", namespace=NS).identity != cfg.identity  # one identity per process start
    assert default_identity() != default_identity()
    LeaderElectionConfig(lease_name="x", namespace=NS, **FAST).validate()


async def test_elector_refuses_invalid_config(api: client.ApiClient) -> None:
    with pytest.raises(ValueError, match="lease_duration"):
        LeaderElector(api, LeaderElectionConfig(lease_name="x", namespace=NS, lease_duration=5.0, renew_deadline=10.0))


# --- acquiring, renewing, releasing -------------------------------------------------------------------


async def test_single_elector_acquires_and_renews(
        api: client.ApiClient, namespace: str, lease_name: str, tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    assert (elector.is_leader, elector.observed_holder) == (False, "")
    tasks.append(asyncio.create_task(elector.run(leaders.lead("a"))))
    await wait_leading(elector, leaders, "a")
    assert master_status(lease_name) == 1.0
    assert elector.observed_holder == "a"

    lease = await read_lease(api, lease_name)
    spec = lease["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]
    assert_recent(spec["acquireTime"])
    first_rv = lease["metadata"]["resourceVersion"]

    async def renewed() -> dict[str, Any] | None:
        later = await read_lease(api, lease_name)
        return later if later["spec"]["renewTime"] != spec["renewTime"] else None

    later = await eventually(renewed, timeout=2.0)
    assert later["metadata"]["resourceVersion"] != first_rv
    assert later["spec"]["holderIdentity"] == "a"
    assert later["spec"]["acquireTime"] == spec["acquireTime"]  # kept across renewals
    assert later["spec"]["leaseTransitions"] == 0
    assert parse_micro_time(later["spec"]["renewTime"]) > parse_micro_time(spec["renewTime"])
    assert elector.is_leader and master_status(lease_name) == 1.0


async def test_cancel_releases_the_lease(
        api: client.ApiClient, namespace: str, lease_name: str) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    run = asyncio.create_task(elector.run(leaders.lead("a")))
    await wait_leading(elector, leaders, "a")
    before = (await read_lease(api, lease_name))["spec"]

    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    # lead() had stopped before the lease was written back.
    assert "a" in leaders.cancelled and not leaders.active
    assert not elector.is_leader and master_status(lease_name) == 0.0

    spec = (await read_lease(api, lease_name))["spec"]
    assert spec["holderIdentity"] == ""  # written empty, as client-go does
    assert spec["leaseDurationSeconds"] == 1
    assert spec["acquireTime"] == spec["renewTime"]
    assert parse_micro_time(spec["renewTime"]) >= parse_micro_time(before["renewTime"])
    assert_recent(spec["renewTime"])
    assert spec["leaseTransitions"] == before["leaseTransitions"] == 0
    assert elector.observed_holder == ""


async def test_lead_returning_or_raising_releases_and_propagates(
        api: client.ApiClient, namespace: str, lease_name: str) -> None:
    elector = LeaderElector(api, config(lease_name, "a"))
    ran: list[bool] = []

    async def lead_and_return() -> None:
        ran.append(elector.is_leader)

    await asyncio.wait_for(elector.run(lead_and_return), timeout=5)
    assert ran == [True]
    assert (await read_lease(api, lease_name))["spec"]["holderIdentity"] == ""
    assert master_status(lease_name) == 0.0

    class Boom(Exception):
        pass

    async def lead_and_raise() -> None:
        raise Boom("reconciler crashed")

    with pytest.raises(Boom, match="reconciler crashed"):
        await asyncio.wait_for(elector.run(lead_and_raise), timeout=5)
    spec = (await read_lease(api, lease_name))["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseTransitions"] == 1  # re-acquired a released lease: a transition
    assert not elector.is_leader and master_status(lease_name) == 0.0


async def test_run_twice_at_once_is_refused(
        api: client.ApiClient, namespace: str, lease_name: str, tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    tasks.append(asyncio.create_task(elector.run(leaders.lead("a"))))
    await wait_leading(elector, leaders, "a")
    with pytest.raises(RuntimeError, match="already running"):
        await elector.run(leaders.lead("again"))


# --- two electors ---------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_two_electors_exactly_one_leads(
        api: client.ApiClient, new_client: Callable[[], client.ApiClient], namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    electors = {who: LeaderElector(new_client(), config(lease_name, who)) for who in ("a", "b")}
    for who, elector in electors.items():
        tasks.append(asyncio.create_task(elector.run(leaders.lead(who))))

    async def someone_leads() -> bool:
        # is_leader flips just before the leading callback's task first runs: wait for both
        return any(e.is_leader for e in electors.values()) and bool(leaders.active)

    await eventually(someone_leads, timeout=5, interval=0.01)
    leader = next(who for who, e in electors.items() if e.is_leader)
    standby = "b" if leader == "a" else "a"
    # Sample the invariant until the leader has renewed across 1.5 lease durations: had the standby taken a
    # renewed lease for an expired one, it would have led by then.
    seen: list[tuple[list[str], set[str]]] = []

    async def renewed_past_the_lease_duration() -> bool:
        seen.append(([who for who, e in electors.items() if e.is_leader], set(leaders.active)))
        spec = (await read_lease(api, lease_name))["spec"]
        held = parse_micro_time(spec["renewTime"]) - parse_micro_time(spec["acquireTime"])
        return held.total_seconds() >= 1.5 * FAST["lease_duration"]

    await eventually(renewed_past_the_lease_duration, timeout=10, interval=0.02)
    assert all(sample == ([leader], {leader}) for sample in seen), seen
    assert not leaders.overlap
    assert electors[standby].observed_holder == leader
    assert not any(t.done() for t in tasks)
    assert (await read_lease(api, lease_name))["spec"]["leaseTransitions"] == 0


@pytest.mark.slow
async def test_killed_leader_is_replaced_after_the_lease_expires(
        new_client: Callable[[], client.ApiClient], namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    api_b = new_client()
    a = LeaderElector(new_client(), config(lease_name, "a", release_on_cancel=False))
    b = LeaderElector(api_b, config(lease_name, "b"))
    run_a = asyncio.create_task(a.run(leaders.lead("a")))
    tasks.append(run_a)
    await wait_leading(a, leaders, "a")
    tasks.append(asyncio.create_task(b.run(leaders.lead("b"))))
    await wait_observes(b, "a")

    killed = time.monotonic()
    run_a.cancel()  # a killed process: no release
    with pytest.raises(asyncio.CancelledError):
        await run_a
    assert (await read_lease(api_b, lease_name))["spec"]["holderIdentity"] == "a"

    await wait_leading(b, leaders, "b", timeout=5)
    took = leaders.started["b"] - killed
    lease_duration, retry_period = FAST["lease_duration"], FAST["retry_period"]
    # Not before a's last renewal (at most one retry_period before the kill) has expired...
    assert took >= lease_duration - retry_period - 0.05, took
    # ...and at most a poll gap to see that renewal plus one to see the expiry after it.
    assert took <= lease_duration + 2 * MAX_POLL_GAP + SLACK, took
    spec = (await read_lease(api_b, lease_name))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 1
    assert not leaders.overlap


async def test_released_lease_is_taken_over_within_a_retry_period(
        new_client: Callable[[], client.ApiClient], namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    # A long lease (5 s) shows the standby did not wait for it to expire.
    timings = {"lease_duration": 5.0, "renew_deadline": 3.0, "retry_period": 0.2}
    leaders = Leaders()
    api_b = new_client()
    a = LeaderElector(new_client(), config(lease_name, "a", **timings))
    b = LeaderElector(api_b, config(lease_name, "b", **timings))
    run_a = asyncio.create_task(a.run(leaders.lead("a")))
    tasks.append(run_a)
    await wait_leading(a, leaders, "a")
    tasks.append(asyncio.create_task(b.run(leaders.lead("b"))))
    await wait_observes(b, "a")
    holder_changes = asyncio.create_task(b.leader_changed())
    tasks.append(holder_changes)

    stopped = time.monotonic()
    run_a.cancel()  # SIGTERM: graceful stop releases the lease
    with pytest.raises(asyncio.CancelledError):
        await run_a
    await wait_leading(b, leaders, "b", timeout=timings["lease_duration"])
    took = leaders.started["b"] - stopped
    assert took <= timings["retry_period"] * (1 + 1.2) + SLACK, took
    assert took < timings["lease_duration"] / 2
    assert leaders.ended["a"] <= leaders.started["b"] and not leaders.overlap
    assert await asyncio.wait_for(holder_changes, timeout=1) in ("", "b")
    spec = (await read_lease(api_b, lease_name))["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseDurationSeconds"] == 5
    assert spec["leaseTransitions"] == 1


async def test_partitioned_leader_stops_before_the_standby_starts(
        new_client: Callable[[], client.ApiClient], namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    api_a = new_client()
    a = LeaderElector(api_a, config(lease_name, "a"))
    b = LeaderElector(new_client(), config(lease_name, "b"))
    run_a = asyncio.create_task(a.run(leaders.lead("a")))
    tasks.append(run_a)
    await wait_leading(a, leaders, "a")
    tasks.append(asyncio.create_task(b.run(leaders.lead("b"))))
    await wait_observes(b, "a")

    api_a.configuration.host = "http://127.0.0.1:9"  # a can no longer reach the API server
    cut = time.monotonic()
    with pytest.raises(LeaderElectionLost, match=re.escape("not renewed within 0.6s")):
        await asyncio.wait_for(run_a, timeout=FAST["renew_deadline"] + FAST["retry_period"] + SLACK)
    assert "a" in leaders.cancelled
    assert leaders.ended["a"] - cut <= FAST["renew_deadline"] + SLACK
    await wait_leading(b, leaders, "b", timeout=5)
    # The safety property: a's work ended before b's began.
    assert leaders.ended["a"] < leaders.started["b"]
    assert not leaders.overlap


# --- losing the lease -----------------------------------------------------------------------------------


async def test_lost_when_the_api_server_goes_away(
        server: ApiServer, api: client.ApiClient, namespace: str, lease_name: str) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    run = asyncio.create_task(elector.run(leaders.lead("a")))
    await wait_leading(elector, leaders, "a")
    assert master_status(lease_name) == 1.0

    await server.stop()
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(run, timeout=FAST["renew_deadline"] + FAST["retry_period"] + SLACK)
    assert "a" in leaders.cancelled and not leaders.active
    assert not elector.is_leader
    assert master_status(lease_name) == 0.0


async def test_lost_at_once_when_another_writer_takes_the_lease(
        api: client.ApiClient, namespace: str, lease_name: str) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    run = asyncio.create_task(elector.run(leaders.lead("a")))
    await wait_leading(elector, leaders, "a")

    lease: Any = await read_lease(api, lease_name)
    lease["spec"]["holderIdentity"] = "thief"
    await client.CoordinationV1Api(api).replace_namespaced_lease(lease_name, NS, lease, _request_timeout=5)
    stolen = time.monotonic()
    with pytest.raises(LeaderElectionLost, match="now held by 'thief'"):
        await asyncio.wait_for(run, timeout=FAST["renew_deadline"] + SLACK)
    # Seen at the next renewal, well before the renew deadline.
    assert time.monotonic() - stolen < FAST["retry_period"] + SLACK
    assert "a" in leaders.cancelled
    assert master_status(lease_name) == 0.0 and not elector.is_leader
    # Releasing on the way out must not clobber the new holder's lease.
    assert (await read_lease(api, lease_name))["spec"]["holderIdentity"] == "thief"


async def test_conflict_on_the_fast_path_falls_back_to_the_slow_path(
        api: client.ApiClient, http: aiohttp.ClientSession, namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    leaders = Leaders()
    elector = LeaderElector(api, config(lease_name, "a"))
    tasks.append(asyncio.create_task(elector.run(leaders.lead("a"))))
    await wait_leading(elector, leaders, "a")
    before = (await read_lease(api, lease_name))["spec"]
    slowpath_before = REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": lease_name}) or 0.0

    # A metadata-only write moves the resourceVersion: the cached Lease's PUT now gets a 409.
    async with http.patch(f"{LEASES}/{lease_name}", data=json.dumps({"metadata": {"labels": {"touched": "yes"}}}),
                          headers={"Content-Type": "application/merge-patch+json"}) as response:
        assert response.status == 200

    async def slow_path_taken() -> bool:
        value = REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": lease_name}) or 0.0
        return value > slowpath_before

    await eventually(slow_path_taken, timeout=2)
    assert elector.is_leader and master_status(lease_name) == 1.0
    spec = (await read_lease(api, lease_name))["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["acquireTime"] == before["acquireTime"]
    assert spec["leaseTransitions"] == before["leaseTransitions"] == 0


# --- failed rounds are retried, never fatal -----------------------------------------------------------


async def test_errors_while_acquiring_are_retried(
        server: ApiServer, api: client.ApiClient, namespace: str, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    seen: list[str] = []

    async def unavailable(request: web.Request) -> web.Response:
        seen.append(request.method)
        return web.json_response({"kind": "Status", "code": 503, "reason": "ServiceUnavailable"}, status=503)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", unavailable)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        cfg = client.Configuration(host=f"http://127.0.0.1:{port}")
        async with client.ApiClient(cfg) as flaky:
            leaders = Leaders()
            elector = LeaderElector(flaky, config(lease_name, "a"))
            run = asyncio.create_task(elector.run(leaders.lead("a")))
            tasks.append(run)

            async def retried_on_5xx() -> bool:
                return len(seen) >= 3

            await eventually(retried_on_5xx, timeout=5)
            assert not run.done() and not elector.is_leader
            flaky.configuration.host = server.url
            await wait_leading(elector, leaders, "a")
            assert (await read_lease(api, lease_name))["spec"]["holderIdentity"] == "a"
    finally:
        await runner.cleanup()


# --- a missing namespace, and 404s that only look like one -------------------------------------------------


def namespace_warnings(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["log_level"] == "warning" and "namespace does not exist" in e["event"]]


@pytest.mark.slow
async def test_a_missing_namespace_is_warned_once_reported_and_left_once_created(
        api: client.ApiClient, new_client: Callable[[], client.ApiClient], proxy: Proxy, lease_name: str,
        tasks: list[asyncio.Task[Any]]) -> None:
    skew = [0.0]  # moves the elector's clock forward, to reach the reminder without waiting 5 minutes

    def clock() -> float:
        return time.monotonic() + skew[0]

    leaders = Leaders()
    via_proxy = new_client()
    via_proxy.configuration.host = proxy.url
    elector = LeaderElector(via_proxy, config(lease_name, "a"), clock=clock)
    creates = f"/namespaces/{NS}/leases"
    with capture_logs() as logs:
        tasks.append(asyncio.create_task(elector.run(leaders.lead("a"))))
        await eventually(lambda: elector.problem is not None, timeout=5)
        assert elector.problem is not None
        assert f'namespace "{NS}" not found' in elector.problem
        assert f"{NS}/{lease_name}" in elector.problem

        # Many rounds, one warning: it names the namespace and says what to do.
        await eventually(lambda: proxy.count("POST", creates) >= 5, timeout=10)
        [warning] = namespace_warnings(logs)
        assert warning["namespace"] == NS and warning["lease"] == f"{NS}/{lease_name}"
        assert "kubectl create namespace karmada-system" in warning["fix"]
        assert not [e for e in logs if e["event"] == "creating the lease failed"]
        assert not elector.is_leader and master_status(lease_name) == 0.0

        # Still missing after the reminder period: said again, once.
        skew[0] += MISSING_NAMESPACE_REMINDER + 1
        await eventually(lambda: len(namespace_warnings(logs)) == 2, timeout=5)
        posts = proxy.count("POST", creates)
        await eventually(lambda: proxy.count("POST", creates) >= posts + 3, timeout=10)
        assert len(namespace_warnings(logs)) == 2

        body: Any = {"metadata": {"name": NS}}
        await client.CoreV1Api(api).create_namespace(body, _request_timeout=5)
        await wait_leading(elector, leaders, "a")
        assert elector.problem is None
        assert [e for e in logs if e["event"] == "leader election namespace exists now"]
    assert (await read_lease(api, lease_name))["spec"]["holderIdentity"] == "a"


PAGE_NOT_FOUND = web.Response(status=404, text="404 page not found\n", content_type="text/plain")


def status_404(details: dict[str, Any] | None) -> web.Response:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "the server could not find the requested resource", "reason": "NotFound",
                            "code": 404}
    if details is not None:
        body["details"] = details
    return web.json_response(body, status=404)


@pytest.mark.slow
@pytest.mark.usefixtures("namespace")
@pytest.mark.parametrize("case", [
    (("POST",), lambda: PAGE_NOT_FOUND),
    (("GET", "POST"), lambda: PAGE_NOT_FOUND),
    (("POST",), lambda: status_404(None)),
    (("POST",), lambda: status_404({})),
    (("POST",), lambda: status_404({"name": "other-namespace", "kind": "namespaces"})),
], ids=["create-page-not-found", "lease-api-not-served", "status-without-details", "status-empty-details",
        "another-namespace"])
async def test_a_404_that_does_not_name_the_namespace_is_never_reported_as_missing(
        new_client: Callable[[], client.ApiClient], proxy: Proxy, lease_name: str, tasks: list[asyncio.Task[Any]],
        case: tuple[tuple[str, ...], Callable[[], web.Response]]) -> None:
    """An API server restarting answers 404s that name nothing: transient, retried, never "missing"."""
    methods, answer = case
    leaders = Leaders()
    via_proxy = new_client()
    via_proxy.configuration.host = proxy.url
    elector = LeaderElector(via_proxy, config(lease_name, "a"))
    problems: list[str | None] = []
    stood_in = [0]

    def not_served(request: web.Request) -> web.Response | None:
        if "/leases" not in request.path:
            return None
        problems.append(elector.problem)  # what the elector made of every answer so far
        if request.method not in methods or stood_in[0] >= 4 or "watch" in request.query:
            return None
        stood_in[0] += 1
        return answer()

    proxy.answer = not_served
    with capture_logs() as logs:
        tasks.append(asyncio.create_task(elector.run(leaders.lead("a"))))
        await wait_leading(elector, leaders, "a", timeout=10)  # served again: the lease is taken
    assert stood_in[0] == 4
    assert len(problems) > 4 and set(problems) == {None} and elector.problem is None
    assert not namespace_warnings(logs)
    assert (await read_lease(new_client(), lease_name))["spec"]["holderIdentity"] == "a"
