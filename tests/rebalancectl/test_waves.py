"""``karmada-rebalance create --max-concurrent`` against a dev API server with this project's real
workload-rebalancer controller running in the test.

Karmada's scheduler and status aggregation are stood in for by :class:`Karmada`: for each binding the
rebalancer controller triggered, it writes what Karmada would (``lastScheduledTime`` at the trigger,
``schedulerObservedGeneration``, the member's applied status with its ready replicas, the template's
aggregated ``readyReplicas``); a workload becomes ready only when the test says so. The command reads
health through :func:`karmada_api.health.workload_not_healthy`, which the test watches to know what it
saw and in which order.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from controller_manager import objects
from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.objects import Obj
from controller_manager.ratelimiter import RateLimiterOptions
from controllers import workloadrebalancer
from controllers.preserve import PreserveOptions
from devplane.apiserver.server import ApiServer
from karmada_api import health
from karmada_api.resources import CLUSTERS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS, NAMESPACES
from rebalancectl import retry, rollout
from rebalancectl.retry import CREATE_ID_LABEL
from rebalancectl.waves import WAVE_ANNOTATION
from tests.conftest import cancel_and_wait, eventually, running
from tests.rebalancectl.test_rebalancectl import binding, cli, deployment, kubeconfig_env

NAMES = ("a", "b", "c")
PLACEMENT = {"clusterAffinity": {"clusterNames": ["member1"]}}


class Karmada:
    """Schedules each triggered binding at once onto member1 and reports ``ready`` of its replicas ready."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.ready: set[str] = set()

    async def run(self) -> None:
        while True:
            for rb in (await self.kube.list(RESOURCE_BINDINGS, "shop"))["items"]:
                triggered = rb["spec"].get("rescheduleTriggeredAt")
                if triggered:
                    await self._report(rb, triggered)
            await asyncio.sleep(0.05)

    async def _report(self, rb: Obj, triggered: str) -> None:
        name = rb["spec"]["resource"]["name"]
        ready = 1 if name in self.ready else 0
        status = {"schedulerObservedGeneration": objects.generation(rb), "lastScheduledTime": triggered,
                  "aggregatedStatus": [{"clusterName": "member1", "applied": True,
                                        "status": {"readyReplicas": ready, "replicas": 1}}]}
        if rb.get("status") != status:
            await self.kube.patch_status(RESOURCE_BINDINGS, objects.name(rb), {"status": status}, namespace="shop")
        template = await self.kube.get(DEPLOYMENTS, name, "shop")
        wanted = {"readyReplicas": ready, "replicas": 1, "observedGeneration": objects.generation(template)}
        if template.get("status") != wanted:
            await self.kube.patch_status(DEPLOYMENTS, name, {"status": wanted}, namespace="shop")


@pytest.fixture
async def env(server: ApiServer, kube: KubeClient, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """Deployments a, b, c (1 replica) in namespace shop, bound to member1; the KUBECONFIG for the command."""
    await kube.create(NAMESPACES, {"metadata": {"name": "shop"}})
    await kube.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                 "metadata": {"name": "member1"}, "spec": {"syncMode": "Push"}})
    for name in NAMES:
        template = deployment(name, "shop", {})
        await kube.create(DEPLOYMENTS, template)
        rb = binding(template, {"member1": 1}, PLACEMENT, {})
        rb["spec"]["replicas"] = 1  # as Karmada's detector writes it from the template
        await kube.create(RESOURCE_BINDINGS, rb)
    yield kubeconfig_env(tmp_path, server.url)


@pytest.fixture
async def karmada(kube: KubeClient) -> AsyncIterator[Karmada]:
    """The real workload-rebalancer controller, and the stand-in for Karmada's scheduler and status."""
    manager = Manager(kube, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    workloadrebalancer.setup(manager, rate_limiter_options=RateLimiterOptions(base_delay=0.05, max_delay=1.0),
                             preserve_options=PreserveOptions(retry_timeout=timedelta(seconds=1)))
    stand_in = Karmada(kube)
    async with running(manager):
        task = asyncio.create_task(stand_in.run())
        try:
            yield stand_in
        finally:
            await cancel_and_wait(task)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Each health verdict the command reached, in order: (workload name, reason or None); and fast rounds."""
    verdicts: list[tuple[str, str | None]] = []

    def recorded(rb: Obj, template: Obj | None) -> str | None:
        reason = health.workload_not_healthy(rb, template)
        verdicts.append((rb["spec"]["resource"]["name"], reason))
        return reason

    monkeypatch.setattr(rollout, "workload_not_healthy", recorded)
    monkeypatch.setattr(rollout, "POLL_INTERVAL", 0.05)
    return verdicts


def first(verdicts: list[tuple[str, str | None]], accept: Callable[[str, str | None], bool]) -> int:
    return next(i for i, (name, reason) in enumerate(verdicts) if accept(name, reason))


async def test_the_second_wave_starts_only_once_the_first_is_healthy(
        env: dict[str, str], karmada: Karmada, kube: KubeClient, seen: list[tuple[str, str | None]]) -> None:
    karmada.ready.add("c")  # c gets ready as soon as it moves; a and b only when the test says so
    command = asyncio.create_task(cli(env, "create", "back", "--max-concurrent", "2", "--wait"))
    try:
        await eventually(lambda: ("a", "0/1 replicas ready on member1") in seen, what="wave 1 seen not healthy")
        await eventually(lambda: seen.count(("a", "0/1 replicas ready on member1")) >= 3,
                         what="wave 1 looked at again")
        assert await kube.get_or_none(WORKLOAD_REBALANCERS, "back-2") is None  # held back while a is not ready
        karmada.ready.update(("a", "b"))
        code, out, err = await asyncio.wait_for(command, 20)
    finally:
        await cancel_and_wait(command)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["wave 1/2: 2 workloads", "workloadrebalancer.apps.karmada.io/back-1 created (2 workloads)"]
    assert lines[2].startswith("wave 1/2: healthy after ")
    assert lines[3:5] == ["wave 2/2: 1 workloads", "workloadrebalancer.apps.karmada.io/back-2 created (1 workloads)"]
    assert lines[5].startswith("wave 2/2: healthy after ")
    assert [line.split() for line in lines[6:]] == [["WORKLOAD", "RESULT", "REASON"],
                                                     ["Deployment.apps/shop/a", "Successful"],
                                                     ["Deployment.apps/shop/b", "Successful"],
                                                     ["Deployment.apps/shop/c", "Successful"]]
    # c was looked at only after a and b had both been seen healthy
    c_first = first(seen, lambda name, _r: name == "c")
    assert c_first > max(first(seen, lambda name, r, w=w: name == w and r is None) for w in ("a", "b"))
    wave2 = await kube.get(WORKLOAD_REBALANCERS, "back-2")
    assert wave2["metadata"]["annotations"] == {WAVE_ANNOTATION: "2/2"}
    code, out, _err = await cli(env, "status", "back-2")
    assert (code, out.splitlines()[:2]) == (0, ["Wave: 2/2", "WORKLOAD                 RESULT       REASON"])


async def test_a_wave_past_its_deadline_exits_3_naming_the_workload(
        env: dict[str, str], karmada: Karmada, kube: KubeClient, seen: list[tuple[str, str | None]]) -> None:
    code, out, err = await cli(env, "create", "slow", "--max-concurrent", "1", "--progress-deadline", "1s")
    assert code == 3
    assert out.splitlines() == [
        "wave 1/3: 1 workloads", "workloadrebalancer.apps.karmada.io/slow-1 created (1 workloads)",
        "wave 1/3: held back by 1 of 1 workloads",
        "WORKLOAD                 STATE        REASON",
        "Deployment.apps/shop/a   NotHealthy   0/1 replicas ready on member1"]
    assert err == ("karmada-rebalance create: error: wave 1/3 not healthy within --progress-deadline 1s: "
                   "Deployment.apps/shop/a (0/1 replicas ready on member1); waves 2-3 not created\n")
    assert await kube.get_or_none(WORKLOAD_REBALANCERS, "slow-1") is not None  # left in place
    assert await kube.get_or_none(WORKLOAD_REBALANCERS, "slow-2") is None


async def test_a_failed_workload_stops_the_waves_at_once(env: dict[str, str], karmada: Karmada,
                                                         seen: list[tuple[str, str | None]]) -> None:
    # preserve mode is off in this controller: every workload of such a rebalancer fails closed (final once its
    # retry timeout, 1 s here, has passed)
    code, out, err = await cli(env, "create", "keep", "--max-concurrent", "2", "--preserve-available-replicas",
                               "-o", "name")
    assert code == 3 and seen == []
    assert out == "workloadrebalancer.apps.karmada.io/keep-1\n"  # -o: stdout holds the rebalancers only
    assert err.startswith("wave 1/2: 2 workloads\nwave 1/2: held back by 2 of 2 workloads\nWORKLOAD ")
    last = err.splitlines()[-1]
    assert last.startswith("karmada-rebalance create: error: wave 1/2 has a failed workload: "
                           "Deployment.apps/shop/a (PreserveModeDisabled: ") and last.endswith("; wave 2 not created")


async def test_without_wait_the_last_wave_is_created_and_not_waited_for(
        env: dict[str, str], karmada: Karmada, seen: list[tuple[str, str | None]]) -> None:
    karmada.ready.update(NAMES)
    code, out, err = await cli(env, "create", "--max-concurrent", "2", "-o", "json")
    assert code == 0, err
    created = json.loads(out)
    assert [item["metadata"]["annotations"][WAVE_ANNOTATION] for item in created["items"]] == ["1/2", "2/2"]
    assert err.splitlines()[-1] == "wave 2/2: 1 workloads"
    assert {name for name, _reason in seen} == {"a", "b"}


async def test_bad_wave_flags_exit_2_with_one_line(env: dict[str, str]) -> None:
    cases = [
        (("--max-concurrent", "0"), "argument --max-concurrent: must be at least 1"),
        (("--max-concurrent", "-1"), "argument --max-concurrent: must not be negative: -1"),
        (("--max-concurrent", "2", "--progress-deadline", "0s"),
         'argument --progress-deadline: invalid duration "0s": must be greater than zero'),
        (("--max-concurrent", "2", "--progress-deadline=-5m"),
         'argument --progress-deadline: invalid duration "-5m": must not be negative'),
        (("--progress-deadline", "5m"), "--progress-deadline needs --max-concurrent"),
    ]
    for argv, message in cases:
        code, out, err = await cli(env, "create", *argv)
        assert (code, out, err) == (2, "", f"karmada-rebalance create: error: {message}\n"), argv


async def test_dry_run_prints_the_waves(env: dict[str, str], kube: KubeClient) -> None:
    code, out, err = await cli(env, "create", "plan", "--max-concurrent", "2", "--dry-run")
    assert code == 0, err
    first_wave, second_wave = out.split("---\n")
    assert first_wave.startswith("# wave 1/2: 2 workloads\n") and second_wave.startswith("# wave 2/2: 1 workloads\n")
    assert [w["name"] for w in yaml.safe_load(first_wave)["spec"]["workloads"]] == ["a", "b"]
    assert yaml.safe_load(second_wave)["metadata"] == {"name": "plan-2", "annotations": {WAVE_ANNOTATION: "2/2"}}
    assert (await kube.list(WORKLOAD_REBALANCERS))["items"] == []


async def test_timeout_bounds_the_whole_command_and_says_where_it_stopped(env: dict[str, str]) -> None:
    code, out, err = await cli(env, "create", "t", "--max-concurrent", "1", "--timeout", "1s")  # no controller
    assert code == 1 and out.splitlines()[:2] == ["wave 1/3: 1 workloads",
                                                 "workloadrebalancer.apps.karmada.io/t-1 created (1 workloads)"]
    assert err == ("karmada-rebalance create: error: timed out after 1s while waiting for wave 1/3; "
                   "rebalancers created: t-1; waves 2-3 not created\n")


def _as_in_a_terminal() -> None:
    """The child as a shell's foreground job gets it: Ctrl-C not ignored. A test run started in the background
    (``cmd &`` in a script, nohup) ignores SIGINT, and the command rightly keeps ignoring it, as Unix programs do."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
async def test_ctrl_c_stops_cleanly_and_says_what_was_created(env: dict[str, str]) -> None:
    """The command as a process, interrupted while it waits for wave 1 (no controller: it never gets results)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rebalancectl", "create", "int", "--max-concurrent", "1",
        env={**os.environ, **env, "PYTHONFAULTHANDLER": "1"}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, preexec_fn=_as_in_a_terminal)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        lines = [(await asyncio.wait_for(proc.stdout.readline(), 30)).decode() for _ in range(2)]
        assert lines == ["wave 1/3: 1 workloads\n", "workloadrebalancer.apps.karmada.io/int-1 created (1 workloads)\n"]
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:  # say where it was stuck: with the fault handler, SIGABRT prints every stack
            proc.send_signal(signal.SIGABRT)
            stuck = await asyncio.wait_for(proc.stderr.read(), 10)
            await proc.wait()
            pytest.fail(f"still running 30 s after SIGINT:\n{stuck.decode(errors='replace')}")
    assert (proc.returncode, out) == (130, b"")
    assert err.decode() == ("karmada-rebalance create: interrupted while waiting for wave 1/3; "
                            "rebalancers created: int-1; waves 2-3 not created\n")


# ------------------------------------------------------------------ a busy or restarting API server

WR_PATH = "/workloadrebalancers"


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.02)


async def names_of_rebalancers(kube: KubeClient) -> list[str]:
    return sorted(objects.name(item) for item in (await kube.list(WORKLOAD_REBALANCERS))["items"])


@pytest.mark.usefixtures("seen", "fast_retries")
async def test_throttled_and_failing_creates_are_retried_and_the_waves_go_on(
        server: ApiServer, env: dict[str, str], karmada: Karmada, kube: KubeClient) -> None:
    """429 without Retry-After, then 500, 502 and 503 on the creates, and on the wave's reads: each is retried."""
    karmada.ready.update(NAMES)
    faults = [server.inject_fault("POST", WR_PATH, code=429, reason="TooManyRequests", times=2),
              server.inject_fault("POST", WR_PATH, code=500, reason="InternalError"),
              server.inject_fault("POST", WR_PATH, code=502, reason="BadGateway"),
              server.inject_fault("POST", WR_PATH, code=503, reason="ServiceUnavailable"),
              server.inject_fault("GET", f"{WR_PATH}/back-1", code=503, reason="ServiceUnavailable", times=2),
              server.inject_fault("GET", "/resourcebindings/a-deployment", code=500, times=2)]
    code, out, err = await cli(env, "create", "back", "--max-concurrent", "2", "--wait")
    assert code == 0, err
    assert [fault.times for fault in faults] == [0] * len(faults)  # every fault was met
    assert out.splitlines()[:2] == ["wave 1/2: 2 workloads",
                                    "workloadrebalancer.apps.karmada.io/back-1 created (2 workloads)"]
    assert [line.split() for line in out.splitlines()[-3:]] == [["Deployment.apps/shop/a", "Successful"],
                                                                 ["Deployment.apps/shop/b", "Successful"],
                                                                 ["Deployment.apps/shop/c", "Successful"]]
    assert await names_of_rebalancers(kube) == ["back-1", "back-2"]


@pytest.mark.usefixtures("seen", "fast_retries")
@pytest.mark.parametrize("name", ["back", ""])
async def test_a_create_stored_but_whose_answer_was_lost_is_not_made_twice(
        server: ApiServer, env: dict[str, str], karmada: Karmada, kube: KubeClient, name: str) -> None:
    """The server stores the first create and answers 504 (a timeout): the retry meets 409 AlreadyExists, and the
    rebalancer carrying this create's id is that create's, with or without a NAME (generateName's suffix)."""
    karmada.ready.update(NAMES)
    lost = server.inject_fault("POST", WR_PATH, code=504, reason="Timeout", after_dispatch=True)
    code, out, err = await cli(env, "create", *([name] if name else []), "--max-concurrent", "2", "-o", "name")
    assert code == 0, err
    assert lost.times == 0
    stored = (await kube.list(WORKLOAD_REBALANCERS))["items"]
    assert len(stored) == 2  # one per wave, none twice
    assert sorted(out.splitlines()) == sorted(f"workloadrebalancer.apps.karmada.io/{objects.name(r)}" for r in stored)
    assert len({r["metadata"]["labels"][CREATE_ID_LABEL] for r in stored}) == 2
    if name:
        assert await names_of_rebalancers(kube) == ["back-1", "back-2"]


@pytest.mark.usefixtures("fast_retries")
async def test_a_permanent_answer_to_a_create_fails_at_once_with_the_servers_message(
        server: ApiServer, env: dict[str, str], kube: KubeClient) -> None:
    for code_, reason in ((403, "Forbidden"), (422, "Invalid"), (400, "BadRequest")):
        fault = server.inject_fault("POST", WR_PATH, code=code_, reason=reason, times=5)
        code, out, err = await cli(env, "create", "no", "--max-concurrent", "2")
        assert (code, err) == (1, f"Error from server ({reason}): injected failure\n"), code_
        assert out == "wave 1/2: 2 workloads\n"
        assert fault.times == 4  # asked once, not retried
        fault.times = 0
    assert await names_of_rebalancers(kube) == []


@pytest.mark.usefixtures("seen", "fast_retries")
async def test_retrying_a_create_is_bounded_by_the_progress_deadline(
        server: ApiServer, env: dict[str, str], karmada: Karmada, kube: KubeClient) -> None:
    karmada.ready.update(NAMES)
    down = server.inject_fault("POST", f"{WR_PATH}", code=503, reason="ServiceUnavailable", times=1_000_000)
    code, out, err = await cli(env, "create", "back", "--max-concurrent", "2", "--progress-deadline", "1s")
    down.times = 0
    assert code == 1 and out == "wave 1/2: 2 workloads\n"
    assert err == ("karmada-rebalance create: error: gave up creating workloadrebalancer back-1 within "
                   "--progress-deadline 1s: the API server answered 503 ServiceUnavailable: injected failure while "
                   "creating wave 1/2; rebalancers created: none; wave 2 not created\n")
    assert await names_of_rebalancers(kube) == []


@pytest.mark.usefixtures("seen", "karmada")
async def test_a_wave_whose_reads_kept_failing_says_so_at_its_deadline(server: ApiServer,
                                                                       env: dict[str, str]) -> None:
    server.inject_fault("GET", f"{WR_PATH}/slow-1", code=503, reason="ServiceUnavailable", times=1_000_000)
    code, _out, err = await cli(env, "create", "slow", "--max-concurrent", "1", "--progress-deadline", "1s")
    assert code == 3
    assert err == ("karmada-rebalance create: error: wave 1/3 not healthy within --progress-deadline 1s (the last "
                   "reads failed: the API server answered 503 ServiceUnavailable: injected failure): "
                   "Deployment.apps/shop/a (no result from the rebalancer controller yet); waves 2-3 not created\n")
