"""A resource type by its REST coordinates, and what a request path names.

The client builds every path from a :class:`Resource`; errors read a :class:`RequestTarget` back from the
path, to tell a 404 about the object asked for from a 404 about a resource not served.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .objects import MutableObj, Obj, is_valid_path_segment_name


class InvalidName(ValueError):
    """A request naming an object or namespace that no object can have (``/`` or ``%`` in it, ``.`` or ``..``):
    refused before it is sent, with client-go's message. Sent, the name would address another path, and the
    answer (a ``404 page not found``) would read as a resource not served, retried for ever."""


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource type by its REST coordinates."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """``plural.group`` (``deployments.apps``, ``configmaps``): how kube names a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def with_type_meta(self, obj: Obj) -> MutableObj:
        """A shallow copy of ``obj`` with this resource's ``kind`` and ``apiVersion``, which list items
        lack and an event's ``involvedObject`` needs (kept when the object carries both)."""
        if obj.get("kind") and obj.get("apiVersion"):
            return dict(obj)
        return {**obj, "kind": self.kind, "apiVersion": self.api_version}

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The request path; :class:`InvalidName` for a name or namespace no object can have (as client-go)."""
        for what, value in (("namespace", namespace), ("resource name", name)):
            if value and (problems := is_valid_path_segment_name(value)):
                raise InvalidName(f"invalid {what} {json.dumps(value)}: [{', '.join(problems)}]")
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


@dataclass(frozen=True, slots=True)
class RequestTarget:
    """What a request path names, as kube-apiserver's RequestInfo reads it.

    ``/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings/rb/status`` is group
    ``work.karmada.io``, resource ``resourcebindings``, namespace ``ns``, name ``rb``, subresource
    ``status``; a collection has no name; ``/api/v1/namespaces/ns`` is the namespace ``ns`` itself.
    """

    group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def key(self) -> str:
        """``resource.group``, how kube names a resource (``resourcebindings.work.karmada.io``)."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @classmethod
    def from_path(cls, path: str) -> RequestTarget | None:
        """The target of an API path; None for a path that names no resource (discovery, /healthz...)."""
        parts = [part for part in path.split("?", 1)[0].split("/") if part]
        if len(parts) >= 2 and parts[0] == "api":
            group, rest = "", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, rest = parts[1], parts[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 2 and rest[0] == "namespaces":
            if len(rest) == 2 or (len(rest) == 3 and rest[2] in ("status", "finalize")):
                return cls(group, "namespaces", name=rest[1], subresource=rest[2] if len(rest) == 3 else "")
            namespace, rest = rest[1], rest[2:]
        if not rest:
            return None
        return cls(group, rest[0], namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")
