"""Small runtime helpers every dev-plane controller needs and controller_manager does not offer.

Each was written again in several controllers (the Karmada ones and the member ones); they have
one definition here until the runtime grows its own: an informer index added only once by the
controllers sharing the informer, a cache key from a namespace and a name, the number in a
resourceVersion, an object typed for an event's ``involvedObject``, the usual update filter and
the text of an error (or of several) as Go prints it.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller_manager import objects
from controller_manager.cache import IndexFunc
from controller_manager.client import ApiError, Resource
from controller_manager.informer import SharedInformer
from controller_manager.objects import MutableObj, Obj


def ensure_index(informer: SharedInformer, name: str, func: IndexFunc) -> None:
    """Add the index ``name`` unless another controller sharing the informer already did."""
    try:
        informer.store.index_values(name)
    except KeyError:
        informer.add_indexers({name: func})


def cache_key(namespace: str, name: str) -> str:
    """The informer cache key of an object named ``name`` in ``namespace`` (``name`` alone when cluster-scoped)."""
    return f"{namespace}/{name}" if namespace else name


def resource_version_number(obj: Obj) -> int:
    """``metadata.resourceVersion`` as the integer the dev API server writes (0 when missing or not a
    number): which of two copies of an object is newer, for the controllers that read their own writes."""
    try:
        return int(objects.resource_version(obj) or 0)
    except ValueError:
        return 0


def typed(obj: Obj, resource: Resource) -> MutableObj:
    """A shallow copy of ``obj`` with ``kind`` and ``apiVersion``, which list items lack and an event's
    ``involvedObject`` needs (both are set from ``resource`` unless the object carries both)."""
    if obj.get("kind") and obj.get("apiVersion"):
        return dict(obj)
    return {**obj, "kind": resource.kind, "apiVersion": resource.api_version}


def generation_or_deletion_changed(old: Obj, new: Obj) -> bool:
    """An update event worth a reconcile for most controllers: a new generation (a spec change) or a
    deletion starting; not status, label or finalizer writes (their own included)."""
    return objects.generation(old) != objects.generation(new) or objects.is_deleting(old) != objects.is_deleting(new)


def error_text(err: BaseException) -> str:
    """An error's message as Go prints it: an API error is its Status message (its status line when
    that message is empty)."""
    return err.message if isinstance(err, ApiError) and err.message else str(err)


def aggregate_text(texts: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()`` of errors with these texts: one bare, several in ``[a, b]``
    (duplicates kept: apimachinery prints a repeated message once, the API server's
    :func:`~devplane.apiserver.errors.aggregate_messages` does too)."""
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
