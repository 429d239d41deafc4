"""Server-side printing's column sets and cells, checked against kube's printers (printers.go).

kubectl shows priority-1 columns only under ``-o wide``, so a wrong priority or a missing
column is what a user sees; these pin the headers, priorities and kube's cell formatting.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devplane.apiserver.resources import BUILTIN_TYPES, ResourceType
from devplane.apiserver.tables import (
    columns_for,
    format_label_selector,
    format_labels,
    json_path,
    label_selector_string,
    to_table,
)

TYPES = {t.kind_key: t for t in BUILTIN_TYPES}


def _headers(kind_key: str) -> tuple[list[str], list[str]]:
    """(always shown, -o wide only) column names, upper-cased as kubectl prints them."""
    columns = columns_for(TYPES[kind_key])
    return ([c.name.upper() for c in columns if c.priority == 0],
            [c.name.upper() for c in columns if c.priority == 1])


def _cells(kind_key: str, obj: dict[str, Any]) -> dict[str, Any]:
    table = to_table(TYPES[kind_key], [obj], {})
    names = [d["name"].upper() for d in table["columnDefinitions"]]
    [row] = table["rows"]
    return dict(zip(names, row["cells"], strict=True))


def _ago(seconds: int) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("kind_key", "default", "wide"), [
    ("/Pod", ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]),
    ("apps/Deployment", ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("apps/ReplicaSet", ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("apps/StatefulSet", ["NAME", "READY", "AGE"], ["CONTAINERS", "IMAGES"]),
    ("apps/DaemonSet", ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
     ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("batch/Job", ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("batch/CronJob", ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
     ["CONTAINERS", "IMAGES", "SELECTOR"]),
    ("/Node", ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
     ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]),
    ("/Service", ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], ["SELECTOR"]),
    ("/Event", ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
     ["SUBOBJECT", "SOURCE", "FIRST SEEN", "COUNT", "NAME"]),
    ("rbac.authorization.k8s.io/RoleBinding", ["NAME", "ROLE", "AGE"], ["USERS", "GROUPS", "SERVICEACCOUNTS"]),
    ("rbac.authorization.k8s.io/ClusterRoleBinding", ["NAME", "ROLE", "AGE"], ["USERS", "GROUPS", "SERVICEACCOUNTS"]),
    ("/ConfigMap", ["NAME", "DATA", "AGE"], []),
    ("policy/PodDisruptionBudget", ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"], []),
])
def test_column_sets_match_kube(kind_key: str, default: list[str], wide: list[str]) -> None:
    assert _headers(kind_key) == (default, wide)


def test_column_definitions_carry_priority_description_and_name_format() -> None:
    definitions = to_table(TYPES["apps/Deployment"], [], {})["columnDefinitions"]
    by_name = {d["name"]: d for d in definitions}
    assert by_name["Name"]["format"] == "name" and by_name["Name"]["priority"] == 0
    assert by_name["Containers"] == {"name": "Containers", "type": "string", "format": "", "priority": 1,
                                     "description": "Names of each container in the template."}
    assert all(d["description"] for d in definitions)
    # kube types Deployment's UP-TO-DATE and AVAILABLE as string (their cells are integers).
    assert (by_name["Up-to-date"]["type"], by_name["Available"]["type"]) == ("string", "string")


def test_every_row_has_a_cell_per_column() -> None:
    for kind_key in ("/Pod", "apps/Deployment", "batch/CronJob", "/Node", "/Event", "/Service"):
        table = to_table(TYPES[kind_key], [{"metadata": {"name": "x"}}], {})
        assert len(table["rows"][0]["cells"]) == len(table["columnDefinitions"]), kind_key


def _template(*containers: tuple[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": n, "image": i} for n, i in containers]}}


def test_deployment_wide_cells() -> None:
    deploy = {"metadata": {"name": "web", "creationTimestamp": _ago(30)},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"}},
                       "template": _template(("nginx", "nginx:1.27"), ("side", "busybox"))},
              "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert _cells("apps/Deployment", deploy) == {
        "NAME": "web", "READY": "2/3", "UP-TO-DATE": 3, "AVAILABLE": 2, "AGE": "30s",
        "CONTAINERS": "nginx,side", "IMAGES": "nginx:1.27,busybox", "SELECTOR": "app=web,tier=fe"}


def test_selector_formatting() -> None:
    selector = {"matchLabels": {"z": "1"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                     {"key": "gone", "operator": "DoesNotExist"},
                                     {"key": "has", "operator": "Exists"},
                                     {"key": "tier", "operator": "NotIn", "values": ["db"]}]}
    assert label_selector_string(selector) == "env in (dev,prod),!gone,has,tier notin (db),z=1"
    # printDeployment prints an empty selector as "", the others (FormatLabelSelector) as <none>.
    assert (label_selector_string({}), label_selector_string(None)) == ("", "")
    assert format_label_selector({}) == format_label_selector(None) == "<none>"
    assert label_selector_string({"matchExpressions": [{"key": "k", "operator": "Bogus"}]}) == "<invalid>"
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2" and format_labels({}) == "<none>"


def test_replicaset_daemonset_statefulset_cells() -> None:
    rs = {"metadata": {"name": "rs"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                                               "template": _template(("c", "img"))},
          "status": {"replicas": 2, "readyReplicas": 1}}
    cells = _cells("apps/ReplicaSet", rs)
    assert (cells["DESIRED"], cells["CURRENT"], cells["READY"], cells["CONTAINERS"], cells["IMAGES"],
            cells["SELECTOR"]) == (2, 2, 1, "c", "img", "app=a")
    ds = {"metadata": {"name": "ds"}, "spec": {"selector": {}, "template": {
        "spec": {"nodeSelector": {"os": "linux"}, "containers": [{"name": "agent", "image": "agent:1"}]}}},
        "status": {"desiredNumberScheduled": 3, "numberReady": 2}}
    cells = _cells("apps/DaemonSet", ds)
    assert (cells["DESIRED"], cells["READY"], cells["NODE SELECTOR"], cells["CONTAINERS"], cells["SELECTOR"]) == (
        3, 2, "os=linux", "agent", "<none>")
    sts = {"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": _template(("pg", "postgres:16"))},
           "status": {"readyReplicas": 3}}
    assert {k: v for k, v in _cells("apps/StatefulSet", sts).items() if k != "AGE"} == {
        "NAME": "db", "READY": "3/3", "CONTAINERS": "pg", "IMAGES": "postgres:16"}


def test_job_and_cronjob_cells() -> None:
    job = {"metadata": {"name": "once"},
           "spec": {"completions": 2, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                    "template": _template(("main", "busybox"))},
           "status": {"succeeded": 2, "startTime": _ago(100), "completionTime": _ago(40),
                      "conditions": [{"type": "Complete", "status": "True"}]}}
    cells = _cells("batch/Job", job)
    assert (cells["STATUS"], cells["COMPLETIONS"], cells["DURATION"], cells["CONTAINERS"], cells["IMAGES"],
            cells["SELECTOR"]) == ("Complete", "2/2", "60s", "main", "busybox", "batch.kubernetes.io/controller-uid=u")
    running = {"metadata": {"name": "r"}, "spec": {"parallelism": 3}, "status": {}}
    assert (_cells("batch/Job", running)["STATUS"], _cells("batch/Job", running)["COMPLETIONS"]) == (
        "Running", "0/1 of 3")
    cron = {"metadata": {"name": "often"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": _template(("c", "date:1"))}}},
            "status": {"active": [{"name": "j"}]}}
    cells = _cells("batch/CronJob", cron)
    assert (cells["SCHEDULE"], cells["TIMEZONE"], cells["SUSPEND"], cells["ACTIVE"], cells["LAST SCHEDULE"],
            cells["CONTAINERS"], cells["IMAGES"], cells["SELECTOR"]) == (
        "*/5 * * * *", "<none>", False, 1, "<none>", "c", "date:1", "<none>")


def test_pod_wide_cells() -> None:
    pod = {"metadata": {"name": "p"},
           "spec": {"nodeName": "member1-control-plane", "containers": [{"name": "c"}],
                    "readinessGates": [{"conditionType": "example.com/ready"}, {"conditionType": "other"}]},
           "status": {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                      "conditions": [{"type": "example.com/ready", "status": "True"}],
                      "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0}]}}
    cells = _cells("/Pod", pod)
    assert (cells["IP"], cells["NODE"], cells["NOMINATED NODE"], cells["READINESS GATES"]) == (
        "10.0.0.5", "member1-control-plane", "<none>", "1/2")
    pending = _cells("/Pod", {"metadata": {"name": "q"}, "spec": {}, "status": {"phase": "Pending"}})
    assert (pending["IP"], pending["NODE"], pending["READINESS GATES"], pending["RESTARTS"]) == (
        "<none>", "<none>", "<none>", "0")


def test_pod_restarts_say_when() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
           "status": {"containerStatuses": [{"name": "c", "restartCount": 2,
                                             "lastState": {"terminated": {"finishedAt": _ago(300)}}}]}}
    assert _cells("/Pod", pod)["RESTARTS"] == "2 (5m ago)"


def test_node_wide_cells() -> None:
    node = {"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": "",
                                                 "kubernetes.io/role": "edge"}},
            "status": {"addresses": [{"type": "Hostname", "address": "n"},
                                     {"type": "InternalIP", "address": "172.18.0.2"}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "Debian GNU/Linux 12",
                                    "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7"}}}
    cells = _cells("/Node", node)
    assert {k: v for k, v in cells.items() if k != "AGE"} == {
        "NAME": "n", "STATUS": "Ready", "ROLES": "control-plane,edge", "VERSION": "v1.31.0",
        "INTERNAL-IP": "172.18.0.2", "EXTERNAL-IP": "<none>", "OS-IMAGE": "Debian GNU/Linux 12",
        "KERNEL-VERSION": "6.1.0", "CONTAINER-RUNTIME": "containerd://1.7"}
    bare = _cells("/Node", {"metadata": {"name": "b"}})
    assert (bare["OS-IMAGE"], bare["KERNEL-VERSION"], bare["CONTAINER-RUNTIME"]) == ("<unknown>",) * 3


def test_service_cells() -> None:
    svc = {"metadata": {"name": "s"},
           "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                    "selector": {"app": "web"},
                    "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}}
    cells = _cells("/Service", svc)
    assert (cells["TYPE"], cells["CLUSTER-IP"], cells["EXTERNAL-IP"], cells["PORT(S)"], cells["SELECTOR"]) == (
        "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "app=web")
    lb = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "externalIPs": ["1.2.3.4"]},
          "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}
    assert (_cells("/Service", lb)["EXTERNAL-IP"], _cells("/Service", lb)["SELECTOR"]) == (
        "lb.example.com,1.2.3.4", "<none>")
    pending = {"metadata": {"name": "p"}, "spec": {"type": "LoadBalancer"}}
    assert _cells("/Service", pending)["EXTERNAL-IP"] == "<pending>"
    assert _cells("/Service", {"metadata": {"name": "e"}, "spec": {"type": "ExternalName",
                                                                  "externalName": "db.example.com"}})[
        "EXTERNAL-IP"] == "db.example.com"


def test_event_wide_cells() -> None:
    event = {"metadata": {"name": "web.1"}, "type": "Normal", "reason": "Scheduled", "message": " hi \n",
             "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
             "source": {"component": "scheduler", "host": "h1"}, "count": 3,
             "firstTimestamp": _ago(120), "lastTimestamp": _ago(10)}
    cells = _cells("/Event", event)
    assert cells == {"LAST SEEN": "10s", "TYPE": "Normal", "REASON": "Scheduled", "OBJECT": "pod/web",
                     "SUBOBJECT": "spec.containers{c}", "SOURCE": "scheduler, h1", "MESSAGE": "hi",
                     "FIRST SEEN": "2m", "COUNT": 3, "NAME": "web.1"}
    fresh = _cells("/Event", {"metadata": {"name": "e"}, "eventTime": _ago(5), "reportingComponent": "ctl",
                              "involvedObject": {"kind": "Node"}})
    assert (fresh["LAST SEEN"], fresh["FIRST SEEN"], fresh["COUNT"], fresh["OBJECT"], fresh["SOURCE"]) == (
        "5s", "5s", 1, "node", "ctl")


def test_role_binding_subjects() -> None:
    binding = {"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                            {"kind": "Group", "name": "devs"},
                            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}
    cells = _cells("rbac.authorization.k8s.io/RoleBinding", binding)
    assert (cells["ROLE"], cells["USERS"], cells["GROUPS"], cells["SERVICEACCOUNTS"]) == (
        "ClusterRole/view", "alice, bob", "devs", "ns/sa")


def test_crd_printer_columns_keep_priority() -> None:
    rtype = ResourceType(group="example.com", version="v1", plural="widgets", kind="Widget", namespaced=True,
                         builtin=False, printer_columns=[
                             {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                             {"name": "Owner", "type": "string", "jsonPath": ".spec.owner", "priority": 1,
                              "description": "Who owns it."}])
    table = to_table(rtype, [{"metadata": {"name": "w"}, "spec": {"owner": "me"}}], {})
    definitions = [(d["name"], d["priority"], d["description"]) for d in table["columnDefinitions"]]
    assert definitions[:3] == [
        ("Name", 0, "Name must be unique within a namespace."),
        ("Phase", 0, "Custom resource definition column (in JSONPath format): .status.phase"),
        ("Owner", 1, "Who owns it.")]
    assert table["rows"][0]["cells"][:3] == ["w", "<none>", "me"]


@pytest.mark.parametrize(("path", "expected"), [
    (".spec.workload.manifests[*].kind", "Deployment"),  # Work's WORKLOAD-KIND column: the first match, as kube
    (".spec.workload.manifests[1].kind", "Service"),
    (".spec.workload.manifests[*].nope", None),
    (".status.conditions[?(@.type==\"Applied\")].status", "True"),
])
def test_crd_printer_column_paths(path: str, expected: str | None) -> None:
    work = {"spec": {"workload": {"manifests": [{"kind": "Deployment"}, {"kind": "Service"}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}]}}
    assert json_path(work, path) == expected
