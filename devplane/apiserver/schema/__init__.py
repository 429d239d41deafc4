"""Structural OpenAPI v3 schemas of custom resources: defaulting, pruning and validation.

kube-apiserver runs three steps on every custom-resource write: it applies ``default:``
values, prunes the fields the schema does not declare, and validates the result with
kube-openapi's validator, whose errors it turns into ``field.Error`` causes. This package
does the same three steps and reproduces the cause texts, so a 422 from the dev server
reads like one from a real server. :class:`StructuralSchema` is its face; the schema is
compiled once (``compile.py``), then each step is a walk of its own (``defaults.py``,
``prune.py``, ``validate.py`` and ``extensions.py``), with the causes worded by ``render.py``.

Field paths use newer kube's form: ``spec.workloads[0].name``, map keys in brackets.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.errors import Cause
from devplane.apiserver.schema.compile import Node
from devplane.apiserver.schema.defaults import default_map
from devplane.apiserver.schema.extensions import walk_extensions
from devplane.apiserver.schema.prune import prune_map
from devplane.apiserver.schema.validate import validate_object

__all__ = ["StructuralSchema"]


class StructuralSchema:
    """A CRD version's ``openAPIV3Schema``, compiled once, applied to every write of that version.

    The server calls :meth:`default`, :meth:`prune`, then :meth:`validate` (a non-empty
    result is a 422). ``apiVersion``, ``kind`` and ``metadata`` at the root are left to the
    server: they are never defaulted, pruned or validated here.
    """

    __slots__ = ("_root",)

    def __init__(self, openapi_v3_schema: dict[str, Any]) -> None:
        self._root = Node(openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {})

    def default(self, obj: dict[str, Any]) -> None:
        """Apply ``default:`` values in place (only inside parent objects that exist)."""
        if self._root.has_defaults:
            default_map(self._root, obj, root=True)

    def prune(self, obj: dict[str, Any]) -> None:
        """Drop undeclared fields, and non-nullable nulls that have no default, in place."""
        prune_map(self._root, obj, False, root=True)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        """The causes kube-apiserver would report for ``obj`` (``[]`` when it is valid)."""
        errs: list[Cause] = []
        root = self._root
        validate_object(root, obj, "", errs, True)
        if root.has_extra:
            embedded: list[Cause] = []
            lists: list[Cause] = []
            walk_extensions(root, obj, "", embedded, lists, root=True)
            errs.extend(embedded)
            errs.extend(lists)
        return errs
