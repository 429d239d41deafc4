"""The two kube-controller-manager jobs the dev plane runs next to its API server.

kube-apiserver itself neither garbage-collects dependents nor empties deleted namespaces;
kube-controller-manager does. ``karmada-devplane`` runs these so that ownerReference
cleanup and namespace deletion behave as on a real cluster.
"""

from __future__ import annotations

import asyncio

import structlog

from controller_manager import objects

from . import errors
from .resources import ResourceType
from .store import NAMESPACE_KEY, DeleteOptions, Store
from .watch import Stored

log = structlog.get_logger(__name__)

_NAMESPACE_RETRY_SECONDS = 0.5


class GarbageCollector:
    """Deletes objects whose owners are all gone; finishes foreground deletions."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        store.removal_listeners.append(self._on_removed)
        store.write_listeners.append(self._on_written)

    def _on_removed(self, _rtype: ResourceType, stored: Stored) -> None:
        uid = objects.uid(stored.obj)
        if uid:
            for key, ns, name in self._store.dependents_of(uid):
                self._queue.put_nowait(f"{key}\x00{ns}\x00{name}")
        for ref in objects.owner_references(stored.obj):
            owner = self._store.locate_uid(ref.get("uid", ""))
            if owner is not None:
                self._queue.put_nowait("\x00".join(owner))

    def _on_written(self, _rtype: ResourceType, stored: Stored) -> None:
        obj = stored.obj
        if objects.owner_references(obj) or "foregroundDeletion" in objects.finalizers(obj):
            key = self._store.locate_uid(objects.uid(obj))
            if key is not None:
                self._queue.put_nowait("\x00".join(key))

    async def run(self) -> None:
        while True:
            item = await self._queue.get()
            key, ns, name = item.split("\x00")
            try:
                self._process(key, ns, name)
            except errors.StatusError as exc:
                log.debug("garbage collection skipped", object=name, reason=exc.reason)

    def _process(self, key: str, ns: str, name: str) -> None:
        rtypes = self._store.registry.by_storage_key(key)
        if not rtypes:
            return
        rtype = rtypes[0]
        stored = self._store.lookup(rtype, ns, name)
        if stored is None:
            return
        obj = stored.obj
        uid = objects.uid(obj)
        if objects.is_deleting(obj) and "foregroundDeletion" in objects.finalizers(obj):
            dependents = self._store.dependents_of(uid)
            for dkey, dns, dname in dependents:
                dtypes = self._store.registry.by_storage_key(dkey)
                if dtypes and self._store.lookup(dtypes[0], dns, dname) is not None:
                    self._store.delete(dtypes[0], dns, dname, DeleteOptions(propagation="Foreground"))
            if not self._store.dependents_of(uid):
                self._store.remove_finalizer(rtype, ns, name, "foregroundDeletion")
            return
        owners = [r.get("uid", "") for r in objects.owner_references(obj)]
        if owners and not objects.is_deleting(obj) and \
                not any(self._store.exists_uid(owner) for owner in owners):
            log.info("garbage collecting dependent", resource=key, namespace=ns, name=name)
            self._store.delete(rtype, ns, name, DeleteOptions())


class NamespaceController:
    """Empties a namespace being deleted, then removes its ``kubernetes`` finalizer."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        store.write_listeners.append(self._on_written)

    def _on_written(self, rtype: ResourceType, stored: Stored) -> None:
        if rtype.storage_key == NAMESPACE_KEY and objects.is_deleting(stored.obj):
            self._queue.put_nowait(stored.name)

    async def run(self) -> None:
        while True:
            namespace = await self._queue.get()
            while not self._finalize(namespace):
                await asyncio.sleep(_NAMESPACE_RETRY_SECONDS)  # objects held by finalizers: look again

    def _finalize(self, namespace: str) -> bool:
        store = self._store
        ns_type = store.registry.get("", "v1", "namespaces")
        assert ns_type is not None
        ns = store.lookup(ns_type, "", namespace)
        if ns is None or not objects.is_deleting(ns.obj):
            return True
        namespaced = [(key, rtypes[0]) for key in store.storage_keys()
                      if (rtypes := store.registry.by_storage_key(key)) and rtypes[0].namespaced]
        for key, rtype in namespaced:
            for stored in store.items(key, namespace):
                # Objects held by finalizers are left alone (the call is a no-op for them).
                store.delete(rtype, namespace, stored.name, DeleteOptions(grace_period=0))
        if any(store.items(key, namespace) for key, _ in namespaced):
            return False
        store.remove_finalizer(ns_type, "", namespace, "kubernetes")
        return True
