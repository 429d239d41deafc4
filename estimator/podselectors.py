"""Operator-declared workload kinds: how to find a custom kind's Pods, read from a YAML file.

Karmada's estimator finds only a Deployment's Pods (#4905, #5987); a FlinkDeployment's or any other
custom kind's Pods are found here by a label selector built from the workload, declared by the
operator with no code change (``karmada-descheduler --unschedulable-pod-selectors FILE``)::

    - apiVersion: flink.apache.org/v1beta1
      kind: FlinkDeployment
      resource: flinkdeployments                      # optional: lower-case kind + "s"
      podSelector: "app={name},component=taskmanager"

``podSelector`` is a label selector string (``kubectl get pods -l`` syntax) in which ``{name}``,
``{namespace}`` and ``{label:KEY}`` are replaced by the workload's name, namespace and the value
of its label ``KEY``. Every entry is checked when the file is loaded (:func:`load_pod_selectors`),
so a typo stops the process at start instead of silently judging the wrong Pods.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from kube_api.selectors import LabelPredicate, parse_label_selector
from kube_api.validation import is_dns1123_label, is_qualified_name

BUILTIN_KINDS = frozenset({("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet")})
"""Kinds whose Pods are found by ownership; a file may not redeclare them."""

_FIELDS = ("apiVersion", "kind", "resource", "podSelector")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_SAMPLE = "sample"  # what each placeholder becomes when the file is checked


class PodSelectorsError(ValueError):
    """The file cannot be used; the message names the file, the entry and why, on one line."""


@dataclass(frozen=True)
class DeclaredKind:
    """One entry of the file: a custom kind, its resource on the members and its Pod selector template."""

    api_version: str
    kind: str
    resource: Resource
    pod_selector: str

    def selector_for(self, workload: Obj) -> LabelPredicate:
        """The Pod selector of ``workload``; ``ValueError`` when a ``{label:KEY}`` is missing on it or
        the rendered selector is not a valid one (a name too long for a label value, say)."""
        return _compiled(render(self.pod_selector, objects.name(workload), objects.namespace(workload),
                                objects.labels(workload)))


def render(template: str, name: str, namespace: str, labels: Mapping[str, str]) -> str:
    """``template`` with ``{name}``, ``{namespace}`` and ``{label:KEY}`` replaced."""
    def value(match: re.Match[str]) -> str:
        placeholder = match[1]
        if placeholder == "name":
            return name
        if placeholder == "namespace":
            return namespace
        key = placeholder.removeprefix("label:")
        if key != placeholder and key in labels:
            return labels[key]
        if key != placeholder:
            raise ValueError(f"the workload has no label {key!r}")
        raise ValueError(f"unknown placeholder {{{placeholder}}}")

    return _PLACEHOLDER.sub(value, template)


@functools.lru_cache(maxsize=4096)
def _compiled(selector: str) -> LabelPredicate:
    return parse_label_selector(selector)


def _check_template(template: str) -> None:
    """Placeholders known, braces balanced, and a valid selector once rendered."""
    for match in _PLACEHOLDER.finditer(template):
        placeholder = match[1]
        key = placeholder.removeprefix("label:")
        if placeholder not in ("name", "namespace") and (key == placeholder or is_qualified_name(key)):
            raise ValueError(f"unknown placeholder {{{placeholder}}}: use {{name}}, {{namespace}} or {{label:KEY}}")
    if "{" in _PLACEHOLDER.sub("", template) or "}" in _PLACEHOLDER.sub("", template):
        raise ValueError(f"unbalanced brace in podSelector {template!r}")
    try:
        parse_label_selector(_PLACEHOLDER.sub(_SAMPLE, template))
    except ValueError as exc:
        raise ValueError(f"podSelector {template!r} is not a valid label selector: {exc}") from None


def parse_entry(entry: Any) -> DeclaredKind:
    """One entry as a :class:`DeclaredKind`; ``ValueError`` saying what is wrong with it."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected a mapping with {', '.join(_FIELDS)}, got {type(entry).__name__}")
    unknown = sorted(set(map(str, entry)) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; the fields are {', '.join(_FIELDS)}")
    for field in ("apiVersion", "kind", "podSelector"):  # an empty podSelector would select every Pod
        if not isinstance(entry.get(field), str) or not entry[field].strip():
            raise ValueError(f"{field} is required (a non-empty string)")
    api_version, kind, template = entry["apiVersion"].strip(), entry["kind"].strip(), entry["podSelector"]
    group, _, version = api_version.rpartition("/")
    if not group or not version or "/" in group:
        raise ValueError(f"apiVersion {api_version!r} is not group/version (a custom resource's)")
    if not _KIND.fullmatch(kind):
        raise ValueError(f"kind {kind!r} is not a kind name")
    if (api_version, kind) in BUILTIN_KINDS:
        raise ValueError(f"{kind} is built in: its Pods are found by ownership")
    plural = entry.get("resource", kind.lower() + "s")
    if not isinstance(plural, str) or is_dns1123_label(plural):
        raise ValueError(f"resource {plural!r} is not a resource name (the plural, e.g. flinkdeployments)")
    _check_template(template)
    return DeclaredKind(api_version, kind, Resource(group, version, plural, kind, True), template)


def load_pod_selectors(path: str | Path) -> list[DeclaredKind]:
    """The file's entries; :class:`PodSelectorsError` (file, entry, why) for anything unusable."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PodSelectorsError(f"{path}: cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        raise PodSelectorsError(f"{path}: not valid YAML: {_yaml_reason(exc)}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise PodSelectorsError(f"{path}: expected a list of entries (apiVersion, kind, podSelector), "
                                f"got {type(data).__name__}")
    declared: dict[tuple[str, str], int] = {}
    result = []
    for number, entry in enumerate(data, start=1):
        where = _describe(entry, number)
        try:
            kind = parse_entry(entry)
        except ValueError as exc:
            raise PodSelectorsError(f"{path}: {where}: {exc}") from None
        first = declared.setdefault((kind.api_version, kind.kind), number)
        if first != number:
            raise PodSelectorsError(f"{path}: {where}: declared twice (first as entry {first})")
        result.append(kind)
    return result


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """The parser's problem and where, on one line (its own text spans several, with a source excerpt)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())


def _describe(entry: Any, number: int) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("kind"), str):
        return f"entry {number} ({entry.get('apiVersion')} {entry['kind']})"
    return f"entry {number}"


__all__ = ["BUILTIN_KINDS", "DeclaredKind", "PodSelectorsError", "load_pod_selectors", "parse_entry", "render"]
