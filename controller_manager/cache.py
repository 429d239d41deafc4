"""The informer cache: objects by key, with indexes (client-go's thread-safe store + indexer).

A parsed store keeps JSON dicts shared with every reader: treat them as read-only (copy before
changing one, e.g. ``objects.deep_copy`` or a fresh dict for a patch). A compact store (the Manager's
default) keeps packed bytes (jsonpack) and hands each reader a fresh dict. The reads (``get``, ``list``,
``by_index``) say so in their type, :data:`~controller_manager.objects.Obj` (a read-only mapping, at no
runtime cost). Reads that must see the controller's own writes go through :mod:`.mutationcache`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from . import objects
from .jsonpack import JsonPacker
from .objects import MutableObj, Obj

IndexFunc = Callable[[MutableObj], Iterable[str]]

NAMESPACE_INDEX = "namespace"

log = structlog.get_logger(__name__)


def namespace_index(obj: objects.Obj) -> builtins.list[str]:
    namespace = objects.namespace(obj)
    return [namespace] if namespace else []


# One copy of each dict key (and of the values of the keys below) for every cached object: json.loads
# shares equal keys only within one document, so without this each watch event brings its own
# "metadata", "name", "resourceVersion"... (about 1 KB for a small ConfigMap). Bounded, so that unique
# keys (e.g. generated data keys) cannot grow it without limit; strings past the bound stay unshared.
SHARED_STRINGS_MAX = 10_000
_SHARED_VALUE_KEYS = frozenset({"apiVersion", "kind", "namespace"})
_shared_strings: dict[str, str] = {}


def _share_new(text: str) -> str:
    if len(_shared_strings) < SHARED_STRINGS_MAX:
        return _shared_strings.setdefault(text, text)
    return text


def share_strings(value: Any) -> Any:
    """An equal copy of parsed JSON whose dict keys (and apiVersion/kind/namespace values) are shared.

    Only the identity of those strings changes (same keys, values and order), which takes about 40% off
    the memory of an object decoded on its own. Non-JSON types (and dict subclasses) are returned as is.
    """
    if type(value) is dict:
        shared = _shared_strings
        out: dict[Any, Any] = {}
        for raw_key, item in value.items():
            key = shared.get(raw_key) or _share_new(raw_key)
            if type(item) is dict or type(item) is list:
                out[key] = share_strings(item)
            elif key in _SHARED_VALUE_KEYS and type(item) is str:
                out[key] = shared.get(item) or _share_new(item)
            else:
                out[key] = item
        return out
    if type(value) is list:
        return [share_strings(item) if type(item) is dict or type(item) is list else item for item in value]
    return value


def share_item_strings(obj: Any) -> None:
    """For an item of a LIST page, in place: share its apiVersion, kind and metadata.namespace values.

    json.loads already shares dict keys within a page, so this leaves a LIST-filled object as small
    as :func:`share_strings` would, for a tenth of its time (no copy).
    """
    if type(obj) is not dict:
        return
    shared = _shared_strings
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if type(value) is str:
            obj[key] = shared.get(value) or _share_new(value)
    meta = obj.get("metadata")
    if type(meta) is dict:
        value = meta.get("namespace")
        if type(value) is str:
            meta["namespace"] = shared.get(value) or _share_new(value)


@dataclass(frozen=True, slots=True)
class Delta:
    """What changed in the store: ``added``, ``updated`` (with ``old``) or ``deleted``."""

    type: str
    obj: MutableObj
    old: MutableObj | None = None


class Indexer:
    """Objects by key plus named indexes; every mutation returns the delta it made."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None, *, compact: bool = False) -> None:
        # compact: keep each object as deflated JSON bytes (jsonpack: ~0.2x the JSON size, against ~3.6x for
        # parsed dicts) and decode it on every read; readers then get private copies.
        self.compact = compact
        self._packer = JsonPacker() if compact else None
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index}
        self._indexers.update(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes (allowed while empty, i.e. before the informer starts, as in client-go)."""
        for name, func in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            if self._items:
                raise ValueError("indexers can only be added before the informer has started")
            self._indexers[name] = func
            self._indices[name] = {}

    # ----------------------------------------------------------------- reads

    def _load(self, stored: Any) -> MutableObj:
        if self._packer is not None:
            return self._packer.unpack(stored)
        obj: MutableObj = stored
        return obj

    def _dump(self, obj: MutableObj) -> Any:
        return self._packer.pack(obj) if self._packer is not None else obj

    def pack(self, obj: MutableObj) -> Any:
        """``obj`` as this store keeps it (packed bytes if compact, else ``obj`` itself), for :meth:`replace_packed`."""
        return self._dump(obj)

    def get(self, key: str) -> Obj | None:
        """The object of ``key``, read-only (a compact store's is a private copy, a parsed store's is shared)."""
        stored = self._items.get(key)
        return None if stored is None else self._load(stored)

    def list(self) -> builtins.list[Obj]:
        return [self._load(stored) for stored in self._items.values()]

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        keys = self._index(index).get(value, ())
        return [self._load(self._items[k]) for k in keys]

    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        return sorted(self._index(index).get(value, ()))

    def has_index(self, name: str) -> bool:
        return name in self._indices

    def index_values(self, index: str) -> builtins.list[str]:
        return sorted(self._index(index))

    def _index(self, name: str) -> dict[str, set[str]]:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"index {name!r} does not exist") from None

    # ----------------------------------------------------------------- writes

    def upsert(self, obj: MutableObj, *, json_text: bytes | None = None) -> Delta:
        """Add or replace ``obj``; ``json_text``, its JSON as received, spares a compact store encoding it again."""
        packed = self._packer.pack_json(json_text) if json_text is not None and self._packer is not None else None
        return self._upsert(obj, packed)

    def _upsert(self, obj: MutableObj, packed: Any, *, old: MutableObj | None = None) -> Delta:
        """upsert(), storing ``packed`` (``obj`` as :meth:`pack` gives it) when the caller has it already, and
        taking ``old`` as the stored version when the caller has decoded it already."""
        key = objects.key(obj)
        values = self._index_values(obj)  # first: a failing index function must leave the store as it was
        if old is None:
            stored = self._items.get(key)
            old = self._load(stored) if stored is not None else None
        self._items[key] = self._dump(obj) if packed is None else packed
        self._reindex(key, self._index_values(old) if old is not None else None, values)
        return Delta("added", obj) if old is None else Delta("updated", obj, old)

    def delete(self, obj: MutableObj) -> Delta | None:
        key = objects.key(obj)
        stored = self._items.get(key)
        if stored is None:
            return None
        old = self._load(stored)
        values = self._index_values(old)
        del self._items[key]
        self._reindex(key, values, None)
        return Delta("deleted", old)

    def replace(self, items: Iterable[MutableObj]) -> builtins.list[Delta]:
        """Swap in a fresh list (a relist): adds, updates of changed objects, deletes of vanished ones.

        Objects that disappeared while the watch was down are reported as deleted with their last
        known state (client-go's DeletedFinalStateUnknown, already unwrapped).
        """
        return list(self._replace((obj, None) for obj in items))

    def replace_packed(self, packed: Iterable[Any]) -> Iterator[Delta]:
        """:meth:`replace` for objects given as :meth:`pack` made them; each delta is yielded once made.

        The store changes as the deltas are consumed (as client-go's DeltaFIFO applies a relist), so that a
        compact store decodes one object at a time instead of holding the whole list as dicts: that
        transient peak would leave the process's memory fragmented for good (docs/benchmarks.md, Memory).
        """
        return self._replace((self._load(item), item) for item in packed)

    def _replace(self, items: Iterable[tuple[MutableObj, Any]]) -> Iterator[Delta]:
        seen: set[str] = set()
        for obj, packed in items:
            key = objects.key(obj)
            stored = self._items.get(key)
            old = self._load(stored) if stored is not None else None
            if old is not None and objects.resource_version(old) == objects.resource_version(obj):
                seen.add(key)
                continue
            try:
                delta = self._upsert(obj, packed, old=old)
            except Exception:  # an index function failed on it: leave it out, keep the rest of the cache
                log.exception("object left out of the cache: an index function failed on it", key=key)
                continue
            seen.add(key)
            yield delta
        for key in [k for k in self._items if k not in seen]:
            old = self._load(self._items.pop(key))
            self._reindex(key, self._index_values(old), None)
            yield Delta("deleted", old)

    def _index_values(self, obj: MutableObj) -> dict[str, set[str]]:
        return {name: set(func(obj)) for name, func in self._indexers.items()}

    def _reindex(self, key: str, old: dict[str, set[str]] | None, new: dict[str, set[str]] | None) -> None:
        for name in self._indexers:
            index = self._indices[name]
            old_values = old[name] if old is not None else set()
            new_values = new[name] if new is not None else set()
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values - old_values:
                index.setdefault(value, set()).add(key)
