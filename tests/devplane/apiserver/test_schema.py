"""Structural-schema defaulting, pruning and validation against the real Karmada CRDs.

Expected texts come from a real kube-apiserver (v1.20, the one the dev API server was checked
against, see docs/apiserver.md) and from kube's validation code; field paths use newer kube's
``[N]`` form.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

import devplane.apiserver
from devplane.apiserver import errors
from devplane.apiserver.errors import Cause
from devplane.apiserver.schema import StructuralSchema

CRDS = Path(devplane.apiserver.__file__).parent / "crds"


@cache
def crd_schema(filename: str, version: str) -> StructuralSchema:
    crd = yaml.safe_load((CRDS / filename).read_text())
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return StructuralSchema(v["schema"]["openAPIV3Schema"])
    raise AssertionError(f"{filename} has no version {version}")


def rebalancer_schema() -> StructuralSchema:
    return crd_schema("apps.karmada.io_workloadrebalancers.yaml", "v1alpha1")


def binding_schema() -> StructuralSchema:
    return crd_schema("work.karmada.io_resourcebindings.yaml", "v1alpha2")


def policy_schema() -> StructuralSchema:
    return crd_schema("policy.karmada.io_propagationpolicies.yaml", "v1alpha1")


def work_schema() -> StructuralSchema:
    return crd_schema("work.karmada.io_works.yaml", "v1alpha1")


def admit(schema: StructuralSchema, obj: dict[str, Any]) -> list[Cause]:
    """What the server does on every write: default, prune, validate."""
    schema.default(obj)
    schema.prune(obj)
    return schema.validate(obj)


def rebalancer(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo", "namespace": "default"}]
    }
    body.update(spec)
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "x"},
        "spec": body,
    }


def binding(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo"}}
    body.update(spec)
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": body,
    }


def policy(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}
    body.update(spec)
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": body,
    }


def synthetic(spec_schema: dict[str, Any], **root: Any) -> StructuralSchema:
    """A CRD-like root schema whose ``spec`` is ``spec_schema``."""
    return StructuralSchema(
        {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": spec_schema,
            },
            **root,
        }
    )


def obj_with(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


# ---------------------------------------------------------------------------------------------------------
# WorkloadRebalancer (observed on a real server)
# ---------------------------------------------------------------------------------------------------------


def test_valid_rebalancer_has_no_causes() -> None:
    obj = rebalancer(ttlSecondsAfterFinished=60)
    expected = copy.deepcopy(obj)
    assert admit(rebalancer_schema(), obj) == []
    assert obj == expected


def test_empty_workloads_violates_min_items() -> None:
    causes = admit(rebalancer_schema(), rebalancer(workloads=[]))
    assert causes == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: 0: spec.workloads in body should have at least 1 items",
            "spec.workloads",
        )
    ]


def test_min_items_renders_like_kube_in_the_status_message() -> None:
    causes = admit(rebalancer_schema(), rebalancer(workloads=[]))
    status = errors.invalid("WorkloadRebalancer", "apps.karmada.io", "x", causes)
    assert status.code == 422
    assert status.message == (
        'WorkloadRebalancer.apps.karmada.io "x" is invalid: spec.workloads: '
        "Invalid value: 0: spec.workloads in body should have at least 1 items"
    )


def test_missing_spec_is_required() -> None:
    obj = rebalancer()
    del obj["spec"]
    assert admit(rebalancer_schema(), obj) == [Cause("FieldValueRequired", "Required value", "spec")]


def test_null_spec_is_dropped_then_required() -> None:
    obj = rebalancer()
    obj["spec"] = None
    assert admit(rebalancer_schema(), obj) == [Cause("FieldValueRequired", "Required value", "spec")]
    assert "spec" not in obj


def test_workload_without_name_is_required_with_list_index() -> None:
    obj = rebalancer(workloads=[{"apiVersion": "apps/v1", "kind": "Deployment"}])
    assert admit(rebalancer_schema(), obj) == [
        Cause("FieldValueRequired", "Required value", "spec.workloads[0].name")
    ]


def test_wrong_type_integer() -> None:
    causes = admit(rebalancer_schema(), rebalancer(ttlSecondsAfterFinished="string"))
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "string": spec.ttlSecondsAfterFinished in body must be of type integer: "string"',
            "spec.ttlSecondsAfterFinished",
        )
    ]


def test_wrong_type_array_stops_descent() -> None:
    causes = admit(rebalancer_schema(), rebalancer(workloads="string"))
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "string": spec.workloads in body must be of type array: "string"',
            "spec.workloads",
        )
    ]


def test_bool_is_not_an_integer_and_int32_format_is_not_range_checked() -> None:
    schema = rebalancer_schema()
    causes = admit(schema, rebalancer(ttlSecondsAfterFinished=True))
    assert [c.message for c in causes] == [
        'Invalid value: "boolean": spec.ttlSecondsAfterFinished in body must be of type integer: "boolean"'
    ]
    assert admit(schema, rebalancer(ttlSecondsAfterFinished=2**40)) == []
    # JSON decoders may give an integral float: still an integer.
    assert admit(schema, rebalancer(ttlSecondsAfterFinished=3.0)) == []
    causes = admit(schema, rebalancer(ttlSecondsAfterFinished=3.5))
    assert [c.message for c in causes] == [
        'Invalid value: "number": spec.ttlSecondsAfterFinished in body must be of type integer: "number"'
    ]


def test_causes_are_ordered_required_first_then_sorted_properties() -> None:
    obj = rebalancer(
        workloads=[{"kind": "Deployment", "name": "a"}, {"apiVersion": "v1"}],
        ttlSecondsAfterFinished="x",
    )
    causes = admit(rebalancer_schema(), obj)
    assert [(c.reason, c.field) for c in causes] == [
        ("FieldValueInvalid", "spec.ttlSecondsAfterFinished"),
        ("FieldValueRequired", "spec.workloads[0].apiVersion"),
        ("FieldValueRequired", "spec.workloads[1].kind"),
        ("FieldValueRequired", "spec.workloads[1].name"),
    ]


def test_status_date_time_format() -> None:
    schema = rebalancer_schema()
    obj = rebalancer()
    obj["status"] = {"finishTime": "2024-05-01T10:20:30Z", "observedGeneration": 2}
    assert admit(schema, obj) == []
    obj["status"] = {"finishTime": "bogus"}
    assert admit(schema, obj) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "bogus": status.finishTime in body must be of type date-time: "bogus"',
            "status.finishTime",
        )
    ]


def test_metadata_apiversion_and_kind_are_left_to_the_server() -> None:
    obj = rebalancer()
    obj["metadata"] = {"name": "x", "labels": {"a": "b"}, "whatever": {"deep": 1}}
    obj["kind"] = 5  # not this module's business
    assert admit(rebalancer_schema(), obj) == []
    assert obj["metadata"] == {"name": "x", "labels": {"a": "b"}, "whatever": {"deep": 1}}
    assert obj["kind"] == 5


# ---------------------------------------------------------------------------------------------------------
# ResourceBinding and PropagationPolicy: enum and defaults
# ---------------------------------------------------------------------------------------------------------


def test_binding_enum_violation() -> None:
    causes = admit(binding_schema(), binding(conflictResolution="Bogus"))
    assert causes == [
        Cause(
            "FieldValueNotSupported",
            'Unsupported value: "Bogus": supported values: "Abort", "Overwrite"',
            "spec.conflictResolution",
        )
    ]


def test_binding_gets_default_conflict_resolution() -> None:
    obj = binding()
    binding_schema().default(obj)
    assert obj["spec"]["conflictResolution"] == "Abort"
    assert binding_schema().validate(obj) == []


def test_binding_keeps_explicit_conflict_resolution() -> None:
    obj = binding(conflictResolution="Overwrite")
    assert admit(binding_schema(), obj) == []
    assert obj["spec"]["conflictResolution"] == "Overwrite"


def test_binding_null_with_default_gets_the_default() -> None:
    obj = binding(conflictResolution=None)
    assert admit(binding_schema(), obj) == []
    assert obj["spec"]["conflictResolution"] == "Abort"


def test_binding_missing_resource_is_required() -> None:
    obj = binding()
    del obj["spec"]["resource"]
    assert admit(binding_schema(), obj) == [Cause("FieldValueRequired", "Required value", "spec.resource")]


def test_binding_quantity_map_is_int_or_string_with_pattern() -> None:
    schema = binding_schema()
    ok = binding(replicaRequirements={"resourceRequest": {"cpu": "100m", "memory": "128Mi", "pods": 3}})
    assert admit(schema, ok) == []
    bad = binding(replicaRequirements={"resourceRequest": {"cpu": "1x"}})
    causes = admit(schema, bad)
    assert len(causes) == 1
    assert causes[0].field == "spec.replicaRequirements.resourceRequest[cpu]"
    assert causes[0].message.startswith(
        'Invalid value: "1x": spec.replicaRequirements.resourceRequest[cpu] in body should match \'^(\\+|-)?'
    )


def test_policy_defaults() -> None:
    obj = policy(placement={})
    assert admit(policy_schema(), obj) == []
    spec = obj["spec"]
    assert spec["conflictResolution"] == "Abort"
    assert spec["preemption"] == "Never"
    assert spec["priority"] == 0
    assert spec["schedulerName"] == "default-scheduler"
    # Nested defaults are not created for a parent that is absent.
    assert spec["placement"] == {}
    assert "failover" not in spec


def test_policy_nested_default_applies_when_parent_exists() -> None:
    obj = policy(placement={"replicaScheduling": {}})
    assert admit(policy_schema(), obj) == []
    assert obj["spec"]["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided"}


def test_policy_defaults_inside_defaulted_chain() -> None:
    obj = policy(failover={"application": {"decisionConditions": {}}})
    assert admit(policy_schema(), obj) == []
    application = obj["spec"]["failover"]["application"]
    assert application["purgeMode"] == "Gracefully"
    assert application["decisionConditions"] == {"tolerationSeconds": 300}


def test_policy_without_placement_gets_no_placement() -> None:
    obj = policy()
    admit(policy_schema(), obj)
    assert "placement" not in obj["spec"]


# ---------------------------------------------------------------------------------------------------------
# Pruning
# ---------------------------------------------------------------------------------------------------------


def test_undeclared_fields_are_pruned() -> None:
    obj = rebalancer(unknownField="x")
    obj["spec"]["workloads"][0]["bogus"] = {"a": 1}
    obj["topLevelJunk"] = 1
    assert admit(rebalancer_schema(), obj) == []
    assert "unknownField" not in obj["spec"]
    assert "bogus" not in obj["spec"]["workloads"][0]
    assert "topLevelJunk" not in obj
    assert obj["spec"]["workloads"][0]["name"] == "demo"


def test_work_manifests_preserve_unknown_fields() -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "anything": [1, {"x": None}],
    }
    obj: dict[str, Any] = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "w", "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [copy.deepcopy(manifest)], "junk": 1}},
    }
    assert admit(work_schema(), obj) == []
    assert obj["spec"]["workload"] == {"manifests": [manifest]}


def test_status_of_bindings_preserve_unknown_fields() -> None:
    obj = binding()
    obj["status"] = {
        "aggregatedStatus": [
            {"clusterName": "m1", "status": {"replicas": 1, "free": {"form": True}}, "junk": 1}
        ]
    }
    assert admit(binding_schema(), obj) == []
    item = obj["status"]["aggregatedStatus"][0]
    assert item["status"] == {"replicas": 1, "free": {"form": True}}
    assert "junk" not in item


def test_object_without_properties_prunes_everything() -> None:
    schema = synthetic({"type": "object", "properties": {"opaque": {"type": "object"}}})
    obj = obj_with({"opaque": {"a": 1, "b": {"c": 2}}})
    assert admit(schema, obj) == []
    assert obj["spec"] == {"opaque": {}}


def test_preserve_unknown_fields_still_prunes_declared_children() -> None:
    schema = synthetic(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"strict": {"type": "object", "properties": {"a": {"type": "string"}}}},
        }
    )
    obj = obj_with({"free": {"x": 1}, "strict": {"a": "ok", "b": "dropped"}})
    assert admit(schema, obj) == []
    assert obj["spec"] == {"free": {"x": 1}, "strict": {"a": "ok"}}


def test_embedded_resource_keeps_type_and_object_meta() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    },
                }
            },
        }
    )
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"replicas": 1, "x": 1}}
    obj = obj_with({"template": template})
    assert admit(schema, obj) == []
    assert obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"replicas": 1},
    }
    missing = obj_with({"template": {"spec": {}}})
    assert admit(schema, missing) == [
        Cause("FieldValueRequired", "Required value: must not be empty", "spec.template.apiVersion"),
        Cause("FieldValueRequired", "Required value: must not be empty", "spec.template.kind"),
    ]


# ---------------------------------------------------------------------------------------------------------
# Synthetic schemas: one keyword at a time
# ---------------------------------------------------------------------------------------------------------


def test_pattern() -> None:
    schema = synthetic({"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}})
    assert admit(schema, obj_with({"name": "abc"})) == []
    assert admit(schema, obj_with({"name": "Abc"})) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'",
            "spec.name",
        )
    ]
    # Go's $ is end of text: a trailing newline does not match.
    assert len(admit(schema, obj_with({"name": "abc\n"}))) == 1


def test_minimum_and_maximum() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "inclusive": {"type": "integer", "minimum": 1, "maximum": 10},
                "exclusive": {
                    "type": "number",
                    "minimum": 0,
                    "exclusiveMinimum": True,
                    "maximum": 1,
                    "exclusiveMaximum": True,
                },
            },
        }
    )
    assert admit(schema, obj_with({"inclusive": 1, "exclusive": 0.5})) == []
    assert admit(schema, obj_with({"inclusive": 0, "exclusive": 1})) == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: 1: spec.exclusive in body should be less than 1",
            "spec.exclusive",
        ),
        Cause(
            "FieldValueInvalid",
            "Invalid value: 0: spec.inclusive in body should be greater than or equal to 1",
            "spec.inclusive",
        ),
    ]
    assert [c.message for c in admit(schema, obj_with({"inclusive": 11, "exclusive": 0}))] == [
        "Invalid value: 0: spec.exclusive in body should be greater than 0",
        "Invalid value: 11: spec.inclusive in body should be less than or equal to 10",
    ]
    assert [c.message for c in admit(schema, obj_with({"exclusive": 2.5}))] == [
        "Invalid value: 2.5: spec.exclusive in body should be less than 1"
    ]


def test_min_and_max_length_count_characters() -> None:
    schema = synthetic(
        {"type": "object", "properties": {"s": {"type": "string", "minLength": 1, "maxLength": 3}}}
    )
    assert admit(schema, obj_with({"s": "äöü"})) == []
    assert admit(schema, obj_with({"s": "abcd"})) == [
        Cause("FieldValueTooLong", "Too long: may not be longer than 3", "spec.s")
    ]
    assert admit(schema, obj_with({"s": ""})) == [
        Cause(
            "FieldValueInvalid", 'Invalid value: "": spec.s in body should be at least 1 chars long', "spec.s"
        )
    ]


def test_int_or_string() -> None:
    schema = synthetic({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}})
    assert admit(schema, obj_with({"port": 80})) == []
    assert admit(schema, obj_with({"port": "http"})) == []
    assert admit(schema, obj_with({"port": True})) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
            "spec.port",
        )
    ]


def test_nullable() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "maybe": {"type": "string", "nullable": True},
                "never": {"type": "string"},
                "list": {"type": "array", "items": {"type": "string"}},
            },
        }
    )
    obj = obj_with({"maybe": None, "never": None, "list": ["a", None]})
    causes = admit(schema, obj)
    # The nullable null stays; the non-nullable one without default is dropped (kube prunes it).
    assert obj["spec"] == {"maybe": None, "list": ["a", None]}
    # A null list item is not dropped: it is a type error.
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "null": spec.list[1] in body must be of type string: "null"',
            "spec.list[1]",
        )
    ]


def test_nullable_null_is_not_defaulted() -> None:
    schema = synthetic(
        {"type": "object", "properties": {"mode": {"type": "string", "nullable": True, "default": "a"}}}
    )
    obj = obj_with({"mode": None})
    assert admit(schema, obj) == []
    assert obj["spec"] == {"mode": None}
    obj = obj_with({})
    assert admit(schema, obj) == []
    assert obj["spec"] == {"mode": "a"}


def test_additional_properties_map() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "labels": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"v": {"type": "integer"}},
                        "required": ["v"],
                    },
                }
            },
        }
    )
    obj = obj_with({"labels": {"a": {"v": 1, "junk": 2}, "b": {"v": "x"}, "c": {}}})
    causes = admit(schema, obj)
    assert obj["spec"]["labels"]["a"] == {"v": 1}
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "string": spec.labels[b].v in body must be of type integer: "string"',
            "spec.labels[b].v",
        ),
        Cause("FieldValueRequired", "Required value", "spec.labels[c].v"),
    ]


def test_list_type_set_duplicates() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "bad": {"type": "array", "items": {"type": "integer"}, "minItems": 5},
            },
        }
    )
    assert admit(schema, obj_with({"tags": ["a", "b"]})) == []
    causes = admit(schema, obj_with({"tags": ["a", "b", "a", "a", "b"], "bad": [1]}))
    # Schema causes come first, list-type causes after them (as in kube's strategy).
    assert causes == [
        Cause(
            "FieldValueInvalid", "Invalid value: 1: spec.bad in body should have at least 5 items", "spec.bad"
        ),
        Cause("FieldValueDuplicate", 'Duplicate value: "a"', "spec.tags[2]"),
        Cause("FieldValueDuplicate", 'Duplicate value: "b"', "spec.tags[4]"),
    ]


def test_list_type_map_duplicates() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["key"],
                    "items": {
                        "type": "object",
                        "properties": {"key": {"type": "string"}, "v": {"type": "integer"}},
                    },
                }
            },
        }
    )
    assert admit(schema, obj_with({"ports": [{"key": "a"}, {"key": "b"}]})) == []
    assert admit(schema, obj_with({"ports": [{"key": "a", "v": 1}, {"key": "a", "v": 2}]})) == [
        Cause("FieldValueDuplicate", 'Duplicate value: map[string]interface {}{"key":"a"}', "spec.ports[1]")
    ]


def test_date_time_and_byte_formats() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "date-time"},
                "data": {"type": "string", "format": "byte"},
                "n": {"type": "integer", "format": "int32"},
            },
        }
    )
    for good in ("2024-02-29T23:59:59Z", "2024-01-01t00:00:00.123+02:00"):
        assert admit(schema, obj_with({"at": good})) == [], good
    for bad in ("2023-02-29T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01", "yesterday"):
        assert [c.field for c in admit(schema, obj_with({"at": bad}))] == ["spec.at"], bad
    assert admit(schema, obj_with({"data": "aGVsbG8="})) == []
    assert admit(schema, obj_with({"data": "not base64!"})) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "not base64!": spec.data in body must be of type byte: "not base64!"',
            "spec.data",
        )
    ]
    assert admit(schema, obj_with({"n": 2**40})) == []


def test_enum_of_numbers_and_null() -> None:
    schema = synthetic({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}})
    assert admit(schema, obj_with({"n": 2})) == []
    assert admit(schema, obj_with({"n": 3})) == [
        Cause("FieldValueNotSupported", 'Unsupported value: 3: supported values: "1", "2"', "spec.n")
    ]


def test_defaults_in_array_items_and_maps_are_copied() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "opts": {
                                "type": "object",
                                "default": {"a": [1]},
                                "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
                            }
                        },
                    },
                }
            },
        }
    )
    obj = obj_with({"items": [{}, {"opts": {"a": [5]}}, {}]})
    assert admit(schema, obj) == []
    items = obj["spec"]["items"]
    assert items == [{"opts": {"a": [1]}}, {"opts": {"a": [5]}}, {"opts": {"a": [1]}}]
    items[0]["opts"]["a"].append(2)
    assert items[2]["opts"]["a"] == [1]


def test_missing_parent_gets_no_nested_default_but_defaulted_parent_does() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "plain": {"type": "object", "properties": {"x": {"type": "string", "default": "d"}}},
                "auto": {
                    "type": "object",
                    "default": {},
                    "properties": {"y": {"type": "integer", "default": 7}},
                },
            },
        }
    )
    obj = obj_with({})
    assert admit(schema, obj) == []
    assert obj["spec"] == {"auto": {"y": 7}}


def test_any_of_one_of_all_of() -> None:
    schema = synthetic(
        {
            "type": "object",
            "properties": {
                "any": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
                "one": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]},
                "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 4}]},
            },
        }
    )
    assert admit(schema, obj_with({"any": 11, "one": 20, "all": "abc"})) == []
    causes = admit(schema, obj_with({"any": 5}))
    assert causes == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "": "spec.any" must validate at least one schema (anyOf)',
            "<nil>",
        ),
        Cause(
            "FieldValueInvalid",
            "Invalid value: 5: spec.any in body should be greater than or equal to 10",
            "spec.any",
        ),
    ]
    causes = admit(schema, obj_with({"one": 7}))
    assert [c.message for c in causes] == [
        'Invalid value: "": "spec.one" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives"
    ]
    causes = admit(schema, obj_with({"all": "a"}))
    assert [c.message for c in causes] == [
        'Invalid value: "a": spec.all in body should be at least 2 chars long',
        'Invalid value: "": "spec.all" must validate all the schemas (allOf)',
    ]


def test_compiled_schema_is_reusable_and_does_not_keep_state() -> None:
    schema = rebalancer_schema()
    for _ in range(3):
        assert admit(schema, rebalancer(workloads=[])) != []
        assert admit(schema, rebalancer()) == []
