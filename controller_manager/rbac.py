"""RBAC rules declared next to the code that needs them, the controller-gen way.

Why: the permissions a component needs are a fact about its code — which informers it starts,
which verbs it calls, which subresources it writes. Declaring them beside those calls (a module
constant, like controller-gen's ``+kubebuilder:rbac`` markers) and generating the deployment's
ClusterRole/Role from the declarations (``hack/generate_rbac.py``) keeps code and chart from
drifting: a new call without a rule fails a unit test, not a production rollout with a 403.

A rule is API groups by resources by verbs (by resource names), as in ``rbac.authorization.k8s.io``.
Rules are compared by their expanded permissions (one group, resource, verb, name each), so two
spellings of the same grant are equal and merging is a set union. This module only knows how
Kubernetes authorizes requests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .objects import Obj

VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
"""Read verbs first, then writes: how people read a rule (unknown verbs sort after these)."""

INFORMER_VERBS = ("list", "watch")
"""What an informer (reflector) needs: a paginated LIST, then WATCH from its resourceVersion."""


class Permission(NamedTuple):
    """One grant: ``verb`` on ``group``/``resource`` (``name`` "" = any object of it)."""

    group: str
    resource: str
    verb: str
    name: str = ""


class ResourceLike(Protocol):
    """Anything with REST coordinates (``controller_manager.resource.Resource`` is one)."""

    @property
    def group(self) -> str: ...

    @property
    def plural(self) -> str: ...


@dataclass(frozen=True)
class PolicyRule:
    """A Kubernetes PolicyRule: every verb on every resource of every group (optionally by name)."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.resources or not self.verbs or not self.api_groups:
            raise ValueError(f"a rule needs api groups, resources and verbs: {self}")

    def permissions(self) -> Iterable[Permission]:
        """The rule expanded to single grants (what the authorizer checks, one request at a time)."""
        names = self.resource_names or ("",)
        for group in self.api_groups:
            for resource in self.resources:
                for verb in self.verbs:
                    for name in names:
                        yield Permission(group, resource, verb, name)

    def to_k8s(self) -> dict[str, Any]:
        """The rule as a ``rules[]`` item of a Role or ClusterRole."""
        out: dict[str, Any] = {"apiGroups": list(self.api_groups), "resources": list(self.resources),
                               "verbs": list(self.verbs)}
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        return out

    @classmethod
    def from_k8s(cls, data: Obj) -> PolicyRule:
        """Read a ``rules[]`` item back (non-resource URLs are not supported: no component needs them)."""
        if data.get("nonResourceURLs"):
            raise ValueError("nonResourceURLs rules are not supported")
        return cls(tuple(data.get("apiGroups") or ()), tuple(data.get("resources") or ()),
                   tuple(data.get("verbs") or ()), tuple(data.get("resourceNames") or ()))


def rule(api_groups: str | Iterable[str], resources: str | Iterable[str], verbs: str | Iterable[str], *,
         resource_names: Iterable[str] = ()) -> PolicyRule:
    """A rule from strings or iterables: ``rule("", "events", ["create", "patch"])``."""

    def as_tuple(value: str | Iterable[str]) -> tuple[str, ...]:
        return (value,) if isinstance(value, str) else tuple(value)

    return PolicyRule(as_tuple(api_groups), as_tuple(resources), as_tuple(verbs), tuple(resource_names))


def for_resources(resources: Iterable[ResourceLike], verbs: str | Iterable[str], *, subresource: str = "",
                  resource_names: Iterable[str] = ()) -> list[PolicyRule]:
    """Rules granting ``verbs`` on each resource (or on its ``subresource``, e.g. ``deployments/status``)."""
    suffix = f"/{subresource}" if subresource else ""
    return [rule(r.group, r.plural + suffix, verbs, resource_names=resource_names) for r in resources]


def informer_rules(*resources: ResourceLike) -> list[PolicyRule]:
    """What a shared informer on each resource needs (cluster-wide LIST and WATCH)."""
    return for_resources(resources, INFORMER_VERBS)


def expand(rules: Iterable[PolicyRule]) -> frozenset[Permission]:
    """Every single grant of ``rules``, with grants by name dropped where the same grant is unnamed."""
    grants = {p for r in rules for p in r.permissions()}
    return frozenset(p for p in grants if not p.name or p._replace(name="") not in grants)


def _verb_key(verb: str) -> tuple[int, str]:
    return (VERB_ORDER.index(verb) if verb in VERB_ORDER else len(VERB_ORDER), verb)


def normalize(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The smallest readable equivalent: one group per rule, resources sharing verbs and names grouped.

    Deterministic (sorted), so generated files only change when the permissions do.
    """
    verbs_of: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for grant in expand(rules):
        verbs_of[(grant.group, grant.resource, grant.name)].add(grant.verb)
    names_of: dict[tuple[str, str, tuple[str, ...]], set[str]] = defaultdict(set)
    for (group, resource, name), verb_set in verbs_of.items():
        names_of[(group, resource, tuple(sorted(verb_set, key=_verb_key)))].add(name)
    resources_of: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = defaultdict(set)
    for (group, resource, verbs), names in names_of.items():
        resources_of[(group, verbs, tuple(sorted(n for n in names if n)))].add(resource)
    out = [PolicyRule((group,), tuple(sorted(resources)), verbs, names)
           for (group, verbs, names), resources in resources_of.items()]
    return sorted(out, key=lambda r: (r.api_groups, r.resources, [_verb_key(v) for v in r.verbs],
                                      r.resource_names))


def merge(*rule_sets: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The union of several declarations, normalized."""
    return normalize(r for rules in rule_sets for r in rules)


def to_k8s(rules: Iterable[PolicyRule]) -> list[dict[str, Any]]:
    """Normalized ``rules`` for a Role or ClusterRole manifest."""
    return [r.to_k8s() for r in normalize(rules)]


def from_k8s(items: Sequence[Obj] | None) -> list[PolicyRule]:
    """Parse a manifest's ``rules`` list."""
    return [PolicyRule.from_k8s(item) for item in items or ()]


__all__ = [
    "INFORMER_VERBS",
    "Permission",
    "PolicyRule",
    "expand",
    "for_resources",
    "from_k8s",
    "informer_rules",
    "merge",
    "normalize",
    "rule",
    "to_k8s",
]
