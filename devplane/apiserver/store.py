"""The object store: kube-apiserver's registry semantics over an in-memory table.

All state lives in memory (parsed JSON plus its encoded bytes); a journal makes it durable.
Every mutation runs synchronously on the event loop between two awaits, so checks and
writes are atomic without locks (20 concurrent updates from one resourceVersion: one wins).
Nothing is exposed before it is durable: writes answer after their commit, reads wait for
the commit of the resourceVersion they show, and watchers get events in commit order.
"""

from __future__ import annotations

import asyncio
import bisect
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import structlog

from controller_manager import objects
from kube_api.pods import is_pod_terminated
from kube_api.validation import parse_uint64

from . import errors
from .codec import decode_json, encode_json, now_rfc3339
from .crds import established_status, types_for_crd, validate_crd
from .errors import Cause, StatusError
from .persistence import Row, SqliteJournal
from .resources import Registry, ResourceType
from .validation import generate_name, validate_object_meta
from .watch import Event, History, Stored, Watcher

log = structlog.get_logger(__name__)

T = TypeVar("T")
CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
NAMESPACE_KEY = "/namespaces"
SNAPSHOT_LIMIT = 64

Mutator = Callable[[ResourceType, dict[str, Any] | None, dict[str, Any]], None]
RemovalListener = Callable[[ResourceType, Stored], None]


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    uid: str | None = None
    resource_version: str | None = None
    propagation: str = "Background"
    grace_period: int | None = None


@dataclass
class FieldChecks:
    """The request's ``fieldValidation`` mode and the warnings it produced."""

    mode: str = ""
    warnings: list[str] = field(default_factory=list)

    def report(self, rtype: ResourceType, unknown: list[str]) -> None:
        if not unknown:
            return
        if self.mode == "Strict":
            version = rtype.api_version.rpartition("/")[2]
            fields = ", ".join(f'unknown field "{f}"' for f in unknown)
            raise errors.bad_request(f'{rtype.kind} in version "{version}" cannot be handled as a {rtype.kind}: '
                                     f"strict decoding error: {fields}")
        self.warnings.extend(f'unknown field "{f}"' for f in unknown)


def etcd_key(namespace: str, name: str) -> str:
    """The key lists are ordered and paged by: ``kube-system/x`` sorts before ``kube/y``, as in etcd."""
    return f"{namespace}/{name}" if namespace else name


def namespace_slice(ordered: Sequence[T], namespace: str, key: Callable[[T], str]) -> list[T]:
    """The part of a sequence in etcd key order that is in ``namespace`` ("ns/..." keys are contiguous,
    and "0" follows "/"), found by bisection."""
    lo = bisect.bisect_left(ordered, namespace + "/", key=key)
    return list(ordered[lo:bisect.bisect_left(ordered, namespace + "0", lo, key=key)])


def _etcd_key_of(ident: tuple[str, str]) -> str:
    return etcd_key(*ident)


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")
"""ObjectMeta fields tagged ``omitempty``: kube never stores or answers them empty (``labels: {}`` after the
last label is removed reads back as no ``labels`` at all)."""


def drop_empty_meta(meta: dict[str, Any]) -> None:
    for key in OMITTED_WHEN_EMPTY:
        if key in meta and not meta[key]:
            del meta[key]


def _owner_uids(obj: dict[str, Any]) -> list[str]:
    refs = objects.owner_references(obj)
    return [r["uid"] for r in refs if isinstance(r, dict) and isinstance(r.get("uid"), str)]


def unknown_fields(before: Any, after: Any, path: str = "") -> list[str]:
    """Paths present in ``before`` that pruning removed (for fieldValidation Strict/Warn)."""
    found: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            sub = f"{path}.{key}" if path else key
            if key not in after:
                found.append(sub)
            else:
                found.extend(unknown_fields(value, after[key], sub))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            found.extend(unknown_fields(b, a, f"{path}[{i}]"))
    return found


class Store:
    """Objects by storage key, one resourceVersion counter, watch histories, snapshots for paging."""

    def __init__(self, registry: Registry, *, data_dir: Path | None, history_size: int,
                 watch_buffer: int = 100_000) -> None:
        self.registry = registry
        self.rv = 0
        self.durable_rv = 0
        self._cache_start_rv = 0  # like kube's watch cache: every event after this is watchable
        self._data: dict[str, dict[tuple[str, str], Stored]] = {}
        self._sorted: dict[str, list[tuple[str, str]]] = {}
        self._histories: dict[str, History] = {}
        self._history_size = history_size
        self.watch_buffer = watch_buffer
        self._journal = SqliteJournal(data_dir, self._on_committed) if data_dir is not None else None
        self._unpublished: list[Event] = []
        self._durable_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._snapshots: OrderedDict[tuple[str, int], list[Stored]] = OrderedDict()
        self._uids: dict[str, tuple[str, str, str]] = {}
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}
        self.mutators: dict[str, list[Mutator]] = {}
        self.removal_listeners: list[RemovalListener] = []
        self.write_listeners: list[Callable[[ResourceType, Stored], None]] = []

    # ----------------------------------------------------------------- lifecycle

    async def open(self) -> None:
        """Load persisted objects (CRDs first, so their resources are served) and start counting."""
        if self._journal is None:
            return
        last_rv, rows = await self._journal.open()
        rows.sort(key=lambda r: (r.storage_key != CRD_KEY, r.rv))
        for row in rows:
            assert row.data is not None
            obj = decode_json(row.data)
            stored = Stored(obj, row.data, row.rv)
            self._put(row.storage_key, stored)
            if row.storage_key == CRD_KEY:
                self._serve_crd(obj)
        self.rv = self.durable_rv = self._cache_start_rv = last_rv
        for history in self._histories.values():
            history.floor = history.latest = last_rv
        log.info("storage loaded", objects=len(rows), resource_version=last_rv)

    async def run_writer(self) -> None:
        if self._journal is not None:
            await self._journal.run_writer()

    def close_watchers(self) -> None:
        """End every watch stream (server shutdown): clients re-watch elsewhere or later."""
        for history in self._histories.values():
            history.close_all()

    async def close(self) -> None:
        self.close_watchers()
        if self._journal is not None:
            await self._journal.close()

    # ----------------------------------------------------------------- durability and events

    async def wait_durable(self, rv: int) -> None:
        if rv <= self.durable_rv:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._durable_waiters.append((rv, future))
        await future

    def _on_committed(self, rows: Sequence[Row]) -> None:
        self.durable_rv = max(self.durable_rv, rows[-1].rv)
        self._publish_until(self.durable_rv)

    def _publish_until(self, rv: int) -> None:
        pending = self._unpublished
        i = 0
        while i < len(pending) and pending[i].rv <= rv:
            self.history(pending[i].storage_key).append(pending[i])
            i += 1
        del pending[:i]
        waiters, self._durable_waiters = self._durable_waiters, []
        for want, fut in waiters:
            if want <= self.durable_rv:
                if not fut.done():
                    fut.set_result(None)
            else:
                self._durable_waiters.append((want, fut))

    def history(self, storage_key: str) -> History:
        history = self._histories.get(storage_key)
        if history is None:
            # Every event of this type since the cache started is in it (histories are created
            # by their first event), so its window starts there, not at this type's first write.
            history = History(self._history_size, self._cache_start_rv)
            self._histories[storage_key] = history
        return history

    def attach_watcher(self, storage_key: str, watcher: Watcher, from_rv: int) -> None:
        """Replay history after ``from_rv`` into the watcher, then make it live (atomically)."""
        history = self.history(storage_key)
        for event in history.since(from_rv):
            watcher.offer(event)
        history.watchers.add(watcher)

    def detach_watcher(self, storage_key: str, watcher: Watcher) -> None:
        self.history(storage_key).watchers.discard(watcher)

    # ----------------------------------------------------------------- low-level table access

    def _put(self, key: str, stored: Stored) -> None:
        table = self._data.setdefault(key, {})
        ident = (stored.namespace, stored.name)
        old = table.get(ident)
        if old is None:
            self._sorted.pop(key, None)
        else:
            self._unindex(key, old)
        table[ident] = stored
        uid = objects.uid(stored.obj)
        if uid:
            self._uids[uid] = (key, stored.namespace, stored.name)
        for owner in _owner_uids(stored.obj):
            self._dependents.setdefault(owner, set()).add((key, stored.namespace, stored.name))

    def _unindex(self, key: str, stored: Stored) -> None:
        uid = objects.uid(stored.obj)
        if uid and self._uids.get(uid) == (key, stored.namespace, stored.name):
            del self._uids[uid]
        for owner in _owner_uids(stored.obj):
            deps = self._dependents.get(owner)
            if deps is not None:
                deps.discard((key, stored.namespace, stored.name))
                if not deps:
                    del self._dependents[owner]

    def _drop(self, key: str, stored: Stored) -> None:
        table = self._data.get(key, {})
        if table.pop((stored.namespace, stored.name), None) is not None:
            self._sorted.pop(key, None)
            self._unindex(key, stored)

    def _commit(self, rtype: ResourceType, etype: str, obj: dict[str, Any], prev: Stored | None) -> Stored:
        """Give the write the next resourceVersion, apply it in memory, queue it for the journal."""
        self.rv += 1
        rv = self.rv
        obj["metadata"]["resourceVersion"] = str(rv)
        stored = Stored(obj, encode_json(obj), rv)
        key = rtype.storage_key
        if etype == "DELETED":
            assert prev is not None
            self._drop(key, prev)
        else:
            self._put(key, stored)
        event = Event(etype, rv, key, stored, prev)
        if self._journal is None:
            self.durable_rv = rv
            self.history(key).append(event)
        else:
            self._unpublished.append(event)
            self._journal.submit(Row(key, stored.namespace, stored.name, rv,
                                     None if etype == "DELETED" else stored.raw))
        for listener in self.write_listeners:
            listener(rtype, stored)
        if etype == "DELETED":
            for removal in self.removal_listeners:
                removal(rtype, stored)
        return stored

    # ----------------------------------------------------------------- reads

    def lookup(self, rtype: ResourceType, namespace: str, name: str) -> Stored | None:
        return self._data.get(rtype.storage_key, {}).get((namespace, name))

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Stored:
        stored = self.lookup(rtype, namespace, name)
        if stored is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return stored

    def exists_uid(self, uid: str) -> bool:
        return uid in self._uids

    def locate_uid(self, uid: str) -> tuple[str, str, str] | None:
        return self._uids.get(uid)

    def dependents_of(self, uid: str) -> list[tuple[str, str, str]]:
        return sorted(self._dependents.get(uid, ()))

    def items(self, storage_key: str, namespace: str = "") -> list[Stored]:
        """Objects of a resource in etcd's order: by the key string ``namespace/name`` (or ``name``)."""
        table = self._data.get(storage_key, {})
        keys = self._sorted.get(storage_key)
        if keys is None:
            keys = sorted(table, key=_etcd_key_of)
            self._sorted[storage_key] = keys
        if namespace:
            keys = namespace_slice(keys, namespace, _etcd_key_of)
        return [table[k] for k in keys]

    def storage_keys(self) -> list[str]:
        return list(self._data)

    def snapshot(self, storage_key: str, rv: int, items: list[Stored]) -> None:
        self._snapshots[(storage_key, rv)] = items
        self._snapshots.move_to_end((storage_key, rv))
        while len(self._snapshots) > SNAPSHOT_LIMIT:
            self._snapshots.popitem(last=False)

    def snapshot_at(self, storage_key: str, rv: int) -> list[Stored] | None:
        snap = self._snapshots.get((storage_key, rv))
        if snap is None and self.history(storage_key).latest <= rv:
            return self.items(storage_key)  # nothing of this resource changed since: now == then
        return snap

    # ----------------------------------------------------------------- create

    def create(self, rtype: ResourceType, namespace: str, obj: dict[str, Any], *,
               dry_run: bool = False, checks: FieldChecks | None = None, refuse_resource_version: bool = False
               ) -> Stored:
        """Create, in kube's order: the namespace (admission), validation (422), then storage: a resourceVersion
        the client set (``refuse_resource_version``: etcd3's plain 500, not on a dry run), the name taken (409)."""
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
            for _ in range(8):
                candidate = generate_name(meta["generateName"])
                if self.lookup(rtype, namespace, candidate) is None:
                    meta["name"] = candidate
                    break
        name = meta.get("name") or ""
        if rtype.namespaced:
            self._check_namespace_open(rtype, namespace, name)
        self._validate_meta(rtype, obj)
        given_version = meta.get("resourceVersion")
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                    "managedFields"):
            meta.pop(key, None)
        drop_empty_meta(meta)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rtype.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rtype.status_on_create == "reset":
            obj["status"] = dict(rtype.create_status or {})
        elif rtype.status_on_create == "drop":
            obj.pop("status", None)
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        for mutate in self.mutators.get(rtype.storage_key, ()):
            mutate(rtype, None, obj)
        self._apply_schema(rtype, obj, checks)
        # etcd3 refuses a version that parses as a number other than 0, and ignores anything else
        if refuse_resource_version and not dry_run and parse_uint64(str(given_version or "")):
            raise errors.plain_error("resourceVersion should not be set on objects to be created")
        if self.lookup(rtype, namespace, name) is not None:
            raise errors.already_exists(rtype.plural, rtype.group, name)
        self._set_storage_version(rtype, obj)
        if dry_run:
            return Stored(obj, encode_json(obj), self.rv)
        stored = self._commit(rtype, "ADDED", obj, None)
        if rtype.storage_key == CRD_KEY:
            self._serve_crd(obj)
        return stored

    def _check_namespace_open(self, rtype: ResourceType, namespace: str, name: str) -> None:
        ns_type = self.registry.get("", "v1", "namespaces")
        assert ns_type is not None
        ns = self.lookup(ns_type, "", namespace)
        if ns is None:
            raise StatusError(404, "NotFound", f'namespaces "{namespace}" not found',
                              {"name": namespace, "kind": "namespaces"})
        if objects.is_deleting(ns.obj):
            qualified = errors.qualified_resource(rtype.plural, rtype.group)
            details: dict[str, Any] = {"name": name}
            if rtype.group:
                details["group"] = rtype.group
            details["kind"] = rtype.plural
            details["causes"] = [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                  "message": f"namespace {namespace} is being terminated"}]
            raise errors.forbidden(f'{qualified} "{name}" is forbidden: unable to create new content in '
                                   f"namespace {namespace} because it is being terminated", details)

    def _validate_meta(self, rtype: ResourceType, obj: dict[str, Any], *, update: bool = False) -> None:
        causes = validate_object_meta(obj, namespaced=rtype.namespaced, name_rule=rtype.name_rule,
                                      builtin=rtype.builtin, update=update)
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, objects.name(obj), causes)

    def _apply_schema(self, rtype: ResourceType, obj: dict[str, Any], checks: FieldChecks | None = None) -> None:
        if rtype.schema is not None:
            rtype.schema.default(obj)
            if checks is not None and checks.mode in ("Strict", "Warn"):
                before = decode_json(encode_json(obj))
                rtype.schema.prune(obj)
                checks.report(rtype, [f for f in unknown_fields(before, obj) if f != "status"
                                      or not rtype.has_status_subresource])
            else:
                rtype.schema.prune(obj)
            causes = rtype.schema.validate(obj)
            if causes:
                raise errors.invalid(rtype.kind, rtype.group, objects.name(obj), causes)
        if rtype.storage_key == CRD_KEY:
            causes = validate_crd(obj)
            if causes:
                raise errors.invalid(rtype.kind, rtype.group, objects.name(obj), causes)

    def _set_storage_version(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if rtype.version != rtype.storage_version:
            obj["apiVersion"] = f"{rtype.group}/{rtype.storage_version}" if rtype.group else \
                rtype.storage_version

    # ----------------------------------------------------------------- update and patch

    def update(self, rtype: ResourceType, namespace: str, name: str, obj: dict[str, Any], *,
               subresource: str = "", require_rv: bool = True, dry_run: bool = False,
               checks: FieldChecks | None = None) -> Stored:
        current = self.get(rtype, namespace, name)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the "
                                     f"URL ({name})")
        if rtype.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                     "on the request")
        given_rv = meta.get("resourceVersion")
        if given_rv:
            if str(given_rv) != str(current.rv):
                raise errors.conflict(rtype.plural, rtype.group, name)
        elif require_rv and not rtype.builtin:
            raise errors.invalid(rtype.kind, rtype.group, name, [Cause(
                "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion")])
        old = current.obj
        if subresource == "status":
            new = decode_json(current.raw)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        elif subresource == "finalize":
            new = decode_json(current.raw)
            finalizers = objects.spec(obj).get("finalizers") or []
            new.setdefault("spec", {})["finalizers"] = finalizers
        else:
            new = obj
            new_meta = new["metadata"]
            for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "generation"):
                if key in old["metadata"]:
                    new_meta[key] = old["metadata"][key]
                else:
                    new_meta.pop(key, None)
            new_meta["name"] = name
            if rtype.namespaced:
                new_meta["namespace"] = namespace
            else:
                new_meta.pop("namespace", None)
            new_meta.pop("selfLink", None)
            new_meta.pop("managedFields", None)
            if rtype.storage_key == NAMESPACE_KEY:
                new.setdefault("spec", {})["finalizers"] = objects.spec(old).get("finalizers") or []
            if rtype.has_status_subresource:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            new["apiVersion"] = rtype.api_version
            new["kind"] = rtype.kind
            self._validate_meta(rtype, new, update=True)
            if objects.is_deleting(old):
                added = [f for f in new_meta.get("finalizers") or [] if f not in objects.finalizers(old)]
                if added:
                    quoted = ", ".join(f'"{f}"' for f in added)
                    raise errors.invalid(rtype.kind, rtype.group, name, [Cause.forbidden(
                        "metadata.finalizers", f"no new finalizers can be added if the object is being deleted, "
                                               f"found new finalizers []string{{{quoted}}}")])
        for mutate in self.mutators.get(rtype.storage_key, ()):
            mutate(rtype, old, new)
        self._apply_schema(rtype, new, checks)
        self._set_storage_version(rtype, new)
        drop_empty_meta(new["metadata"])
        if rtype.has_generation and _spec_part(new) != _spec_part(old):
            new["metadata"]["generation"] = objects.generation(old) + 1
        new["metadata"]["resourceVersion"] = str(current.rv)
        if new == old:
            return current  # nothing changed: no write, same resourceVersion, no event
        if dry_run:
            return Stored(new, encode_json(new), current.rv)
        if objects.is_deleting(new) and not self._finalizers(rtype, new):
            self._commit(rtype, "DELETED", decode_json(encode_json(new)), current)
            return Stored(new, encode_json(new), current.rv)
        stored = self._commit(rtype, "MODIFIED", new, current)
        if rtype.storage_key == CRD_KEY:
            self._serve_crd(new)
        return stored

    def patch(self, rtype: ResourceType, namespace: str, name: str,
              apply: Callable[[dict[str, Any]], Any], *, subresource: str = "",
              dry_run: bool = False, checks: FieldChecks | None = None) -> Stored:
        current = self.get(rtype, namespace, name)
        patched = apply(decode_json(current.raw))
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        return self.update(rtype, namespace, name, patched, subresource=subresource, require_rv=False,
                           dry_run=dry_run, checks=checks)

    # ----------------------------------------------------------------- delete

    @staticmethod
    def _finalizers(rtype: ResourceType, obj: dict[str, Any]) -> list[str]:
        found = list(objects.finalizers(obj))
        if rtype.storage_key == NAMESPACE_KEY:
            found += list(objects.spec(obj).get("finalizers") or [])
        return found

    def delete(self, rtype: ResourceType, namespace: str, name: str, options: DeleteOptions, *,
               dry_run: bool = False) -> tuple[Stored, bool]:
        """Delete, or start deleting; returns (object, gone). ``gone`` is False while finalizers hold it."""
        current = self.get(rtype, namespace, name)
        uid = objects.uid(current.obj)
        if options.uid is not None and options.uid != uid:
            raise errors.precondition_conflict(
                rtype.kind, rtype.group, name,
                f"the UID in the precondition ({options.uid}) does not match the UID in record "
                f"({uid}). The object might have been deleted and then recreated")
        if options.resource_version is not None and options.resource_version != str(current.rv):
            raise errors.precondition_conflict(
                rtype.kind, rtype.group, name,
                f"the ResourceVersion in the precondition ({options.resource_version}) does not match the "
                f"ResourceVersion in record ({current.rv}). The object might have been modified")
        grace = self._grace_period(rtype, current.obj, options)
        finalizers = self._finalizers(rtype, current.obj)
        if options.propagation == "Orphan" and "orphan" not in finalizers and not dry_run:
            self._orphan_dependents(uid)
        if options.propagation == "Foreground" and not dry_run and self.dependents_of(uid):
            finalizers = [*finalizers, "foregroundDeletion"]
        if finalizers or grace > 0:
            # Held by finalizers, or a pod terminating gracefully (its kubelet finishes it with grace 0).
            if dry_run or (objects.is_deleting(current.obj) and grace > 0):
                return current, False
            new = decode_json(current.raw)
            new_meta = new["metadata"]
            if "foregroundDeletion" in finalizers and "foregroundDeletion" not in (new_meta.get("finalizers") or []):
                new_meta["finalizers"] = [*(new_meta.get("finalizers") or []), "foregroundDeletion"]
            if not new_meta.get("deletionTimestamp"):
                new_meta["deletionTimestamp"] = now_rfc3339(grace)
                if rtype.has_generation:
                    new_meta["generation"] = int(new_meta.get("generation") or 0) + 1
            new_meta["deletionGracePeriodSeconds"] = grace
            if rtype.storage_key == NAMESPACE_KEY:
                new.setdefault("status", {})["phase"] = "Terminating"
            if new == current.obj:
                return current, False
            return self._commit(rtype, "MODIFIED", new, current), False
        if dry_run:
            return current, True
        final = decode_json(current.raw)
        return self._commit(rtype, "DELETED", final, current), True

    @staticmethod
    def _grace_period(rtype: ResourceType, obj: dict[str, Any], options: DeleteOptions) -> int:
        """Pods bound to a node terminate gracefully (kube's pod strategy); everything else at once."""
        if rtype.storage_key != "/pods":
            return 0
        if not objects.spec(obj).get("nodeName"):
            return 0
        if is_pod_terminated(obj):
            return 0
        if options.grace_period is not None:
            return max(options.grace_period, 0)
        grace = objects.spec(obj).get("terminationGracePeriodSeconds")
        return int(grace) if isinstance(grace, int) else 30

    def _orphan_dependents(self, uid: str) -> None:
        for key, ns, name in self.dependents_of(uid):
            rtypes = self.registry.by_storage_key(key)
            dep = self._data.get(key, {}).get((ns, name))
            if not rtypes or dep is None:
                continue
            new = decode_json(dep.raw)
            refs = [r for r in objects.owner_references(new) if r.get("uid") != uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(rtypes[0], "MODIFIED", new, dep)

    def remove_finalizer(self, rtype: ResourceType, namespace: str, name: str, finalizer: str) -> None:
        """Used by the in-process controllers (foreground GC, namespace finalization)."""
        current = self.lookup(rtype, namespace, name)
        if current is None:
            return
        new = decode_json(current.raw)
        if rtype.storage_key == NAMESPACE_KEY and finalizer == "kubernetes":
            spec = new.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != finalizer]
            self.update(rtype, namespace, name, new, subresource="finalize", require_rv=False)
            return
        new["metadata"]["finalizers"] = [f for f in objects.finalizers(new) if f != finalizer]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self.update(rtype, namespace, name, new, require_rv=False)

    # ----------------------------------------------------------------- CRDs

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        if objects.is_deleting(crd):
            return
        name = objects.name(crd)
        self.registry.remove_crd(name)
        for rtype in types_for_crd(crd):
            self.registry.add(rtype)

    def crd_create_status(self, _rtype: ResourceType, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Mutator: a stored CRD is immediately Established (kube's CRD controllers do this)."""
        if old is None or not objects.status(old).get("conditions"):
            if isinstance(new.get("spec"), dict) and not validate_crd(new):
                new["status"] = established_status(new, now_rfc3339())
        else:
            new["status"] = old["status"]

    def drop_crd_objects(self, crd: Stored) -> None:
        """A CRD was removed: delete its objects (DELETED events) and stop serving it."""
        types = self.registry.remove_crd(crd.name)
        if not types:
            return
        key = types[0].storage_key
        for stored in self.items(key):
            self._commit(types[0], "DELETED", decode_json(stored.raw), stored)
        history = self._histories.get(key)
        if history is not None:
            history.close_all()
