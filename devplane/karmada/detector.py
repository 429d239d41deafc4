"""The resource detector: resource template + (Cluster)PropagationPolicy → (Cluster)ResourceBinding.

Karmada's ``pkg/detector`` (``detector.go`` at commit f8fdd02) rewritten level-based on our
framework. This module is the reconciler and its wiring: informers, event filters, writes. The
pure rules it applies live beside it: which policy selects a template and what a claim looks like
in :mod:`devplane.karmada.policies`, the binding built from them in
:mod:`devplane.karmada.policybinding`.

* ``resource-detector`` reconciles one template (key ``<namespace>/<plural.group>/<name>``): it keeps
  the policy that claimed the template while that policy exists and still selects it (preemption
  ``Never``), else picks the best match — PropagationPolicies of the template's namespace first,
  then ClusterPropagationPolicies; highest ``spec.priority``, then the implicit priority (name >
  labelSelector > match-all), then the smaller name. It claims the template (policy permanent-id
  label, name/namespace annotations) and creates or updates the binding ``binding_name(kind,
  name)``: owned by the template, labelled for the scheduler, spec built from the policy with the
  mutating webhook's defaults. Only the fields the detector owns are written (never
  ``spec.clusters``, eviction tasks, ``rescheduleTriggeredAt`` or status). A template nobody
  selects any more loses its claim, and so does its binding (which then stays until the template
  goes, as in Karmada, but is invisible to the scheduler).
* ``propagation-policy-webhook`` / ``cluster-propagation-policy-webhook`` stand for the policy
  mutating webhooks: a policy without its permanent-id label gets one (uuid4).

Policy events re-sync the templates they select or have claimed; template events only when more
than status/resourceVersion changed (Karmada's ``SpecificationChanged``). Templates in Karmada's
reserved namespaces and in ``kube-*`` namespaces (``--skipped-propagating-namespaces``) are ignored.

Differences from Karmada: no policy finalizer (a deleted policy's templates are re-matched from
the informer's delete event), no preemption, lazy activation or dependent overrides; the
webhook's defaults are applied to the binding rather than stored on the policy.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import IndexFunc
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import SharedInformer
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import FuncPredicate, generation_or_deletion_changed
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from karmada_api.labels import CRB_PERMANENT_ID, RB_PERMANENT_ID
from karmada_api.names import binding_name, is_reserved_namespace
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS
from kube_api.ownerrefs import controller_of

from .policies import (
    CPP_KIND,
    POLICY_KINDS,
    PP_KIND,
    PRIORITY_MISMATCH,
    PolicyKind,
    claim_delta,
    defaulted_selectors,
    highest_priority_policy,
    other_kind,
    policy_id,
    policy_match_priority,
    selector_priority,
)
from .policybinding import build_binding, merge_binding
from .workloads import TEMPLATE_KINDS, TemplateKind, kind_by_key, kind_for

log = structlog.get_logger(__name__)

CONTROLLER = "resource-detector"
PP_WEBHOOK = "propagation-policy-webhook"
CPP_WEBHOOK = "cluster-propagation-policy-webhook"

APPLY_POLICY_SUCCEED = "ApplyPolicySucceed"
APPLY_POLICY_FAILED = "ApplyPolicyFailed"
OWNER_MISMATCH = ("failed to update binding due to different owner reference UID, will try again later after "
                  "binding is garbage collected, see https://github.com/karmada-io/karmada/issues/2090")

SKIPPED_NAMESPACES = (re.compile(r"^kube-.*$"),)
"""``--skipped-propagating-namespaces`` default (``kube-.*``, anchored as Karmada compiles it)."""

PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)

_POLICY_ID_INDEX = "detector-policy-by-permanent-id"


class ApplyError(Exception):
    """A policy that cannot be applied as it is (retried with backoff, reported as ApplyPolicyFailed)."""


# ----------------------------------------------------------------------------- event filters


def ignored_namespace(namespace: str) -> bool:
    """Karmada's detector event filter: reserved namespaces and ``--skipped-propagating-namespaces``."""
    return bool(namespace) and (is_reserved_namespace(namespace)
                                or any(p.match(namespace) for p in SKIPPED_NAMESPACES))


def specification_changed(old: Obj, new: Obj) -> bool:
    """``eventfilter.SpecificationChanged``: anything but status, resourceVersion and managedFields."""

    def strip(obj: Obj) -> tuple[dict[str, Any], dict[str, Any]]:
        body = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
        meta = {k: v for k, v in objects.metadata(obj).items() if k not in ("resourceVersion", "managedFields")}
        return body, meta

    return strip(old) != strip(new)


# ----------------------------------------------------------------------------- requests


def template_request(kind: TemplateKind, obj: Obj) -> Request:
    """A template's key: its namespace and ``<plural.group>/<name>`` (names never contain '/')."""
    return Request(objects.namespace(obj), f"{kind.resource.key}/{objects.name(obj)}")


def parse_template_request(request: Request) -> tuple[TemplateKind, str] | None:
    key, _, name = request.name.rpartition("/")
    kind = kind_by_key(key)
    return (kind, name) if kind is not None and name else None


def _label_index(label: str) -> IndexFunc:
    def index(obj: Obj) -> list[str]:
        value = objects.labels(obj).get(label)
        return [value] if value else []

    return index


# ----------------------------------------------------------------------------- the detector


class Detector:
    """Reconciles resource templates (``resource-detector``)."""

    def __init__(self, manager: Manager) -> None:
        self.client: KubeClient = manager.client
        self.events: EventRecorder = manager.event_recorder(CONTROLLER)
        self.templates: dict[str, SharedInformer] = {}
        for kind in TEMPLATE_KINDS:
            informer = manager.informer(kind.resource)
            for policy_kind in POLICY_KINDS:
                informer.ensure_indexer(policy_kind.template_index, _label_index(policy_kind.id_label))
            self.templates[kind.resource.key] = informer
        self.policies: dict[str, SharedInformer] = {}
        for policy_kind in POLICY_KINDS:
            informer = manager.informer(policy_kind.resource)
            informer.ensure_indexer(_POLICY_ID_INDEX, _label_index(policy_kind.id_label))
            self.policies[policy_kind.id_label] = informer
        self.bindings = {True: manager.informer(RESOURCE_BINDINGS), False: manager.informer(CLUSTER_RESOURCE_BINDINGS)}

    # ------------------------------------------------------------- mapping

    def template_predicate(self) -> FuncPredicate:
        def wanted(obj: Obj) -> bool:
            return not ignored_namespace(objects.namespace(obj))

        return FuncPredicate(on_create=wanted,
                             on_update=lambda old, new: wanted(new) and specification_changed(old, new),
                             on_delete=lambda _obj: False)

    def template_mapper(self, kind: TemplateKind) -> Callable[[Obj], list[Request]]:
        return lambda obj: [template_request(kind, obj)]

    def policy_mapper(self, policy_kind: PolicyKind) -> Callable[[Obj], list[Request]]:
        """A policy event → the templates it selects and those it has claimed."""

        def mapper(policy: Obj) -> list[Request]:
            requests: set[Request] = set()
            claimed = policy_id(policy, policy_kind)
            if claimed:
                for key, informer in self.templates.items():
                    kind = kind_by_key(key)
                    assert kind is not None
                    for obj in informer.store.by_index(policy_kind.template_index, claimed):
                        requests.add(template_request(kind, obj))
            for selector in defaulted_selectors(policy):
                kind = kind_for(str(selector.get("apiVersion") or ""), str(selector.get("kind") or ""))
                if kind is None:
                    continue
                store = self.templates[kind.resource.key].store
                namespace = str(selector.get("namespace") or "")
                candidates = store.by_index("namespace", namespace) if namespace and kind.namespaced else store.list()
                for obj in candidates:
                    if selector_priority(kind.resource.with_type_meta(obj), selector) > PRIORITY_MISMATCH:
                        requests.add(template_request(kind, obj))
            return sorted(requests)

        return mapper

    # ------------------------------------------------------------- policy selection

    def _policy_by_id(self, policy_kind: PolicyKind, claimed: str, namespace: str) -> Obj | None:
        for policy in self.policies[policy_kind.id_label].store.by_index(_POLICY_ID_INDEX, claimed):
            if policy_kind.cluster or objects.namespace(policy) == namespace:
                return policy
        return None

    def select_policy(self, template: Obj) -> tuple[PolicyKind, Obj] | None:
        """The claiming policy while it exists and selects the template, else the best match (PP before CPP)."""
        namespace = objects.namespace(template)
        labels = objects.labels(template)
        for policy_kind in POLICY_KINDS:
            claimed = labels.get(policy_kind.id_label)
            if not claimed or (not policy_kind.cluster and not namespace):
                continue
            policy = self._policy_by_id(policy_kind, str(claimed), namespace)
            if policy is not None and not objects.is_deleting(policy) and policy_match_priority(template, policy):
                return policy_kind, policy
        if namespace:
            candidates = [p for p in self.policies[PP_KIND.id_label].store.by_index("namespace", namespace)
                          if not objects.is_deleting(p)]
            best = highest_priority_policy(candidates, template)
            if best is not None:
                return PP_KIND, best
        candidates = [p for p in self.policies[CPP_KIND.id_label].store.list() if not objects.is_deleting(p)]
        best = highest_priority_policy(candidates, template)
        return (CPP_KIND, best) if best is not None else None

    # ------------------------------------------------------------- reconcile

    async def reconcile(self, request: Request) -> Result:
        parsed = parse_template_request(request)
        if parsed is None or ignored_namespace(request.namespace):
            return Result()
        kind, name = parsed
        cached = self.templates[kind.resource.key].store.get(objects.join_key(request.namespace, name))
        if cached is None or objects.is_deleting(cached):
            return Result()  # the binding goes with its template (ownerReference)
        template = kind.resource.with_type_meta(cached)
        choice = self.select_policy(template)
        if choice is None:
            await self._release(template)
            return Result()
        policy_kind, policy = choice
        if not policy_id(policy, policy_kind):
            return Result()  # the webhook simulation labels it first; that label change re-syncs us
        try:
            claimed = await self._claim(template, kind, policy_kind, policy)
            if claimed is None:
                return Result()  # the template is gone
            changed = await self._apply(claimed, kind, policy_kind, policy)
        except (ApiError, ApplyError) as exc:
            self.events.event(template, WARNING, APPLY_POLICY_FAILED,
                              f"Apply {policy_kind.describe(policy)} failed: {exc}")
            raise
        if changed:
            self.events.event(claimed, NORMAL, APPLY_POLICY_SUCCEED, f"Apply {policy_kind.describe(policy)} succeed")
        return Result()

    async def _claim(self, template: MutableObj, kind: TemplateKind, policy_kind: PolicyKind,
                     policy: Obj) -> MutableObj | None:
        """``ClaimPolicyForObject``: mark the template as the policy's; returns the template as stored."""
        other = other_kind(policy_kind)
        patch = claim_delta(template, policy_kind.claim_labels(policy), policy_kind.claim_annotations(policy),
                             (other.id_label,), other.annotation_keys)
        if patch is None:
            return template
        try:
            patched = await self.client.patch(kind.resource, objects.name(template), patch,
                                              namespace=objects.namespace(template))
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        return kind.resource.with_type_meta(patched)

    async def _schedule_priority(self, policy: Obj) -> int | None:
        """The binding's ``schedulePriority.priority`` from the policy's PriorityClass reference."""
        reference = objects.spec(policy).get("schedulePriority")
        if not reference:
            return None
        source, name = reference.get("priorityClassSource"), str(reference.get("priorityClassName") or "")
        if source == "KubePriorityClass":
            try:
                priority_class = await self.client.get(PRIORITY_CLASSES, name)
            except ApiError as exc:
                raise ApplyError(f"failed to get Kube PriorityClass({name}): {exc}") from exc
            return int(priority_class.get("value") or 0)
        if source == "PodPriorityClass":
            raise ApplyError("priority class source is PodPriorityClass, but PodPriorityClass is not supported yet")
        if source == "FederatedPriorityClass":
            raise ApplyError("priority class source is FederatedPriorityClass, but FederatedPriorityClass is not "
                             "supported yet")
        raise ApplyError("unsupported priority class source")

    async def _apply(self, template: Obj, kind: TemplateKind, policy_kind: PolicyKind, policy: Obj) -> bool:
        """Create or update the binding (conflict retry); whether it was written."""
        desired = build_binding(template, kind, policy, policy_kind,
                                schedule_priority=await self._schedule_priority(policy))
        name, namespace = objects.name(desired), objects.namespace(desired)
        namespaced = bool(namespace)
        resource = RESOURCE_BINDINGS if namespaced else CLUSTER_RESOURCE_BINDINGS
        id_label = RB_PERMANENT_ID if namespaced else CRB_PERMANENT_ID
        template_uid = objects.uid(template)
        first = True

        async def attempt() -> bool:
            nonlocal first
            if first:
                first = False
                existing = self.bindings[namespaced].store.get(objects.key(desired))
            else:
                existing = await self.client.get_or_none(resource, name, namespace)
            if existing is None:
                body = copy.deepcopy(desired)
                body["metadata"]["labels"][id_label] = str(uuid.uuid4())
                try:
                    await self.client.create(resource, body)
                except ApiError as exc:
                    if exc.is_already_exists:  # our cache was behind: read it and update instead
                        raise ApiError(409, "Conflict", str(exc)) from exc
                    raise
                log.info("binding created", binding=name, namespace=namespace)
                return True
            owner = controller_of(existing)  # the template the binding belongs to
            if owner is not None and str(owner.get("uid") or "") != template_uid:
                raise ApplyError(OWNER_MISMATCH)
            merged = merge_binding(existing, desired, policy_kind)
            if not objects.labels(merged).get(id_label):
                merged["metadata"]["labels"][id_label] = str(uuid.uuid4())
            if merged == existing:
                return False
            written = await self.client.update(resource, merged)
            return objects.resource_version(written) != objects.resource_version(existing)

        return await retry_on_conflict(attempt)


    async def _release(self, template: Obj) -> None:
        """No policy selects the template: drop the claim from its binding first, then from the template.

        The binding goes first so that a failure leaves the template claimed and this is retried.
        """
        namespace, name = objects.namespace(template), objects.name(template)
        all_labels = [k.id_label for k in POLICY_KINDS]
        all_annotations = [a for k in POLICY_KINDS for a in k.annotation_keys]
        resource = RESOURCE_BINDINGS if namespace else CLUSTER_RESOURCE_BINDINGS
        bname = binding_name(str(template.get("kind")), name)
        binding = self.bindings[bool(namespace)].store.get(objects.join_key(namespace, bname))
        if binding is not None and not objects.is_deleting(binding):
            patch = claim_delta(binding, {}, {}, all_labels, all_annotations)
            if patch is not None:
                try:
                    await self.client.patch(resource, bname, patch, namespace=namespace)
                except ApiError as exc:
                    if not exc.is_not_found:
                        raise
        patch = claim_delta(template, {}, {}, all_labels, all_annotations)
        if patch is None:
            return
        kind = kind_for(str(template.get("apiVersion")), str(template.get("kind")))
        assert kind is not None
        try:
            await self.client.patch(kind.resource, name, patch, namespace=namespace)
        except ApiError as exc:
            if not exc.is_not_found:
                raise
        log.info("template released: no policy selects it", kind=kind.kind, namespace=namespace, name=name)


class PolicyWebhook:
    """Stands for the policy mutating webhook: a policy without its permanent-id label gets one."""

    def __init__(self, client: KubeClient, policy_kind: PolicyKind, informer: SharedInformer) -> None:
        self.client = client
        self.policy_kind = policy_kind
        self.store = informer.store

    async def reconcile(self, request: Request) -> Result:
        cached = self.store.get(str(request))
        if cached is None or objects.is_deleting(cached) or policy_id(cached, self.policy_kind):
            return Result()
        policy = copy.deepcopy(dict(cached))
        policy["metadata"]["labels"] = {**(policy["metadata"].get("labels") or {}),
                                        self.policy_kind.id_label: str(uuid.uuid4())}
        try:  # a conditional PUT: a stale cache must not relabel a policy that already has its id
            await self.client.update(self.policy_kind.resource, policy)
        except ApiError as exc:
            if exc.is_not_found:
                return Result()
            raise
        return Result()


# ----------------------------------------------------------------------------- wiring


def _policy_event_predicate(policy_kind: PolicyKind) -> FuncPredicate:
    """Creates and deletes; updates that change the spec, the permanent id or start the deletion."""

    def updated(old: Obj, new: Obj) -> bool:
        return generation_or_deletion_changed(old, new) or policy_id(old, policy_kind) != policy_id(new, policy_kind)

    return FuncPredicate(on_update=updated)


def setup_detector(manager: Manager, *, workers: int = 5) -> list[Controller]:
    """Register ``resource-detector`` (``--concurrent-resource-template-syncs`` workers) and the policy webhooks."""
    detector = Detector(manager)
    controller = Controller(CONTROLLER, detector, workers=workers)
    predicate = detector.template_predicate()
    for key, informer in detector.templates.items():
        kind = kind_by_key(key)
        assert kind is not None
        controller.watches(informer, map_func=detector.template_mapper(kind), predicates=[predicate])
    controllers = [controller]
    for policy_kind, webhook_name in ((PP_KIND, PP_WEBHOOK), (CPP_KIND, CPP_WEBHOOK)):
        informer = detector.policies[policy_kind.id_label]
        controller.watches(informer, map_func=detector.policy_mapper(policy_kind),
                           predicates=[_policy_event_predicate(policy_kind)])
        webhook = Controller(webhook_name, PolicyWebhook(manager.client, policy_kind, informer), workers=1)
        webhook.watches(informer, predicates=[FuncPredicate(on_delete=lambda _obj: False)])
        controllers.append(webhook)
    for each in controllers:
        manager.add_controller(each)
    return controllers
