"""``karmada-devplane demo bulk``: ``karmada-rebalance create --cluster member1 --wait`` brings an
application back to a recovered cluster.

Two Deployments and a ConfigMap-only application are propagated to member1 and member2. A
NoExecute taint on member1 evicts them; removing it moves no replica back by itself (Karmada keeps
scheduling inert on purpose). One ``karmada-rebalance`` command then creates the WorkloadRebalancer
for everything that should be on member1, waits for it and prints each workload's result; the
Deployments run on member1 again and the ConfigMap is there. ``karmada-rebalance`` runs as a real
process against the plane, like the product's controller-manager.
"""

from __future__ import annotations

import asyncio
import sys

from karmada_api.placement import target_contains
from karmada_api.shapes import binding_spec

from .demo_session import STEP_TIMEOUT, Session, StepFailed, eventually, hold

DEPLOYMENTS = ("web", "api")
CONFIGMAP = "settings"
TAINT = "bulk-demo:NoExecute"

# No toleration of the taint: the taint manager evicts at once, and the scheduler cannot put a duplicated
# binding (the ConfigMap) back on the tainted cluster while the taint is there.
PLACEMENT = """\
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
"""


def _policy(name: str, scheduling: str, selectors: list[tuple[str, str, str]]) -> str:
    """A PropagationPolicy on member1 and member2 for ``(apiVersion, kind, name)`` templates."""
    listed = "".join(f"    - {{apiVersion: {a}, kind: {k}, name: {n}}}\n" for a, k, n in selectors)
    return (f"apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: {name}}}\n"
            f"spec:\n{PLACEMENT}{scheduling}  resourceSelectors:\n{listed}")


def deployment_manifest(name: str, replicas: int, labels: str, resources: str) -> str:
    """A Deployment of ``replicas`` nginx Pods labelled ``app: name``; ``labels`` and ``resources`` are YAML
    flow-mapping bodies (``a: b``) for the template's own labels and the container's resources."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, labels: {{{labels}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - {{name: {name}, image: nginx, resources: {{{resources}}}}}
"""


def manifests() -> str:
    """The application: two Deployments (divided by available replicas) and a ConfigMap (duplicated)."""
    docs = []
    for name in DEPLOYMENTS:
        docs.append(deployment_manifest(name, 3, "app.kubernetes.io/part-of: shop", "limits: {cpu: 10m, memory: 10Mi}"))
    docs.append(f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: {CONFIGMAP}, labels: {{app.kubernetes.io/part-of: shop}}}}
data: {{greeting: hello}}
""")
    divided = """\
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference: {dynamicWeight: AvailableReplicas}
"""
    docs.append(_policy("shop-deployments", divided, [("apps/v1", "Deployment", n) for n in DEPLOYMENTS]))
    docs.append(_policy("shop-config", "", [("v1", "ConfigMap", CONFIGMAP)]))
    return "---\n".join(docs)


async def _on_member1(s: Session, binding_name: str) -> bool:
    return target_contains(binding_spec(await s.binding(binding_name)), "member1")


async def _deployments_on_member1(s: Session) -> list[str]:
    """The Deployments whose binding places replicas on member1 and that run them all there, ready."""
    running = []
    for name in DEPLOYMENTS:
        if not await _on_member1(s, f"{name}-deployment"):
            continue  # one binding GET decides most polls: the member reads below cost more
        ready = (await s.ready_replicas(name)).get("member1")
        if ready and ready[0] == ready[1] > 0:
            running.append(name)
    return running


async def _bindings_off_member1(s: Session, names: list[str]) -> bool:
    return not any([await _on_member1(s, name) for name in names])


async def _none_on_member1(s: Session) -> bool:
    return await _bindings_off_member1(s, [*(f"{n}-deployment" for n in DEPLOYMENTS), f"{CONFIGMAP}-configmap"])


async def _all_back(s: Session) -> bool:
    return len(await _deployments_on_member1(s)) == len(DEPLOYMENTS)


async def _no_deployment_on_member1(s: Session) -> bool:
    return await _bindings_off_member1(s, [f"{n}-deployment" for n in DEPLOYMENTS])


async def _deployments_gone_from_member1(s: Session) -> bool:
    """No Deployment of the application left in member1: a graceful eviction keeps the member's copy until the
    replicas run elsewhere, after the binding has already left member1."""
    return all(["member1" not in await s.ready_replicas(name) for name in DEPLOYMENTS])


async def _configmap_gone(s: Session) -> bool:
    return not await _configmap_in_member1(s)


async def _configmap_in_member1(s: Session) -> bool:
    code, _text = await s.kubectl_quiet("--context", "member1", "get", "configmap", CONFIGMAP)
    return code == 0


async def karmada_rebalance(s: Session, *args: str) -> str:
    """Run the real ``karmada-rebalance`` (``python -m rebalancectl``) and print it like a shell would."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rebalancectl", *args, cwd=s.workdir, env=s.env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await asyncio.wait_for(proc.communicate(), timeout=STEP_TIMEOUT + 30)
    text = output.decode()
    s.say.command(f"karmada-rebalance {' '.join(args)}", text)
    if proc.returncode != 0:
        raise StepFailed(f"karmada-rebalance {' '.join(args)} exited {proc.returncode}")
    return text


async def play_bulk(s: Session) -> None:
    """Taint → the application leaves member1 → untaint → nothing moves → one command → it is back."""
    s.say.title("Bulk rebalancing, step 1: an application of two Deployments and a ConfigMap on member1 and member2")
    s.write("shop.yaml", manifests())
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "shop.yaml")
    await eventually("step 1: both Deployments run replicas in member1",
                     lambda: _all_back(s))
    await eventually("step 1: the ConfigMap is in member1", lambda: _configmap_in_member1(s))
    for name in DEPLOYMENTS:
        await s.karmadactl_get_deploy(name)

    s.say.title("Step 2: a NoExecute taint on member1 evicts the application")
    await s.karmadactl_taint("member1", TAINT)
    await eventually("step 2: no binding keeps member1", lambda: _none_on_member1(s))
    await eventually("step 2: the ConfigMap is removed from member1", lambda: _configmap_gone(s))
    await eventually("step 2: the Deployments are removed from member1", lambda: _deployments_gone_from_member1(s))
    for name in DEPLOYMENTS:
        await s.karmadactl_get_deploy(name)

    s.say.title("Step 3: remove the taint; the Deployments stay where they are")
    await s.karmadactl_taint("member1", f"{TAINT}-")
    s.say.note("watching for 5 seconds: Karmada does not move replicas back by itself")
    await hold("step 3: no Deployment goes back to member1 by itself",
                lambda: _no_deployment_on_member1(s), seconds=5.0)
    if await _on_member1(s, f"{CONFIGMAP}-configmap"):
        s.say.note("the ConfigMap is already scheduled to member1 again: Karmada reschedules a non-workload "
                   "(duplicated) binding when a cluster changes; the rebalancer below includes it all the same")
    else:
        s.say.note("the ConfigMap is not on member1 either")

    s.say.title("Step 4: one command rebalances everything that should be on member1")
    text = await karmada_rebalance(s, "--context", "karmada-apiserver", "create", "--cluster", "member1", "--wait",
                                   "--timeout", f"{STEP_TIMEOUT:.0f}s")
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines()[1:] if len(line.split()) >= 2}
    wanted = {f"Deployment.apps/default/{n}" for n in DEPLOYMENTS} | {f"ConfigMap/default/{CONFIGMAP}"}
    if not all(rows.get(w) == "Successful" for w in wanted):
        raise StepFailed(f"step 4: expected {sorted(wanted)} Successful, the command printed:\n{text}")

    s.say.title("Step 5: the application is back on member1")
    await eventually("step 5: both Deployments run replicas in member1 again",
                     lambda: _all_back(s))
    await eventually("step 5: the ConfigMap is in member1 again", lambda: _configmap_in_member1(s))
    for name in DEPLOYMENTS:
        await s.karmadactl_get_deploy(name)
    await s.kubectl("--context", "member1", "get", "configmap", CONFIGMAP)

