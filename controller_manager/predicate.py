"""Predicates: filter a watch's events before they become requests (controller-runtime's ``predicate``).

A list of predicates on one watch must all pass; :class:`AnyOf` passes when one does. They see the
informer's objects, typed as the cache hands them out (:data:`~controller_manager.objects.MutableObj`);
they only read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import objects
from .objects import MutableObj, Obj


class Predicate:
    """Filters events before they are enqueued; the default lets everything through."""

    def create(self, obj: MutableObj) -> bool:
        return True

    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return True

    def delete(self, obj: MutableObj) -> bool:
        return True


def generation_or_deletion_changed(old: Obj, new: Obj) -> bool:
    """An update worth a reconcile for most controllers: a new generation (a spec change) or a deletion
    starting; not status, label or finalizer writes (their own included)."""
    return objects.generation(old) != objects.generation(new) or objects.is_deleting(old) != objects.is_deleting(new)


class GenerationChangedPredicate(Predicate):
    """Updates only when ``metadata.generation`` changed: drops status-only writes."""

    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return bool(objects.metadata(old).get("generation") != objects.metadata(new).get("generation"))


class ResourceVersionChangedPredicate(Predicate):
    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return bool(objects.metadata(old).get("resourceVersion") != objects.metadata(new).get("resourceVersion"))


class LabelChangedPredicate(Predicate):
    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return bool(objects.metadata(old).get("labels") != objects.metadata(new).get("labels"))


class AnnotationChangedPredicate(Predicate):
    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return bool(objects.metadata(old).get("annotations") != objects.metadata(new).get("annotations"))


@dataclass
class FuncPredicate(Predicate):
    """A predicate from functions; an omitted one lets its events through."""

    on_create: Callable[[MutableObj], bool] | None = None
    on_update: Callable[[MutableObj, MutableObj], bool] | None = None
    on_delete: Callable[[MutableObj], bool] | None = None

    def create(self, obj: MutableObj) -> bool:
        return self.on_create(obj) if self.on_create else True

    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return self.on_update(old, new) if self.on_update else True

    def delete(self, obj: MutableObj) -> bool:
        return self.on_delete(obj) if self.on_delete else True


@dataclass
class AnyOf(Predicate):
    """Passes when any of the predicates passes (controller-runtime's ``predicate.Or``)."""

    predicates: list[Predicate] = field(default_factory=list)

    def create(self, obj: MutableObj) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: MutableObj, new: MutableObj) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: MutableObj) -> bool:
        return any(p.delete(obj) for p in self.predicates)
