"""The events Karmada's controllers record on a binding's resource template as well as on the binding.

The scheduler (``recordScheduleResultEventFor...``), the taint manager and the graceful-eviction
controllers (``EmitClusterEvictionEventFor...``) record each event twice, on the binding and on
its resource template. The template is not read for that: its ObjectReference is built from the
binding's ``spec.resource``.
"""

from __future__ import annotations

from controller_manager import objects
from controller_manager.events import EventRecorder
from controller_manager.objects import MutableObj, Obj
from controller_manager.resource import Resource


def template_reference(binding: Obj) -> MutableObj | None:
    """The binding's resource template as an event target (``spec.resource``); None without a name."""
    ref = objects.spec(binding).get("resource") or {}
    if not ref.get("name"):
        return None
    meta = {k: ref[k] for k in ("name", "namespace", "uid") if ref.get(k)}
    return {"apiVersion": ref.get("apiVersion") or "", "kind": ref.get("kind") or "", "metadata": meta}


def record_eviction_event(events: EventRecorder, binding: Obj, resource: Resource, cluster: str, *,
                          event_type: str, reason: str, outcome: str) -> None:
    """``EmitClusterEvictionEventFor(Cluster)ResourceBinding``: the same event on the binding and its template."""
    message = f"Evict from cluster {cluster} {outcome}."
    events.event(resource.with_type_meta(binding), event_type, reason, message)
    template = template_reference(binding)
    if template is not None:
        events.event(template, event_type, reason, message)
