"""Combining estimates: the server's plugin results and the client's per-estimator answers.

Server side (``framework.PluginToResult.Merge`` and ``RunEstimateReplicasPlugins``): replicas are the
minimum over plugins whose result is Success or Unschedulable (start MaxInt32, a plugin Error forces
0); the merged code has precedence Error > Unschedulable > (all Nooperation ⇒ Nooperation) > Success
and carries every plugin's reasons. :func:`estimate_replicas` then turns that into the RPC answer.

Client side (scheduler ``calAvailableReplicas``, descheduler): per cluster the minimum over estimators
of the answers that are not ``UNAUTHENTIC`` (-1), starting at MaxInt32; an estimator that failed is
skipped entirely; a cluster nobody could estimate gets a fallback (``spec.replicas`` for the
scheduler, 0 unschedulable replicas for the descheduler).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kube_api.limits import MAX_INT32

UNAUTHENTIC = -1
"""``UnauthenticReplica``: the estimator cannot tell; callers skip the answer."""


class Code(enum.IntEnum):
    """A plugin result code (``framework.Code``); ``str()`` gives Karmada's spelling."""

    SUCCESS = 0
    UNSCHEDULABLE = 1
    NOOPERATION = 2
    ERROR = 3

    def __str__(self) -> str:
        return ("Success", "Unschedulable", "Nooperation", "Error")[self.value]


@dataclass(frozen=True)
class PluginResult:
    """What one estimate plugin returned: a code, reasons and (for Error) the error text."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @classmethod
    def new(cls, code: Code, *reasons: str) -> PluginResult:
        """``framework.NewResult``: an Error result's error is its reasons joined with ","."""
        return cls(code, reasons, ",".join(reasons) if code is Code.ERROR else None)

    @classmethod
    def from_error(cls, error: BaseException | str) -> PluginResult:
        """``framework.AsResult``: an Error result whose single reason is the error text."""
        return cls(Code.ERROR, (str(error),), str(error))

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_failed(self) -> bool:
        return self.code is Code.ERROR

    @property
    def is_unschedulable(self) -> bool:
        return self.code is Code.UNSCHEDULABLE

    @property
    def is_no_operation(self) -> bool:
        return self.code is Code.NOOPERATION


def merge_results(results: Sequence[PluginResult]) -> PluginResult:
    """``PluginToResult.Merge``: Error > Unschedulable > all-Nooperation > Success; reasons concatenated."""
    if not results:
        return PluginResult.new(Code.NOOPERATION, "plugin results are empty")
    reasons: list[str] = []
    error: str | None = None
    has_unschedulable = False
    all_noop = True
    for result in results:
        if result.code is Code.ERROR:
            error = result.error if result.error is not None else ",".join(result.reasons)
        elif result.code is Code.UNSCHEDULABLE:
            has_unschedulable = True
        if result.code is not Code.NOOPERATION:
            all_noop = False
        reasons.extend(result.reasons)
    if error is not None:
        return PluginResult(Code.ERROR, tuple(reasons), error)
    if has_unschedulable:
        return PluginResult(Code.UNSCHEDULABLE, tuple(reasons))
    if all_noop:
        return PluginResult(Code.NOOPERATION, tuple(reasons))
    return PluginResult(Code.SUCCESS, tuple(reasons))


def run_estimate_replicas_plugins(outputs: Iterable[tuple[int, PluginResult]]) -> tuple[int, PluginResult]:
    """``RunEstimateReplicasPlugins`` over (replicas, result) pairs, in plugin order."""
    replicas = MAX_INT32
    results: list[PluginResult] = []
    for plugin_replicas, result in outputs:
        if (result.is_success or result.is_unschedulable) and plugin_replicas < replicas:
            replicas = plugin_replicas
        if result.is_failed:
            replicas = 0
        results.append(result)
    return replicas, merge_results(results)


class EstimateError(Exception):
    """The estimate RPC fails: some plugin returned Error."""


def _go_string_slice(items: Sequence[str]) -> str:
    """How Go's ``%s`` prints a ``[]string``: ``[a b]``."""
    return "[" + " ".join(items) + "]"


def estimate_replicas(outputs: Iterable[tuple[int, PluginResult]]) -> int:
    """The server's ``estimateReplicas``: Unschedulable → 0, Error → :class:`EstimateError`, else replicas."""
    replicas, merged = run_estimate_replicas_plugins(outputs)
    if merged.is_unschedulable:
        return 0
    if merged.is_failed:
        raise EstimateError(f"estimate replica plugins fails with {_go_string_slice(merged.reasons)}")
    return replicas


def min_over_estimators(clusters: Sequence[str], answers: Iterable[Mapping[str, int] | None],
                        fallback: int) -> dict[str, int]:
    """Per cluster, the minimum answer that is not ``UNAUTHENTIC`` (nor any other negative; start MaxInt32);
    MaxInt32 left → ``fallback``.

    ``answers`` holds one mapping (cluster name → value) per estimator, or None for an estimator
    that failed (skipped entirely). Clusters missing from an answer are not constrained by it.
    """
    combined = dict.fromkeys(clusters, MAX_INT32)
    for answer in answers:
        if answer is None:
            continue
        for name, estimate in answer.items():
            # Only UNAUTHENTIC is the sentinel, but no negative count can mean anything else.
            if estimate < 0 or name not in combined:
                continue
            combined[name] = min(combined[name], estimate)
    return {name: (fallback if estimate == MAX_INT32 else estimate) for name, estimate in combined.items()}


def combine_available_replicas(clusters: Sequence[str], answers: Iterable[Mapping[str, int] | None],
                               replicas: int) -> dict[str, int]:
    """The scheduler's ``calAvailableReplicas``: clusters nobody could estimate get ``spec.replicas``."""
    return min_over_estimators(clusters, answers, replicas)


def combine_unschedulable_replicas(clusters: Sequence[str],
                                   answers: Iterable[Mapping[str, int] | None]) -> dict[str, int]:
    """The descheduler's combination: clusters nobody could estimate have 0 unschedulable replicas."""
    return min_over_estimators(clusters, answers, 0)
