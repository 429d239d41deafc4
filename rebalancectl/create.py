"""``karmada-rebalance create``: read the bindings, select, build and create the rebalancers.

The rebalancers are plain WorkloadRebalancers (``apps.karmada.io/v1alpha1``): whichever rebalancer
controller runs (Karmada's or this project's) acts on them. More workloads than
``--max-per-rebalancer`` are split into several: ``NAME-1``, ``NAME-2``... (or one
``generateName: rebalance-`` each when no NAME is given, whose suffix :mod:`.retry` picks when creating).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from karmada_api.bindings import CRB_KIND, RB_KIND
from karmada_api.labels import CPP_PERMANENT_ID, PP_PERMANENT_ID
from karmada_api.rebalancers import chunks, rebalancer_body
from karmada_api.resources import CLUSTER_PROPAGATION_POLICIES, CLUSTERS, PROPAGATION_POLICIES

from . import retry
from .discovery import Discovered, GroupKind, discover, resolve_kind, resource_for
from .errors import UsageError
from .selection import Criteria, Selection, Workload, binding_workload, count_in_scope, describe_empty, select
from .waves import Wave, waves

GENERATE_NAME = "rebalance-"


@dataclass(frozen=True)
class CreateFlags:
    """The ``create`` flags that decide the selection."""

    namespace: str | None
    kinds: Sequence[str] = ()
    selector: str = ""
    cluster: str = ""
    policy: str = ""
    cluster_policy: str = ""


def rebalancers(name: str, workloads: Sequence[Workload], *, size: int,
                ttl_seconds: int | None, preserve: bool = False) -> list[dict[str, Any]]:
    """The WorkloadRebalancer objects for ``workloads``; ``ttl_seconds`` None keeps them (no TTL).

    ``preserve`` asks for preserve mode by the annotation only: Karmada's stock CRD prunes #7662's
    ``spec.reschedule`` silently, which would turn the request into a full reschedule without a word.
    """
    return named_rebalancers(name, chunks(workloads, size), ttl_seconds=ttl_seconds, preserve=preserve)


def named_rebalancers(name: str, parts: Sequence[Sequence[Workload]], *, ttl_seconds: int | None,
                      preserve: bool = False) -> list[dict[str, Any]]:
    """One rebalancer per part: ``NAME`` alone, ``NAME-1``, ``NAME-2``... for several, or generateName."""
    built = []
    for index, part in enumerate(parts, start=1):
        if not name:
            metadata = {"generateName": GENERATE_NAME}
        else:
            metadata = {"name": name if len(parts) == 1 else f"{name}-{index}"}
        built.append(rebalancer_body(metadata, [w.reference() for w in part], ttl_seconds, preserve=preserve))
    return built


def split_policy(text: str) -> tuple[str, str]:
    """``--policy NS/NAME`` → (NS, NAME); UsageError otherwise."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise UsageError(f"--policy {text}: use NAMESPACE/NAME")
    return namespace, name


async def _policy_id(client: KubeClient, flags: CreateFlags) -> tuple[str, str, str] | None:
    """``(flag text, label, permanent id)`` of the policy named by the flags, read from the policy."""
    if flags.policy:
        namespace, name = split_policy(flags.policy)
        policy = await client.get_or_none(PROPAGATION_POLICIES, name, namespace)
        text, label, kind = f"--policy {flags.policy}", PP_PERMANENT_ID, "PropagationPolicy"
    elif flags.cluster_policy:
        policy = await client.get_or_none(CLUSTER_PROPAGATION_POLICIES, flags.cluster_policy)
        text, label, kind = f"--cluster-policy {flags.cluster_policy}", CPP_PERMANENT_ID, "ClusterPropagationPolicy"
    else:
        return None
    if policy is None:
        raise UsageError(f"{text}: no such {kind}")
    value = objects.labels(policy).get(label)
    if not value:
        raise UsageError(f"{text}: the {kind} has no {label} label yet (Karmada sets it when it first propagates)")
    return text, label, value


def namespace_scope(*, all_namespaces: bool, namespace: str, policy: str, cluster_policy: str,
                    context_namespace: str) -> str | None:
    """The namespace whose bindings are read; None for all of them and the ClusterResourceBindings.

    ``-A`` reads all; ``-n`` one; otherwise ``--policy NS/NAME`` reads NS and ``--cluster-policy`` all (a
    ClusterPropagationPolicy propagates across namespaces); otherwise the context's namespace, else ``default``.
    """
    if all_namespaces:
        return None
    if namespace:
        return namespace
    if policy:
        return split_policy(policy)[0]
    if cluster_policy:
        return None
    return context_namespace or "default"


async def _bindings(client: KubeClient, namespace: str | None) -> list[Obj]:
    """The ResourceBindings in scope, and the ClusterResourceBindings when every namespace is."""
    rbs = await client.list(RB_KIND.resource, namespace or "")
    items: list[Obj] = list(rbs.get("items") or [])
    if namespace is None:
        crbs = await client.list(CRB_KIND.resource)
        items.extend(crbs.get("items") or [])
    return items


async def _labelled(client: KubeClient, selector: str, bindings: Sequence[Obj], namespace: str | None,
                    resources: Discovered) -> frozenset[Workload]:
    """The bound templates whose labels match ``selector``, read from the templates themselves (the server
    applies the selector; a syntax error it reports is a bad flag)."""
    kinds = {w.group_kind for w in (binding_workload(b) for b in bindings) if w is not None}
    matched: set[Workload] = set()

    async def one(kind: GroupKind) -> None:
        resource = resource_for(kind, resources.resources)
        if resource is None:
            resources.explain_missing(f"-l {selector}: the templates of kind {kind.kind}")
            return  # a binding for a kind no longer served: no template to read
        try:
            listed = await client.list(resource, namespace or "" if resource.namespaced else "",
                                       label_selector=selector)
        except ApiError as exc:
            if exc.status == 400:
                raise UsageError(f"-l {selector}: {exc.message}") from None
            raise
        for item in listed.get("items") or []:
            matched.add(Workload(objects.namespace(item), kind.kind, objects.name(item), resource.api_version))

    await asyncio.gather(*(one(kind) for kind in sorted(kinds)))
    # match on group, kind, namespace and name: a template listed at another version is the same object
    by_identity = {(w.group_kind, w.namespace, w.name) for w in matched}
    return frozenset(w for w in (binding_workload(b) for b in bindings)
                     if w is not None and (w.group_kind, w.namespace, w.name) in by_identity)


def _kind(text: str, resources: Discovered) -> GroupKind:
    try:
        return resolve_kind(text, resources.resources)
    except UsageError:
        resources.explain_missing(f"--kind {text}")
        raise


async def resolve(client: KubeClient, flags: CreateFlags) -> tuple[Criteria, list[Obj]]:
    """Read what the flags name (kinds, cluster, policy, template labels) and the bindings in scope."""
    namespace = flags.namespace
    policy = await _policy_id(client, flags)
    cluster = None
    if flags.cluster:
        cluster = await client.get_or_none(CLUSTERS, flags.cluster)
        if cluster is None:
            raise UsageError(f"--cluster {flags.cluster}: no such cluster")
    discovered = await discover(client) if flags.kinds or flags.selector else None
    resources = discovered if discovered is not None else Discovered([])
    kinds = [(text, _kind(text, resources)) for text in flags.kinds]
    bindings = await _bindings(client, namespace)
    labelled = None
    if flags.selector:
        labelled = (flags.selector, await _labelled(client, flags.selector, bindings, namespace, resources))
    return Criteria(namespace, kinds, labelled, cluster, policy, discovered), bindings


async def selection(client: KubeClient, flags: CreateFlags) -> tuple[Selection, Criteria]:
    """The selected workloads; UsageError with the one-line reason when there are none."""
    criteria, bindings = await resolve(client, flags)
    chosen = select(bindings, criteria)
    if not chosen.workloads:
        in_scope = count_in_scope(bindings, criteria.namespace)
        raise UsageError(describe_empty(chosen, criteria, bindings_in_scope=in_scope))
    return chosen, criteria


async def create_all(client: KubeClient, objs: Sequence[dict[str, Any]], created: list[dict[str, Any]], *,
                     retry_for: float, bound: str, notice: Callable[[str], object] | None = None) -> None:
    """Create the rebalancers one by one into ``created``, each retried on transient answers for at most
    ``retry_for`` seconds of its own (:func:`rebalancectl.retry.create`; ``bound`` names the flag,
    ``notice`` gets its one-line notices). A failure stops the rest, and the caller still holds (and reports)
    those that were created before it."""
    for obj in objs:
        created.append(await retry.create(client, obj, within=retry_for, bound=bound, notice=notice))


def wave_plan(name: str, workloads: Sequence[Workload], *, per_wave: int, size: int, ttl_seconds: int | None,
              preserve: bool = False) -> list[Wave]:
    """``--max-concurrent``: the workloads in waves of ``per_wave``, each wave's rebalancers of at most ``size``,
    numbered across the waves (``NAME-1``... in creation order)."""
    parts = chunks(workloads, per_wave)  # the waves, in order
    per_part = [chunks(part, size) for part in parts]
    bodies = named_rebalancers(name, [chunk for chunked in per_part for chunk in chunked], ttl_seconds=ttl_seconds,
                               preserve=preserve)
    grouped, start = [], 0
    for chunked in per_part:
        grouped.append(bodies[start:start + len(chunked)])
        start += len(chunked)
    return waves(parts, grouped)
