"""Request bodies: read within kube's size limit, decoded, and checked against the URL's kind.

kube-apiserver refuses a body over 3 MiB, decodes JSON, YAML or protobuf by content type,
defaults apiVersion and kind from the URL and refuses another type; its JSON errors carry
Go's ``encoding/json`` wording, which clients and tests match on. Registry lookups only
serve the custom-resource version check.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from controller_manager import objects

from . import builtin_types, errors, protobuf
from .codec import decode_json, go_json_syntax_error, go_json_type_name
from .resources import Registry, ResourceType
from .responses import JSON

MAX_BODY = 3 * 1024 * 1024


class GoYamlLoader(yaml.SafeLoader):
    """YAML as kube reads it (sigs.k8s.io/yaml over go-yaml): an unquoted date or time stays a string."""


GoYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


async def read_body(request: web.Request) -> bytes:
    length = request.content_length
    if length is not None and length > MAX_BODY:
        raise errors.too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_BODY:
            raise errors.too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def decode_json_body(body: bytes) -> Any:
    """A JSON body (a patch, options, a Scale); a parse error is a 400 in Go's words."""
    try:
        return decode_json(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise errors.bad_request(go_json_syntax_error(exc)) from exc


async def decode_object(request: web.Request, registry: Registry, rtype: ResourceType) -> dict[str, Any]:
    """The object a create or update sends, in the URL's group/version/kind."""
    ctype = request.content_type
    body = await read_body(request)
    if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            obj = yaml.load(body, Loader=GoYamlLoader)  # a SafeLoader
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error converting YAML to JSON: {exc}") from exc
    elif ctype in (JSON, "", "application/octet-stream") or ctype.endswith("+json"):
        try:
            obj = decode_json(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rtype.kind}): couldn't get "
                f"version/kind; json parse error: {go_json_syntax_error(exc)} ({_excerpt(body)})") from exc
    elif ctype == protobuf.MEDIA_TYPE:
        obj = protobuf.decode_body(body, rtype)
    else:
        raise errors.unsupported_media_type("application/json, application/yaml, "
                                            "application/vnd.kubernetes.protobuf")
    if not isinstance(obj, dict):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rtype.kind}): couldn't get version/kind; "
            f"json parse error: json: cannot unmarshal {go_json_type_name(obj)} into Go value of type "
            f"struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
            f"\"json:\\\"kind,omitempty\\\"\" }}")
    check_kind(registry, rtype, obj)
    if rtype.builtin:
        builtin_types.check_types(rtype, obj)
    return obj


KUBE_SCHEME_VERSIONS: dict[str, tuple[str, ...]] = {
    "": ("v1",), "apps": ("v1", "v1beta1", "v1beta2"), "batch": ("v1", "v1beta1", "v2alpha1"),
    "autoscaling": ("v1", "v2beta1", "v2beta2"), "policy": ("v1beta1",), "extensions": ("v1beta1",),
    "networking.k8s.io": ("v1", "v1beta1"), "rbac.authorization.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "coordination.k8s.io": ("v1", "v1beta1"), "storage.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "events.k8s.io": ("v1", "v1beta1"), "discovery.k8s.io": ("v1beta1",),
    "authorization.k8s.io": ("v1", "v1beta1"), "authentication.k8s.io": ("v1", "v1beta1"),
    "apiextensions.k8s.io": ("v1", "v1beta1"), "admissionregistration.k8s.io": ("v1", "v1beta1"),
    "scheduling.k8s.io": ("v1", "v1beta1", "v1alpha1"), "node.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "certificates.k8s.io": ("v1", "v1beta1"), "apiregistration.k8s.io": ("v1", "v1beta1"),
}
"""The versions kube-apiserver 1.20's scheme registers per built-in group, served or not: a body of one of them
sent to another version's path is "the API version in the data ... does not match"; of any other version, "no kind
... is registered" (both observed)."""


def check_kind(registry: Registry, rtype: ResourceType, obj: dict[str, Any]) -> None:
    """kube decodes with the URL's group/version/kind as default and refuses another type."""
    api_version = obj.get("apiVersion") or rtype.api_version
    kind = obj.get("kind") or rtype.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise errors.bad_request("apiVersion and kind must be strings")
    group, _, version = api_version.rpartition("/")
    mismatch = errors.bad_request(f"the API version in the data ({api_version}) does not match the "
                                  f"expected API version ({rtype.api_version})")
    if group != rtype.group:
        raise mismatch
    if rtype.builtin:
        if version != rtype.version and version in KUBE_SCHEME_VERSIONS.get(group, ()):
            raise mismatch
        if version != rtype.version:
            raise errors.bad_request(
                f'{kind} in version "{version}" cannot be handled as a {rtype.kind}: no kind "{kind}" is registered '
                f'for version "{api_version}" in scheme "pkg/api/legacyscheme/scheme.go:30"')
        if kind != rtype.kind:
            internal = rtype.group.split(".")[0] if rtype.group else "core"
            raise errors.bad_request(
                f'{kind} in version "{version}" cannot be handled as a {rtype.kind}: converting '
                f"({version}.{kind}) to ({internal}.{rtype.kind}): unknown conversion")
    else:
        if version != rtype.version and registry.get(group, version, rtype.plural) is None:
            raise mismatch
        if kind != rtype.kind:  # kube names the object by the kind the body gave
            raise errors.invalid(kind, rtype.group, objects.name(obj), [errors.Cause(
                "FieldValueInvalid", f'Invalid value: "{kind}": must be {rtype.kind}', "kind")])
    obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind



def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= 50 else text[:50] + "..."
