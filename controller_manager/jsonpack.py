"""Objects as small bytes: compact JSON, deflated against a preset dictionary (the compact cache's form).

Objects of one resource repeat each other's keys, API versions, condition texts and label values, but a
single object of ~700 B barely compresses on its own (zlib: 55%). Deflated against the JSON of another
object of the same resource as zlib's preset dictionary, a ResourceBinding of 692 B becomes about 120 B,
for ~8 us to pack and ~1 us to inflate (before json.loads) (docs/benchmarks.md, Memory).

Every pack builds a compressor, and zlib allocates its window and hash tables each time: with a
32 KiB window and memLevel 9 that is ~384 KiB, which glibc hands back to the OS and faults in again,
costing 35-100 us per pack; an 8 KiB window at memLevel 8 packs the same objects to the same size
in about half of that or less.
"""

from __future__ import annotations

import json
import zlib

from .objects import MutableObj

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_WBITS = 13  # raw deflate (negative below), 8 KiB window: a dictionary object, and most objects, fit in it
_LEVEL = 1  # level 6 saves another ~12% at ~25% more CPU per pack
_MEM_LEVEL = 8  # zlib's default; 9 doubles its hash table for no smaller output here
MAX_DICTIONARY = 1 << _WBITS  # zlib only uses a window's worth of a dictionary: its tail


class JsonPacker:
    """Packs and unpacks the objects of one store; the first object packed becomes the dictionary for all."""

    __slots__ = ("_dictionary",)

    def __init__(self) -> None:
        self._dictionary: bytes | None = None

    def pack(self, obj: MutableObj) -> bytes:
        return self.pack_json(_ENCODER.encode(obj).encode("utf-8"))

    def pack_json(self, raw: bytes) -> bytes:
        """:meth:`pack` of an object given as its JSON text (e.g. as the server sent it)."""
        if self._dictionary is None:
            self._dictionary = raw[-MAX_DICTIONARY:]
        deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, -_WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY,
                                   self._dictionary)
        return deflate.compress(raw) + deflate.flush()

    def unpack(self, data: bytes) -> MutableObj:
        """A fresh object (nobody else holds it) from what :meth:`pack` returned."""
        if self._dictionary is None:
            raise ValueError("nothing was packed with this packer")
        inflate = zlib.decompressobj(-_WBITS, self._dictionary)
        obj: MutableObj = json.loads(inflate.decompress(data))
        return obj
