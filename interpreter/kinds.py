"""Per-kind tables: which function of an interpreter operation serves which resource kind.

Each operation of Karmada's native interpreter keeps a map from GroupVersionKind to its function
(``getAllDefaultAggregateStatusInterpreter``, ``getAllDefaultHealthInterpreter``... in
``pkg/resourceinterpreter/default/native/``); a :class:`KindTable` is that map, filled by
registering each function next to its definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from controller_manager.resource import Resource

V = TypeVar("V")


class KindTable(Generic[V]):
    """Values by ``(apiVersion, kind)``, each with the REST resource it was registered for."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[Resource, V]] = {}

    def add(self, resource: Resource, value: V) -> V:
        """Register ``value`` for ``resource``'s kind; returns ``value``."""
        self._entries[(resource.api_version, resource.kind)] = (resource, value)
        return value

    def register(self, *resources: Resource) -> Callable[[V], V]:
        """A decorator registering the decorated function for each of ``resources``."""

        def decorate(value: V) -> V:
            for resource in resources:
                self.add(resource, value)
            return value

        return decorate

    def get(self, api_version: str, kind: str) -> V | None:
        """The value registered for the kind, None when there is none."""
        entry = self._entries.get((api_version, kind))
        return entry[1] if entry else None

    def resources(self) -> dict[tuple[str, str], Resource]:
        """Every registered kind's REST resource, in registration order."""
        return {key: resource for key, (resource, _value) in self._entries.items()}
