"""``karmada-rebalance create --max-concurrent`` on the dev plane with the real controller-manager: the
simulated scheduler, members and status make each workload healthy for real after its move, and the
second wave's rebalancer is created only once the first wave's workload is healthy again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller_manager.apierrors import ApiError
from devplane.plane import DevPlane
from karmada_api.health import workload_not_healthy
from karmada_api.resources import PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS
from kube_api.timeutil import parse_time
from tests.conftest import eventually
from tests.e2e.test_rebalancer_scheduling import deployment, placement
from tests.rebalancectl.test_rebalancectl import cli

NAMES = ("api", "web")  # the selection's order: api is wave 1, web wave 2


async def test_two_waves_each_after_the_previous_is_healthy(plane: DevPlane,
                                                           controller_manager: asyncio.subprocess.Process,
                                                           tmp_path: Path) -> None:
    host = plane.client
    assert host is not None
    for name in NAMES:
        await host.create(DEPLOYMENTS, deployment(name, "default"), "default")
    await host.create(PROPAGATION_POLICIES, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": n} for n in NAMES],
                 "placement": placement("dynamic", "waves-test")}}, "default")

    async def healthy(name: str) -> bool:
        try:
            binding = await host.get(RESOURCE_BINDINGS, f"{name}-deployment", "default")
        except ApiError as exc:
            if exc.is_not_found:
                return False
            raise
        return workload_not_healthy(binding, await host.get(DEPLOYMENTS, name, "default")) is None

    for name in NAMES:
        await eventually(lambda name=name: healthy(name), timeout=60, what=f"{name} propagated and ready")

    env = {"KUBECONFIG": str(tmp_path / "kube" / "karmada.config")}
    code, out, err = await cli(env, "create", "waves", "-n", "default", "--kind", "deploy", "--max-concurrent", "1",
                               "--progress-deadline", "90s", "--wait")
    assert code == 0, (out, err)
    lines = out.splitlines()
    assert lines[0:2] == ["wave 1/2: 1 workloads", "workloadrebalancer.apps.karmada.io/waves-1 created (1 workloads)"]
    assert lines[2].startswith("wave 1/2: healthy after ")
    assert lines[3:5] == ["wave 2/2: 1 workloads", "workloadrebalancer.apps.karmada.io/waves-2 created (1 workloads)"]
    assert lines[5].startswith("wave 2/2: healthy after ")
    assert [line.split() for line in lines[6:]] == [["WORKLOAD", "RESULT", "REASON"],
                                                     ["Deployment.apps/default/api", "Successful"],
                                                     ["Deployment.apps/default/web", "Successful"]]
    first = await host.get(WORKLOAD_REBALANCERS, "waves-1")
    second = await host.get(WORKLOAD_REBALANCERS, "waves-2")
    api = await host.get(RESOURCE_BINDINGS, "api-deployment", "default")
    web = await host.get(RESOURCE_BINDINGS, "web-deployment", "default")
    second_created = parse_time(second["metadata"]["creationTimestamp"])
    # wave 2 exists only after wave 1 finished and its workload was rescheduled; web moved only in wave 2
    assert parse_time(first["status"]["finishTime"]) <= second_created
    # api's reschedule (not its first schedule, which was before any wave) happened before wave 2 was created
    assert parse_time(api["spec"]["rescheduleTriggeredAt"]) <= parse_time(api["status"]["lastScheduledTime"]) \
        <= second_created
    assert parse_time(web["spec"]["rescheduleTriggeredAt"]) >= second_created
    assert all([await healthy(name) for name in NAMES])
