"""``karmada-devplane ctl``: the two karmadactl commands the user's documents use.

* ``ctl get deploy NAME`` — karmadactl's multi-cluster table (NAME CLUSTER READY UP-TO-DATE
  AVAILABLE AGE ADOPTION): the Deployment as it is in each member cluster, read through the
  Cluster's ``apiEndpoint`` and token Secret (push mode), ADOPTION ``Y`` when the member object
  carries Karmada's ``karmada.io/managed`` label.
* ``ctl taint clusters NAME KEY[=VALUE]:EFFECT[-]`` — add or remove a taint on a Cluster.

Both read the kubeconfig like karmadactl: ``--kubeconfig`` or ``$KUBECONFIG``, context
``--karmada-context``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from clusteraccess.client import new_member_client
from clusteraccess.config import MemberConfigError, MemberSettings, read_credentials
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.client import KubeClient
from controller_manager.resource import InvalidName, Resource
from karmada_api.labels import MANAGED_LABEL
from karmada_api.resources import CLUSTERS
from kube_api.resources import DEPLOYMENTS

from .apiserver.tables import age

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TAINT = re.compile(r"^(?P<key>[^=:\s]+?)(=(?P<value>[^:\s]*))?(:(?P<effect>\w+))?(?P<remove>-)?$")


class CtlError(Exception):
    """A user-facing failure: printed as ``error: <message>``, exit 1."""


def add_ctl_parser(sub: Any) -> None:
    ctl = sub.add_parser("ctl", help="the karmadactl steps of the documents (get deploy, taint clusters)")
    ctl.add_argument("--kubeconfig", default=None, help="kubeconfig path (default: $KUBECONFIG)")
    ctl.add_argument("--karmada-context", default="karmada-apiserver", help="context of the Karmada API server")
    verbs = ctl.add_subparsers(dest="verb", required=True)
    get = verbs.add_parser("get", help="show a Deployment in every member cluster")
    get.add_argument("kind", choices=("deploy", "deployment", "deployments"))
    get.add_argument("name")
    get.add_argument("-n", "--namespace", default="default")
    taint = verbs.add_parser("taint", help="add (KEY[=V]:EFFECT) or remove (KEY[:EFFECT]-) a Cluster taint")
    taint.add_argument("kind", choices=("cluster", "clusters"))
    taint.add_argument("name")
    taint.add_argument("taints", nargs="+", metavar="KEY[=VALUE]:EFFECT[-]")
    taint.add_argument("--overwrite", action="store_true", help="replace a taint with the same key and effect")


# ------------------------------------------------------------------------------------------ taint


@dataclass(frozen=True)
class TaintChange:
    key: str
    value: str
    effect: str
    remove: bool


def parse_taint(text: str) -> TaintChange:
    """kubectl's taint syntax: ``key=value:Effect`` adds, ``key:Effect-`` or ``key-`` removes."""
    match = _TAINT.match(text)
    if match is None:
        raise CtlError(f"invalid taint spec: {text}")
    remove = bool(match["remove"])
    effect = match["effect"] or ""
    if not remove and not effect:
        raise CtlError(f"invalid taint spec: {text}, unknown taint effect, must be one of: "
                       f"{', '.join(TAINT_EFFECTS)}")
    if effect and effect not in TAINT_EFFECTS:
        raise CtlError(f"invalid taint effect: {effect}, unsupported taint effect")
    return TaintChange(match["key"], match["value"] or "", effect, remove)


def apply_taints(name: str, taints: list[dict[str, Any]], changes: Sequence[TaintChange], *,
                 overwrite: bool) -> tuple[list[dict[str, Any]], str]:
    """The new taint list and the verb printed (``tainted``/``untainted``/``modified``)."""
    result = [dict(t) for t in taints]
    removed = added = False
    for change in changes:
        if change.remove:
            kept = [t for t in result if not (t.get("key") == change.key
                                              and (not change.effect or t.get("effect") == change.effect))]
            if len(kept) == len(result):
                spec = f"{change.key}:{change.effect}" if change.effect else change.key
                raise CtlError(f'taint "{spec}" not found')
            result, removed = kept, True
            continue
        same = [t for t in result if t.get("key") == change.key and t.get("effect") == change.effect]
        if same and not overwrite:
            raise CtlError(f"cluster {name} already has {change.key} taint(s) with same effect(s) "
                           "and --overwrite is false")
        result = [t for t in result if t not in same]
        taint: dict[str, Any] = {"key": change.key, "effect": change.effect}
        if change.value:
            taint["value"] = change.value
        result.append(taint)
        added = True
    verb = "modified" if added and removed else ("untainted" if removed else "tainted")
    return result, verb


async def taint_cluster(host: KubeClient, name: str, specs: Sequence[str], *, overwrite: bool = False) -> str:
    """Apply taint specs to a Cluster; the line karmadactl prints (``cluster/member1 tainted``)."""
    changes = [parse_taint(spec) for spec in specs]
    verb = ""

    async def attempt() -> None:
        nonlocal verb
        cluster = await host.get_or_none(CLUSTERS, name)
        if cluster is None:
            raise CtlError(f'clusters.cluster.karmada.io "{name}" not found')
        spec = cluster.setdefault("spec", {})
        spec["taints"], verb = apply_taints(name, spec.get("taints") or [], changes, overwrite=overwrite)
        if not spec["taints"]:
            del spec["taints"]
        await host.update(CLUSTERS, cluster)

    await retry_on_conflict(attempt)
    return f"cluster/{name} {verb}"


# ------------------------------------------------------------------------------------------ get


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's tabwriter: columns left-aligned, three spaces apart."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["   ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)


DEPLOY_HEADER = ("NAME", "CLUSTER", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "ADOPTION")


def deployment_row(cluster: str, deployment: dict[str, Any]) -> tuple[str, ...]:
    spec, status = objects.spec(deployment), objects.status(deployment)
    adoption = "Y" if objects.labels(deployment).get(MANAGED_LABEL) == "true" else "N"
    return (objects.name(deployment), cluster, f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
            str(status.get("updatedReplicas") or 0), str(status.get("availableReplicas") or 0),
            age(objects.creation_timestamp(deployment)), adoption)


async def member_client(host: KubeClient, cluster: dict[str, Any]) -> KubeClient:
    """A client for a member, built the way push mode does (apiEndpoint + token Secret)."""
    name = objects.name(cluster)
    settings = MemberSettings.from_cluster(cluster)
    credentials = await read_credentials(host, name, settings)
    return new_member_client(name, settings, credentials, timeout=10.0)


async def deployments_in_members(host: KubeClient, name: str, namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(cluster, Deployment) for every member cluster that has it, in cluster name order."""
    return await workloads_in_members(host, DEPLOYMENTS, name, namespace)


async def workloads_in_members(host: KubeClient, resource: Resource, name: str,
                               namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(cluster, object of ``resource``) for every member cluster that has it, in cluster name order."""
    clusters = sorted((await host.list(CLUSTERS)).get("items") or [], key=objects.name)
    found: list[tuple[str, dict[str, Any]]] = []
    for cluster in clusters:
        cluster_name = objects.name(cluster)
        try:
            member = await member_client(host, cluster)
        except (MemberConfigError, ApiError) as exc:
            print(f"warning: cluster {cluster_name} cannot be reached: {exc}", file=sys.stderr)
            continue
        try:
            found.append((cluster_name, await member.get(resource, name, namespace)))
        except ApiError as exc:
            if not exc.is_not_found:
                print(f"warning: cluster {cluster_name}: {exc}", file=sys.stderr)
        except OSError as exc:
            print(f"warning: cluster {cluster_name} cannot be reached: {exc}", file=sys.stderr)
        finally:
            await member.close()
    return found


async def get_deployment_table(host: KubeClient, name: str, namespace: str = "default") -> str:
    found = await deployments_in_members(host, name, namespace)
    if not found:
        raise CtlError(f'deployments.apps "{name}" not found')
    return format_table(DEPLOY_HEADER, [deployment_row(cluster, obj) for cluster, obj in found])


# ------------------------------------------------------------------------------------------ main


async def run_ctl(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    try:
        host = await KubeClient.from_kubeconfig(args.kubeconfig, context=args.karmada_context, qps=0)
    except Exception as exc:
        print(f"error: cannot load kubeconfig (context {args.karmada_context}): {exc}", file=sys.stderr)
        return 1
    try:
        if args.verb == "get":
            print(await get_deployment_table(host, args.name, args.namespace), file=out)
        else:
            print(await taint_cluster(host, args.name, args.taints, overwrite=args.overwrite), file=out)
    except (CtlError, InvalidName) as exc:  # InvalidName: a name with "/" or "%", refused before it is sent
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"Error from server ({exc.reason}): {exc.message}", file=sys.stderr)
        return 1
    finally:
        await host.close()
    return 0
