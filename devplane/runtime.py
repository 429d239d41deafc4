"""Small runtime helpers every dev-plane controller needs and controller_manager does not offer.

Each was written again in several controllers (the Karmada ones and the member ones); they have
one definition here until the runtime grows its own: an informer index added only once by the
controllers sharing the informer, a cache key from a namespace and a name, an object typed for an
event's ``involvedObject`` and an error's text as Go prints it.
"""

from __future__ import annotations

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


def typed(obj: Obj, resource: Resource) -> MutableObj:
    """A shallow copy of ``obj`` with ``kind`` and ``apiVersion``, which list items lack and an event's
    ``involvedObject`` needs (both are set from ``resource`` unless the object carries both)."""
    if obj.get("kind") and obj.get("apiVersion"):
        return dict(obj)
    return {**obj, "kind": resource.kind, "apiVersion": resource.api_version}


def error_text(err: BaseException) -> str:
    """An error's message as Go prints it: an API error is its Status message (its status line when
    that message is empty)."""
    return err.message if isinstance(err, ApiError) and err.message else str(err)
