"""Rendering the Helm chart in-process (helm-python-sdk = ``helm template``) for the chart tests."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import helm_python
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "charts" / "karmada-rebalance"
RELEASE = "rebalance"
NAMESPACE = "karmada-system"
COMPONENTS = ("karmada-controller-manager", "karmada-descheduler")

Manifest = dict[str, Any]


def load_chart() -> helm_python.Chart:
    return helm_python.Chart.load(str(CHART_DIR))


def render(chart: helm_python.Chart, values: Mapping[str, Any] | None = None, *, namespace: str = NAMESPACE,
           ) -> list[Manifest]:
    """Every object ``helm template`` would produce (NOTES.txt left out), in template order."""
    out = chart.render(dict(values or {}), name=RELEASE, namespace=namespace)
    docs: list[Manifest] = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def notes(chart: helm_python.Chart, values: Mapping[str, Any] | None = None) -> str:
    out = chart.render(dict(values or {}), name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in out.items() if path.endswith("NOTES.txt"))


def find(docs: list[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[Manifest], kind: str, name: str) -> Manifest:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name}, got {[d['metadata']['name'] for d in find(docs, kind)]}"
    return found[0]


def container(docs: list[Manifest], component: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(docs, "Deployment", component)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def args(docs: list[Manifest], component: str) -> list[str]:
    return list(container(docs, component)["args"])


def nested(path: str, value: Any) -> dict[str, Any]:
    """``nested("a.b", 1)`` → ``{"a": {"b": 1}}`` (what ``--set a.b=1`` means)."""
    out: dict[str, Any] = {}
    node = out
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return out


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def rule_grants(rules: list[dict[str, Any]]) -> Iterator[tuple[str, str, str, str]]:
    """(group, resource, verb, name) for every grant of a manifest's ``rules``."""
    for item in rules:
        for group in item["apiGroups"]:
            for resource in item["resources"]:
                for verb in item["verbs"]:
                    for name in item.get("resourceNames") or [""]:
                        yield group, resource, verb, name
