"""Member objects read the way Karmada's native interpreter reads them: as Go's typed structs.

``helper.ConvertToTypedObject`` (``pkg/util/helper/unstructured.go``) fills a typed Kubernetes object
from the member's JSON before ``reflectstatus.go`` and ``healthy.go`` look at it: an integer
field may arrive as a whole float and still be read, anything else of the wrong type fails the
conversion. These readers do the same for :mod:`interpreter.reflectstatus` and
:mod:`interpreter.health`.
"""

from __future__ import annotations

import copy
from typing import Any

from controller_manager.objects import Obj


class ReflectError(ValueError):
    """A member object whose status cannot be read as its kind's (ConvertToTypedObject failed)."""


def int_field(source: Any, field: str) -> int:
    """An integer field (0 when absent), as Go's typed conversion reads it; ReflectError otherwise."""
    if not isinstance(source, dict):
        raise ReflectError(f"expected an object holding {field!r}, got {type(source).__name__}")
    value = source.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ReflectError(f"{field}: expected an integer, got {value!r}")
    return value


def status_map(obj: Obj) -> dict[str, Any] | None:
    """``.status`` when present (NestedMap); ReflectError when it is not an object."""
    if "status" not in obj or obj["status"] is None:
        return None
    status = obj["status"]
    if not isinstance(status, dict):
        raise ReflectError(f".status accessor error: {status!r} is of the type {type(status).__name__}, "
                           "expected map[string]interface{}")
    return status


def load_balancer(status: Obj) -> dict[str, Any]:
    """``status.loadBalancer`` as a LoadBalancerStatus: ``{ingress: [...]}``, or ``{}`` without ingress points."""
    balancer = status.get("loadBalancer") or {}
    if not isinstance(balancer, dict):
        raise ReflectError(f"loadBalancer: expected an object, got {balancer!r}")
    ingress = balancer.get("ingress") or []
    if not isinstance(ingress, list):
        raise ReflectError(f"loadBalancer.ingress: expected a list, got {ingress!r}")
    return {"ingress": copy.deepcopy(ingress)} if ingress else {}
