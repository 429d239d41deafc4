"""kube's validation of workload specs, run after their defaults: Deployments, ReplicaSets, StatefulSets, Pods,
Jobs.

A real kube-apiserver refuses a Deployment whose selector does not match its Pod template, a Pod with no
containers, a StatefulSet whose update strategy is unknown; the dev server stored them, and a controller tested
on it could create what a real server refuses. Covered here, with kube 1.20's fields and messages (each checked
on the refplane):

- Deployment (``ValidateDeploymentSpec``): replicas, the selector (required, not empty, its expressions,
  matching the template's labels, immutable on update), the template's labels, containers (required, a
  DNS-1123 name each, unique, an image each) and restart policy (Always), the strategy (its type,
  ``rollingUpdate`` only when rolling, ``maxSurge`` and ``maxUnavailable`` not both 0), ``minReadySeconds``,
  ``revisionHistoryLimit``, ``progressDeadlineSeconds``;
- ReplicaSet (``ValidateReplicaSetSpec``): replicas, ``minReadySeconds``, the selector and template as above;
- StatefulSet (``ValidateStatefulSetSpec``, ``ValidateStatefulSetUpdate``): ``podManagementPolicy``,
  ``updateStrategy`` (and its partition), replicas, the selector, the template's labels (1.20 does not validate a
  StatefulSet's containers), restart policy, and on update no change but to replicas, template and strategy;
- Pod (``ValidatePodSpec``, on create), and the Pod template of each but a StatefulSet: what
  :mod:`.pod_validation` covers (volumes' names, containers, their ports, environment, mounts, pull policy and
  resources, the restart policy);
- Job (``ValidateJob``, ``ValidateJobSpecUpdate``): the generated selector and labels (the selector must select
  the Job's uid label, the template carry its uid and name: :func:`defaults.generate_job_selector`), the counts,
  the selector and template as above, a restart policy of OnFailure or Never, and on update ``completions``,
  ``selector`` and ``template`` immutable (1.20's rules).

The rest of a Pod spec (volume sources, probes, scheduling fields...) is not validated. Bad values are printed as Go's
``%#v`` prints the Go value kube validated (``map[string]string{"app":"web"}``, ``v1.LabelSelector{...}``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from controller_manager import objects
from kube_api import jobs
from kube_api.quantity import parse_quantity
from kube_api.selectors import LabelPredicate, compile_label_selector
from kube_api.validation import go_quote

from .errors import Cause
from .pod_validation import pod_spec_causes
from .validation import SpecCheck, child, go_strings, label_selector_causes, validate_labels

SPEC = "spec"
JOB_RESTART_POLICIES: Final = ("OnFailure", "Never")
STRATEGIES: Final = ("Recreate", "RollingUpdate")
PERCENT = re.compile(r"[0-9]+%")
NOT_NEGATIVE: Final = "must be greater than or equal to 0"


def go_string_map(value: Any) -> str:
    """``%#v`` of a ``map[string]string`` (keys sorted, as fmt prints maps); nil when absent."""
    if not isinstance(value, Mapping):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_quote(str(k))}:{go_quote(str(value[k]))}"
                                            for k in sorted(value)) + "}"


def go_label_selector(selector: Mapping[str, Any]) -> str:
    """``%#v`` of a ``metav1.LabelSelector``."""
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        shown = "[]v1.LabelSelectorRequirement{" + ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{go_quote(str(e.get('key') or ''))}, "
            f"Operator:{go_quote(str(e.get('operator') or ''))}, Values:{go_strings(e.get('values'))}}}"
            for e in expressions if isinstance(e, Mapping)) + "}"
    else:
        shown = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, MatchExpressions:{shown}}}"


def _template(spec: Mapping[str, Any], selector: LabelPredicate, *, pod_spec: bool = True,
              always: bool = True) -> list[Cause]:
    """``ValidatePodTemplateSpecForReplicaSet`` (``pod_spec``) or ``...ForStatefulSet``: the labels against the
    selector (:func:`compile_label_selector`'s: a nil one matches nothing, an empty one everything), the template's
    labels, and for the former its Pod spec; then (``always``) the restart policy, which must be Always, and no
    ``activeDeadlineSeconds``."""
    template = child(spec, "template")
    meta = child(template, "metadata")
    causes: list[Cause] = []
    if not selector(child(meta, "labels")):
        causes.append(Cause.invalid("spec.template.metadata.labels", go_string_map(meta.get("labels")),
                               "`selector` does not match template `labels`"))
    causes.extend(validate_labels(meta.get("labels"), "spec.template.labels"))  # kube's own path (observed)
    pod = child(template, "spec")
    if pod_spec:
        causes.extend(pod_spec_causes(pod, "spec.template.spec"))
    policy = pod.get("restartPolicy", "Always")
    if always and policy != "Always":
        causes.append(Cause.not_supported("spec.template.spec.restartPolicy", go_quote(str(policy)), ("Always",)))
    if always and pod.get("activeDeadlineSeconds") is not None:
        owner = "ReplicaSet" if pod_spec else "StatefulSet"  # a Deployment's template is checked as a ReplicaSet's
        causes.append(Cause.forbidden("spec.template.spec.activeDeadlineSeconds",
                                      f"activeDeadlineSeconds in {owner} is not Supported"))
    return causes


def _int_or_percent(value: Any) -> str:
    """``%#v`` of an ``intstr.IntOrString``."""
    if isinstance(value, str):
        return f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}'
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def _is_zero(value: Any) -> bool:
    return value == 0 or (isinstance(value, str) and PERCENT.fullmatch(value) is not None and int(value[:-1]) == 0)


def _strategy(spec: Mapping[str, Any]) -> list[Cause]:
    strategy = child(spec, "strategy")
    kind = strategy.get("type", "")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [Cause.forbidden("spec.strategy.rollingUpdate",
                                    "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind != "RollingUpdate":
        pointer = "(*apps.RollingUpdateDeployment)(nil)" if rolling is None else "&apps.RollingUpdateDeployment{...}"
        shown = f"apps.DeploymentStrategy{{Type:{go_quote(str(kind))}, RollingUpdate:{pointer}}}"
        return [Cause.not_supported("spec.strategy", shown, STRATEGIES)]
    if not isinstance(rolling, Mapping):
        return []
    causes: list[Cause] = []
    for key in ("maxUnavailable", "maxSurge"):
        value = rolling.get(key)
        if isinstance(value, str) and not PERCENT.fullmatch(value):
            causes.append(Cause.invalid(f"spec.strategy.rollingUpdate.{key}", _int_or_percent(value),
                                   "a valid percent string must be a numeric string followed by an ending '%' (e.g. "
                                   "'1%',  or '93%', regex used for validation is '[0-9]+%')"))
        elif isinstance(value, int) and value < 0:
            causes.append(Cause.invalid(f"spec.strategy.rollingUpdate.{key}", str(value), NOT_NEGATIVE))
    unavailable = rolling.get("maxUnavailable")
    if _is_zero(unavailable) and _is_zero(rolling.get("maxSurge")):
        causes.append(Cause.invalid("spec.strategy.rollingUpdate.maxUnavailable", _int_or_percent(unavailable),
                               "may not be 0 when `maxSurge` is 0"))
    if isinstance(unavailable, str) and PERCENT.fullmatch(unavailable) and int(unavailable[:-1]) > 100:
        causes.append(Cause.invalid("spec.strategy.rollingUpdate.maxUnavailable", _int_or_percent(unavailable),
                               "must not be greater than 100%"))
    return causes


def _non_negative(spec: Mapping[str, Any], key: str) -> list[Cause]:
    value = spec.get(key)
    return [Cause.invalid(f"spec.{key}", str(value), NOT_NEGATIVE)] if isinstance(value, int) and value < 0 else []


def _selector_and_template(spec: Mapping[str, Any], kind: str | None, *, pod_spec: bool = True,
                           always: bool = True) -> list[Cause]:
    """The selector (required, valid), then the template against it (:func:`_template`), unless the selector
    cannot be turned into one (``LabelSelectorAsSelector`` fails on what ``ValidateLabelSelector`` refused).
    ``kind``: the kind whose selector may not be empty, and for which one that cannot be turned into a selector
    is a cause of its own; None: neither (a Job's ``ValidateJobSpec``)."""
    raw = spec.get("selector")
    if not isinstance(raw, Mapping):
        return [Cause.required("spec.selector"),
                *_template(spec, compile_label_selector(None), pod_spec=pod_spec, always=always)]
    causes = label_selector_causes(raw, "spec.selector")
    if kind is not None and not raw.get("matchLabels") and not raw.get("matchExpressions"):
        causes.append(Cause.invalid("spec.selector", go_label_selector(raw), f"empty selector is invalid for {kind}"))
    try:
        selector = compile_label_selector(raw)
    except ValueError:
        if kind is not None:
            causes.append(Cause.invalid("spec.selector", go_label_selector(raw), "invalid label selector"))
    else:
        causes.extend(_template(spec, selector, pod_spec=pod_spec, always=always))
    return causes


def _semantic(value: Any) -> Any:
    """A value as ``equality.Semantic.DeepEqual`` compares it: an empty list or map is the same as none."""
    if isinstance(value, Mapping):
        return {k: _semantic(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _selector_immutable(old: Mapping[str, Any] | None, new_spec: Mapping[str, Any]) -> list[Cause]:
    selector = new_spec.get("selector")
    if old is None or not isinstance(selector, Mapping) or \
            _semantic(child(old, SPEC).get("selector") or {}) == _semantic(selector):
        return []
    return [Cause.invalid("spec.selector", go_label_selector(selector), "field is immutable")]


def deployment_causes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """Every cause kube's ``ValidateDeploymentSpec`` (and, on update, the selector's immutability) reports, in its
    order."""
    spec = child(new, SPEC)
    causes = _non_negative(spec, "replicas")
    causes.extend(_selector_and_template(spec, "deployment"))
    causes.extend(_strategy(spec))
    causes.extend(_non_negative(spec, "minReadySeconds"))
    causes.extend(_non_negative(spec, "revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        causes.extend(_non_negative(spec, "progressDeadlineSeconds"))
        if deadline <= int(spec.get("minReadySeconds") or 0):
            causes.append(Cause.invalid("spec.progressDeadlineSeconds", str(deadline),
                                   "must be greater than minReadySeconds"))
    return causes + _selector_immutable(old, spec)


def replica_set_causes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """``ValidateReplicaSetSpec`` (kube says "deployment" in its empty-selector message here too, observed)."""
    spec = child(new, SPEC)
    causes = _non_negative(spec, "replicas") + _non_negative(spec, "minReadySeconds")
    causes.extend(_selector_and_template(spec, "deployment"))
    return causes + _selector_immutable(old, spec)


def _update_strategy(spec: Mapping[str, Any]) -> list[Cause]:
    strategy = child(spec, "updateStrategy")
    kind, rolling = strategy.get("type", ""), strategy.get("rollingUpdate")
    if not kind:
        return [Cause.required("spec.updateStrategy")]
    if kind == "RollingUpdate":
        partition = rolling.get("partition") if isinstance(rolling, Mapping) else None
        if isinstance(partition, int) and partition < 0:
            return [Cause.invalid("spec.updateStrategy.rollingUpdate.partition", str(partition), NOT_NEGATIVE)]
        return []
    if kind == "OnDelete":
        return []
    pointer = "(nil)" if rolling is None else "{...}"
    shown = (f"apps.StatefulSetUpdateStrategy{{Type:{go_quote(str(kind))}, "
             f"RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy){pointer}}}")
    return [Cause.invalid("spec.updateStrategy", shown, "must be 'RollingUpdate' or 'OnDelete'")]


STATEFUL_SET_FIXED: Final = ("selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy",
                              "revisionHistoryLimit")
"""The fields of kube 1.20's StatefulSetSpec an update may not change: all but replicas, template and update
strategy. Fields 1.20 does not know (``minReadySeconds``, ``ordinals``...) are not compared: 1.20 drops them, and
the later versions that keep them let them change."""


def stateful_set_causes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """``ValidateStatefulSetSpec``, and on update ``ValidateStatefulSetUpdate``: none of
    :data:`STATEFUL_SET_FIXED` may change (a member refuses a changed ``serviceName`` or
    ``volumeClaimTemplates``)."""
    spec = child(new, SPEC)
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy", "")
    if not policy:
        causes.append(Cause.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(Cause.invalid("spec.podManagementPolicy", go_quote(str(policy)),
                               "must be 'OrderedReady' or 'Parallel'"))
    causes.extend(_update_strategy(spec))
    causes.extend(_non_negative(spec, "replicas"))
    causes.extend(_selector_and_template(spec, "statefulset", pod_spec=False))
    if old is None:
        return causes
    if _fixed_part(child(old, SPEC)) != _fixed_part(spec):
        causes.append(Cause.forbidden(SPEC, "updates to statefulset spec for fields other than 'replicas', "
                                            "'template', and 'updateStrategy' are forbidden"))
    causes.extend(_non_negative(spec, "replicas"))  # checked again (kube's message shows it once)
    return causes


def _fixed_part(spec: Mapping[str, Any]) -> Any:
    """:data:`STATEFUL_SET_FIXED` of a spec as ``Semantic.DeepEqual`` compares them: an empty string is no string,
    and the claim templates' quantities are compared by value (``1024Mi`` is ``1Gi``)."""
    fixed = {key: spec[key] for key in STATEFUL_SET_FIXED if spec.get(key) not in (None, "")}
    claims = fixed.get("volumeClaimTemplates")
    if isinstance(claims, list):
        fixed["volumeClaimTemplates"] = [_claim_by_value(claim) for claim in claims]
    return _semantic(fixed)


def _claim_by_value(claim: Any) -> Any:
    resources = child(child(claim, SPEC), "resources") if isinstance(claim, Mapping) else {}
    if not resources:
        return claim
    amounts = {key: {name: _quantity_value(value) for name, value in child(resources, key).items()}
               for key in ("requests", "limits") if key in resources}
    return {**claim, SPEC: {**child(claim, SPEC), "resources": {**resources, **amounts}}}


def _quantity_value(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except (TypeError, ValueError):
        return value


def _generated_selector(job: Mapping[str, Any]) -> list[Cause]:
    """``ValidateGeneratedSelector``: unless the selector is manual, the Pod template must carry the Job's uid and
    name under each label kube generates (:data:`kube_api.jobs.TEMPLATE_LABELS`: a label the user gave first is
    kept, and refused here; the ``batch.kubernetes.io`` ones only where present, as a Job stored before 1.27 lacks
    them), and the selector must select the Job's own uid label (the one it was generated
    with: :data:`kube_api.jobs.SELECTOR_LABELS`)."""
    spec = child(job, SPEC)
    raw = spec.get("selector")
    if spec.get("manualSelector") is True or not isinstance(raw, Mapping):
        return []
    meta = objects.metadata(job)
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    wanted = {jobs.LEGACY_CONTROLLER_UID_LABEL: uid, jobs.LEGACY_JOB_NAME_LABEL: name, jobs.CONTROLLER_UID_LABEL: uid,
              jobs.JOB_NAME_LABEL: name}
    labels = child(child(child(spec, "template"), "metadata"), "labels")
    legacy = (jobs.LEGACY_CONTROLLER_UID_LABEL, jobs.LEGACY_JOB_NAME_LABEL)  # required, as in 1.20
    causes = [cause for key in jobs.TEMPLATE_LABELS if (key in legacy or key in labels)
              and (cause := _has_label(labels, key, wanted[key])) is not None]
    try:
        selector = compile_label_selector(raw)
    except ValueError:
        return causes  # ValidateLabelSelector says why
    if not any(selector({label: uid}) for label in jobs.SELECTOR_LABELS):
        causes.append(Cause.invalid("spec.selector", go_label_selector(raw), "`selector` not auto-generated"))
    return causes


def _has_label(labels: Mapping[str, Any], key: str, value: str) -> Cause | None:
    """``ValidateHasLabel`` of a Pod template: the label must be there with this value."""
    field = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return Cause.required(field, value)
    return None if labels[key] == value else Cause.invalid(field, go_string_map(labels), f"must be '{value}'")


def _job_spec(spec: Mapping[str, Any]) -> list[Cause]:
    """``ValidateJobSpec``: the counts, the selector (required, valid), the template against it and its Pod spec,
    and a restart policy of OnFailure or Never."""
    causes: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        causes.extend(_non_negative(spec, key))
    causes.extend(_selector_and_template(spec, None, always=False))
    if child(child(spec, "template"), SPEC).get("restartPolicy") not in JOB_RESTART_POLICIES:
        causes.append(Cause.required("spec.template.spec.restartPolicy",
                                     "valid values: " + ", ".join(go_quote(p) for p in JOB_RESTART_POLICIES)))
    return causes


def _immutable(old_spec: Mapping[str, Any], spec: Mapping[str, Any], key: str, shown: str) -> list[Cause]:
    same = _semantic(old_spec.get(key)) == _semantic(spec.get(key))
    return [] if same else [Cause.invalid(f"spec.{key}", shown, "field is immutable")]


def job_causes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """``ValidateJob`` (the generated selector, the spec), and on update ``ValidateJobSpecUpdate`` after it: the
    spec again (kube lists those causes twice), then ``completions``, ``selector`` and ``template`` immutable, as
    in 1.20 (later versions let some of them change). The template's value is not printed whole."""
    spec = child(new, SPEC)
    causes = _generated_selector(new) + _job_spec(spec)
    if old is None:
        return causes
    old_spec = child(old, SPEC)
    causes.extend(_job_spec(spec))
    causes.extend(_immutable(old_spec, spec, "completions", str(spec.get("completions"))))
    selector = spec.get("selector")
    causes.extend(_immutable(old_spec, spec, "selector",
                             go_label_selector(selector) if isinstance(selector, Mapping) else "nil"))
    causes.extend(_immutable(old_spec, spec, "template", "core.PodTemplateSpec{...}"))
    return causes


def pod_causes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """A new Pod's spec (an update's rules, which fields may change, are not covered)."""
    return [] if old is not None else pod_spec_causes(child(new, SPEC), "spec")


CHECKS: dict[str, SpecCheck] = {
    "apps/deployments": deployment_causes,
    "apps/replicasets": replica_set_causes,
    "apps/statefulsets": stateful_set_causes,
    "/pods": pod_causes,
    "batch/jobs": job_causes,
}
"""Per storage key, the causes of an object (old: None on create); the store runs them after the defaults
(:func:`.validation.spec_check_mutator`)."""


__all__ = ["CHECKS", "deployment_causes", "go_label_selector", "go_string_map", "job_causes", "pod_causes",
           "replica_set_causes", "stateful_set_causes"]
