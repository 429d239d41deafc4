"""API defaulting of built-in kinds, as kube-apiserver applies it when it decodes a write.

Only the defaults a client of this project can observe are here (pod templates, workload
strategies, Service type, Secret type...). They come from ``pkg/apis/*/v1/defaults.go`` of
Kubernetes; values are copied as kube writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller_manager.objects import MutableObj
from kube_api import jobs

from .resources import ResourceType


def _default(parent: MutableObj, key: str, value: Any) -> None:
    """Set ``key`` unless it has a value: absent, null, and an empty string are Go's zero value, which kube's
    defaulting fills in (``imagePullPolicy: null`` or ``""`` is defaulted, not refused)."""
    if parent.get(key) is None or parent.get(key) == "":
        parent[key] = value


def _dict(parent: MutableObj, key: str) -> MutableObj:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def _image_pull_policy(image: Any) -> str:
    if not isinstance(image, str):
        return "IfNotPresent"
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") and "@" not in image else "IfNotPresent"


def _container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    _default(container, "imagePullPolicy", _image_pull_policy(container.get("image")))
    _default(container, "resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            _default(port, "protocol", "TCP")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(key))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            _handler(lifecycle.get(key))
    for var in container.get("env") or []:
        source = var.get("valueFrom") if isinstance(var, dict) else None
        if isinstance(source, dict):
            _downward_selectors(source)


def _downward_selectors(source: MutableObj) -> None:
    """SetDefaults_ObjectFieldSelector (a field of the ``v1`` Pod), and a resource's divisor as kube writes an unset
    one back (``"0"``: a Quantity that is not a pointer)."""
    if isinstance(source.get("fieldRef"), dict):
        _default(source["fieldRef"], "apiVersion", "v1")
    if isinstance(source.get("resourceFieldRef"), dict) and source["resourceFieldRef"].get("divisor") is None:
        source["resourceFieldRef"]["divisor"] = "0"


VOLUME_SOURCES: tuple[str, ...] = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI", "fc",
    "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk",
    "storageos", "projected", "scaleIO", "csi", "ephemeral")
"""A volume's sources (given none, SetDefaults_Volume makes it an ``emptyDir``)."""
DEFAULT_FILE_MODE = 0o644
"""The ``defaultMode`` of a Secret, ConfigMap, Downward API or projected volume."""


def _volume(volume: Any) -> None:
    """SetDefaults_Volume and its sources': the file modes, a host path's type, a token's expiration (an hour),
    each Downward API field's version."""
    if not isinstance(volume, dict):
        return
    if not any(isinstance(volume.get(key), dict) for key in VOLUME_SOURCES):
        volume["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(key), dict) and volume[key].get("defaultMode") is None:
            volume[key]["defaultMode"] = DEFAULT_FILE_MODE
    if isinstance(volume.get("hostPath"), dict) and volume["hostPath"].get("type") is None:
        volume["hostPath"]["type"] = ""
    downward, projected = volume.get("downwardAPI"), volume.get("projected")
    files = list(downward.get("items") or []) if isinstance(downward, dict) else []
    for source in (projected.get("sources") or []) if isinstance(projected, dict) else []:
        if not isinstance(source, dict):
            continue
        token = source.get("serviceAccountToken")
        if isinstance(token, dict) and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
        if isinstance(source.get("downwardAPI"), dict):
            files.extend(source["downwardAPI"].get("items") or [])
    for file in files:
        if isinstance(file, dict):
            _downward_selectors(file)


PROBE_DEFAULTS: dict[str, int] = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                  "failureThreshold": 3}
"""SetDefaults_Probe (a zero is unset, as Go's zero value is)."""


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in PROBE_DEFAULTS.items():
        if not probe.get(key):
            probe[key] = value
    _handler(probe)


def _handler(handler: Any) -> None:
    """SetDefaults_HTTPGetAction of a probe's or a lifecycle hook's handler: path ``/``, scheme HTTP."""
    action = handler.get("httpGet") if isinstance(handler, dict) else None
    if isinstance(action, dict):
        _default(action, "path", "/")
        _default(action, "scheme", "HTTP")


def pod_spec(spec: Any) -> None:
    """SetDefaults_PodSpec, its containers' and volumes'; and what 1.20 drops because its feature gate is off
    (``dropDisabledFields``): ephemeral containers and ``ephemeral`` volumes (a volume with only that is left
    without a source, and refused)."""
    if not isinstance(spec, dict):
        return
    _default(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "securityContext", {})
    _default(spec, "schedulerName", "default-scheduler")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            _container(container)
    for volume in spec.get("volumes") or []:
        _volume(volume)
        if isinstance(volume, dict):
            volume.pop("ephemeral", None)
    spec.pop("ephemeralContainers", None)


def _template(spec: MutableObj) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        pod_spec(template.get("spec"))


def pod(obj: MutableObj) -> None:
    spec = obj.get("spec")
    pod_spec(spec)
    if isinstance(spec, dict):
        _default(spec, "enableServiceLinks", True)
        _default(spec, "priority", 0)
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            # SetDefaults_Pod: limits without requests → requests = limits.
            if isinstance(container, dict) and isinstance(container.get("resources"), dict):
                resources = container["resources"]
                limits = resources.get("limits")
                if isinstance(limits, dict) and limits:
                    requests = _dict(resources, "requests")
                    for name, value in limits.items():
                        requests.setdefault(name, value)
        status = obj.get("status")
        if isinstance(status, dict) and "qosClass" not in status:
            status["qosClass"] = qos_class(spec)


def qos_class(spec: MutableObj) -> str:
    """Guaranteed: every container has cpu and memory limits equal to requests; BestEffort: none set."""
    containers = [c for c in (spec.get("containers") or []) if isinstance(c, dict)]
    any_set = False
    guaranteed = bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        any_set = any_set or bool(requests) or bool(limits)
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if any_set else "BestEffort"


def deployment(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    strategy = _dict(spec, "strategy")
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _default(rolling, "maxUnavailable", "25%")
        _default(rolling, "maxSurge", "25%")
    _template(spec)


def replica_set(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    _template(spec)


def stateful_set(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "replicas", 1)
    _default(spec, "podManagementPolicy", "OrderedReady")
    _default(spec, "revisionHistoryLimit", 10)
    strategy = _dict(spec, "updateStrategy")
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _default(_dict(strategy, "rollingUpdate"), "partition", 0)
    _template(spec)


def daemon_set(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "revisionHistoryLimit", 10)
    strategy = _dict(spec, "updateStrategy")
    _default(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _default(rolling, "maxUnavailable", 1)
        _default(rolling, "maxSurge", 0)
    _template(spec)


def job(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", 6)
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    _template(spec)


def generate_job_selector(_rtype: ResourceType, old: MutableObj | None, new: MutableObj) -> None:
    """A new Job's selector and Pod labels, as kube's ``PrepareForCreate`` makes them unless
    ``spec.manualSelector`` is true: each label of :data:`kube_api.jobs.TEMPLATE_LABELS` the template lacks (the
    Job's name or uid), and the uid label merged into whatever selector was given. A given selector that then
    selects something else is refused by validation (```selector` not auto-generated``), not here."""
    spec = _dict(new, "spec")
    if old is not None or spec.get("manualSelector") is True:
        return
    meta = new.get("metadata") or {}
    values = {jobs.LEGACY_JOB_NAME_LABEL: meta.get("name", ""), jobs.JOB_NAME_LABEL: meta.get("name", ""),
              jobs.LEGACY_CONTROLLER_UID_LABEL: meta.get("uid", ""), jobs.CONTROLLER_UID_LABEL: meta.get("uid", "")}
    labels = _dict(_dict(_dict(spec, "template"), "metadata"), "labels")
    for key in jobs.TEMPLATE_LABELS:
        labels.setdefault(key, str(values[key]))
    _dict(_dict(spec, "selector"), "matchLabels").setdefault(jobs.CONTROLLER_UID_LABEL, str(meta.get("uid", "")))


def cron_job(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    job_spec = _dict(_dict(spec, "jobTemplate"), "spec")
    _template(job_spec)


def service(obj: MutableObj) -> None:
    spec = _dict(obj, "spec")
    _default(spec, "type", "ClusterIP")
    _default(spec, "sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            _default(port, "protocol", "TCP")
            if "port" in port and port.get("targetPort") in (None, 0, ""):  # Go's zero IntOrString is unset
                port["targetPort"] = port["port"]
    affinity = spec.get("sessionAffinityConfig")
    client = affinity.get("clientIP") if isinstance(affinity, dict) else None
    timeout = client.get("timeoutSeconds") if isinstance(client, dict) else None
    if spec["sessionAffinity"] == "ClientIP" and timeout is None:
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    elif spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)  # kube 1.20 stores none (seen on the refplane)
    # Newer SetDefaults_Service; cluster IPs and node ports are allocated in services.py.
    if spec["type"] in ("NodePort", "LoadBalancer"):
        _default(spec, "externalTrafficPolicy", "Cluster")
    if spec["type"] != "ExternalName":
        _default(spec, "internalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)


def secret(obj: MutableObj) -> None:
    _default(obj, "type", "Opaque")


DEFAULTERS: dict[str, Callable[[MutableObj], None]] = {
    "/pods": pod,
    "apps/deployments": deployment,
    "apps/replicasets": replica_set,
    "apps/statefulsets": stateful_set,
    "apps/daemonsets": daemon_set,
    "batch/jobs": job,
    "batch/cronjobs": cron_job,
    "/services": service,
    "/secrets": secret,
}


def mutator(defaulter: Callable[[MutableObj], None]) -> Callable[[ResourceType, MutableObj | None, MutableObj], None]:
    """Adapt a defaulter to the store's mutator signature (applied on create and update alike)."""

    def mutate(_rtype: ResourceType, _old: MutableObj | None, new: MutableObj) -> None:
        defaulter(new)

    return mutate
