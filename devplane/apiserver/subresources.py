"""The ``scale`` subresource: an object's replicas seen, and set, through an autoscaling/v1 Scale.

``status`` and ``finalize`` are the object itself with other write rules, which the store
applies (``Store.update``/``Store.patch`` with ``subresource``); ``scale`` alone has its own
representation, built from ``spec.replicas``, ``status.replicas`` and the label selector,
as kube's scale subresource of Deployments and ReplicaSets serves it.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controller_manager import objects

from . import errors
from .bodies import decode_json_body, read_body
from .codec import decode_json
from .patch import apply_json_patch, apply_merge_patch
from .responses import json_response
from .routing import Target
from .store import Store


async def scale(store: Store, request: web.Request, target: Target) -> web.Response:
    """GET, PUT or PATCH (JSON or merge patch) of the Scale; only ``spec.replicas`` can change."""
    rtype = target.rtype
    if request.method in ("PUT", "PATCH"):
        current = store.get(rtype, target.namespace, target.name)
        scale = scale_of(current.obj)
        if request.method == "PUT":
            new_scale = decode_json_body(await read_body(request))
        else:
            patch = decode_json_body(await read_body(request))
            new_scale = (apply_json_patch(scale, patch) if request.content_type == "application/json-patch+json"
                         else apply_merge_patch(scale, patch))
        replicas = objects.spec(new_scale).get("replicas") if isinstance(new_scale, dict) else None
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid("Scale", "autoscaling", target.name, [errors.Cause(
                "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                "spec.replicas")])
        given_rv = objects.metadata(new_scale).get("resourceVersion")
        if given_rv and str(given_rv) != str(current.rv):
            raise errors.conflict(rtype.plural, rtype.group, target.name)
        obj = decode_json(current.raw)
        obj.setdefault("spec", {})["replicas"] = replicas
        stored = store.update(rtype, target.namespace, target.name, obj, require_rv=False)
    else:
        stored = store.get(rtype, target.namespace, target.name)
    await store.wait_durable(stored.rv)
    return json_response(scale_of(stored.obj))


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = objects.metadata(obj)
    selector = (objects.spec(obj).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": objects.spec(obj).get("replicas", 0)},
        "status": {"replicas": objects.status(obj).get("replicas", 0),
                   "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))},
    }


