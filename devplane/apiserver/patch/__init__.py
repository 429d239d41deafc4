"""The three PATCH flavours kube-apiserver accepts, applied to plain JSON values.

* ``application/merge-patch+json``: RFC 7386 (``mergepatch.py``).
* ``application/json-patch+json``: RFC 6902 (``jsonpatch.py``), with kube's error split:
  a malformed operations document is 400, an operation that does not apply is 422.
* ``application/strategic-merge-patch+json``: k8s.io/apimachinery ``strategicpatch``
  (``strategic.py``), driven by the Go types' tags kept as data (``tags.py``).

Every function works on deep copies and returns a new value: the caller keeps the stored
object untouched, so a patch that fails half-way stores nothing. This package face is what
the server uses.
"""

from __future__ import annotations

from devplane.apiserver.patch.jsonpatch import apply_json_patch, parse_pointer
from devplane.apiserver.patch.mergepatch import apply_merge_patch
from devplane.apiserver.patch.strategic import apply_strategic_merge_patch
from devplane.apiserver.patch.tags import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    NON_STRATEGIC_MEDIA_TYPES,
    PATCH_MEDIA_TYPES,
    STRATEGIC_MERGE_KINDS,
    STRATEGIC_MERGE_PATCH,
    supports_strategic_merge_patch,
)

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "NON_STRATEGIC_MEDIA_TYPES",
    "PATCH_MEDIA_TYPES",
    "STRATEGIC_MERGE_KINDS",
    "STRATEGIC_MERGE_PATCH",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "parse_pointer",
    "supports_strategic_merge_patch",
]
