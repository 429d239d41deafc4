"""The REST surface: URL parsing, content negotiation, and one method per verb.

Requests are parsed here and handed to :class:`~devplane.apiserver.store.Store`, which owns
the semantics. Every error leaves as a kube ``Status`` (or kube's text/plain 404).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
import yaml
from aiohttp import web

from . import access_review, discovery, errors, openapi, protobuf
from .auth import RequestGuard
from .codec import decode_json, encode_json, go_json_type_name
from .errors import StatusError
from .patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector, field_values
from .startup import Phase, StartupWindows, crd_served_group
from .store import DeleteOptions, FieldChecks, Store, etcd_key, namespace_slice
from .tables import to_table
from .watch import Stored, Watcher

log = structlog.get_logger(__name__)

MAX_BODY = 3 * 1024 * 1024
JSON = "application/json"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
TOO_LARGE_RV_WAIT = 3.0


@dataclass
class Target:
    """Where a resource request points."""

    rtype: ResourceType
    namespace: str
    name: str
    subresource: str
    legacy_watch: bool = False  # the /watch/ path prefix of old clients


@dataclass
class Fault:
    """A test-injected failure: the next ``times`` requests matching method and path fail with ``code``."""

    method: str
    path_contains: str
    code: int = 500
    reason: str = "InternalError"
    message: str = "injected failure"
    times: int = 1
    page_not_found: bool = False  # answer Go's text/plain "404 page not found" instead (an unserved path)


@dataclass
class ServerOptions:
    bookmark_interval: float = 60.0
    min_request_timeout: float = 1800.0


def _json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=encode_json(body), status=status, content_type=JSON)


def _raw_response(raw: bytes, status: int = 200) -> web.Response:
    return web.Response(body=raw, status=status, content_type=JSON)


def error_response(exc: StatusError) -> web.Response:
    if exc.plain_text:
        return web.Response(text=exc.message + "\n", status=exc.code, content_type="text/plain")
    response = _json_response(exc.to_status(), exc.code)
    retry_after = (exc.details or {}).get("retryAfterSeconds")
    if isinstance(retry_after, int) and retry_after > 0:  # kube's responsewriters.ErrorNegotiated does the same
        response.headers["Retry-After"] = str(retry_after)
    return response


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class Api:
    """The aiohttp handler; one instance per server."""

    def __init__(self, store: Store, options: ServerOptions) -> None:
        self.store = store
        self.registry = store.registry
        self.options = options
        self.faults: list[Fault] = []
        self.guard: RequestGuard | None = None  # authentication/authorization; None = open server
        self.startup: StartupWindows | None = None  # a restart's 503/404 windows; None = serving normally

    def _injected_fault(self, request: web.Request) -> StatusError | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and fault.path_contains in request.path:
                fault.times -= 1
                if fault.page_not_found:
                    return errors.page_not_found()
                return StatusError(fault.code, fault.reason, fault.message, {})
        return None

    # --------------------------------------------------------------- entry

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        response: web.StreamResponse
        try:
            if self.startup is not None and (early := self._while_starting(request)) is not None:
                response = early
            else:
                if self.guard is not None:  # kube's filters run before routing: 401/403 before any 404
                    self.guard.check(request.method, request.path, request.headers, request.query)
                fault = self._injected_fault(request) if self.faults else None
                if fault is not None:
                    raise fault
                response = await self._dispatch(request)
        except StatusError as exc:
            response = error_response(exc)
        except web.HTTPRequestEntityTooLarge:
            response = error_response(errors.too_large())
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("request failed", method=request.method, path=request.path)
            response = error_response(errors.internal(f"internal error: {exc}"))
        log.debug("request", method=request.method, path=request.path, status=response.status,
                  ms=round((time.perf_counter() - started) * 1000, 2))
        return response

    def _while_starting(self, request: web.Request) -> web.Response | None:
        """kube's answers during a restart (``startup.py``): raises its 503 or 404, or returns /readyz's 500;
        None serves the request normally. Drops the windows once both have passed."""
        startup = self.startup
        assert startup is not None
        phase = startup.phase()
        if phase is Phase.STARTING:
            return startup.while_starting(request.path)
        if phase is Phase.CRDS_UNSERVED:
            if crd_served_group(request.path, self.registry):
                if self.guard is not None:  # the 404 comes from routing, after the filters
                    self.guard.check(request.method, request.path, request.headers, request.query)
                raise errors.page_not_found()
            return None
        self.startup = None
        log.info("api server startup windows over: serving normally")
        return None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/version":
            return _json_response(discovery.SERVER_VERSION)
        if path == "/api":
            return _json_response(discovery.api_versions())
        if path == "/apis":
            return _json_response(discovery.api_group_list(self.registry))
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi_v3(parts[2:])
        if parts[:1] == ["openapi"]:
            raise errors.page_not_found()
        if parts[:1] == ["api"]:
            if len(parts) < 2 or parts[1] != "v1":
                raise errors.page_not_found()
            if len(parts) == 2:
                return _json_response(discovery.api_resource_list(self.registry, "", "v1"))
            return await self._resource(request, "", "v1", parts[2:])
        if parts[:1] == ["apis"] and len(parts) >= 2:
            group = parts[1]
            if not self.registry.group_exists(group):
                raise errors.page_not_found()
            if len(parts) == 2:
                return _json_response(discovery.api_group(self.registry, group))
            version = parts[2]
            if not self.registry.version_exists(group, version):
                raise errors.page_not_found()
            if len(parts) == 3:
                return _json_response(discovery.api_resource_list(self.registry, group, version))
            if group == access_review.GROUP:
                return await self._access_review(request, group, version, parts[3:])
            return await self._resource(request, group, version, parts[3:])
        raise errors.page_not_found()

    async def _access_review(self, request: web.Request, group: str, version: str, parts: list[str]) -> web.Response:
        """Reviews are created and answered, never stored (``access_review.py``): 201 with the status."""
        target, is_collection = self._target(group, version, parts)
        if target is None or not is_collection or target.namespace:
            raise errors.page_not_found()
        if request.method != "POST":
            raise errors.method_not_allowed()
        review = await self._decode_object(request, target.rtype)
        user = access_review.requesting_user(self.guard, request.headers)
        authorizer = self.guard.authorizer if self.guard is not None else None
        answer = access_review.answer(target.rtype.kind, review, user, authorizer)
        return _json_response(answer, 201)

    def _openapi_v3(self, parts: list[str]) -> web.Response:
        if not parts:
            return _json_response(openapi.root_document(self.registry))
        if parts[:2] == ["api", "v1"] and len(parts) == 2:
            return _json_response(openapi.group_version_document(self.registry, "", "v1"))
        if parts[:1] == ["apis"] and len(parts) == 3 and self.registry.version_exists(parts[1], parts[2]):
            return _json_response(openapi.group_version_document(self.registry, parts[1], parts[2]))
        raise errors.page_not_found()

    # --------------------------------------------------------------- routing

    def _target(self, group: str, version: str, parts: list[str]) -> tuple[Target | None, bool]:
        """Parse the path after /api/v1 or /apis/G/V. Returns (target, is_collection)."""
        legacy_watch = False
        if parts[:1] == ["watch"]:
            legacy_watch, parts = True, parts[1:]
        namespace = ""
        if parts[:1] == ["namespaces"] and len(parts) >= 3 and not (
                len(parts) == 3 and parts[2] in ("status", "finalize")):
            namespace, parts = parts[1], parts[2:]
        if not parts or len(parts) > 3:
            return None, False
        rtype = self.registry.get(group, version, parts[0])
        if rtype is None:
            if not group:
                raise errors.resource_not_found()
            raise errors.page_not_found()
        if namespace and not rtype.namespaced:
            raise errors.page_not_found()
        name = parts[1] if len(parts) >= 2 else ""
        sub = parts[2] if len(parts) == 3 else ""
        if sub and sub not in rtype.subresources:
            raise errors.page_not_found()
        return Target(rtype, namespace, name, sub, legacy_watch), not name

    async def _resource(self, request: web.Request, group: str, version: str,
                        parts: list[str]) -> web.StreamResponse:
        target, is_collection = self._target(group, version, parts)
        if target is None:
            raise errors.page_not_found()
        method = request.method
        query = request.query
        watch = _truthy(query.get("watch")) or target.legacy_watch
        if is_collection:
            if target.rtype.namespaced is False and target.namespace:
                raise errors.page_not_found()
            if method == "GET":
                return await (self.watch(request, target) if watch else self.list_objects(request, target))
            if method == "POST":
                return await self.create(request, target)
            if method == "DELETE":
                return await self.delete_collection(request, target)
            raise errors.method_not_allowed()
        if target.rtype.namespaced and not target.namespace:
            raise errors.page_not_found()
        if watch and method == "GET":
            return await self.watch(request, target)
        if target.subresource == "scale":
            return await self.scale(request, target)
        if method == "GET":
            return await self.get(request, target)
        if method == "PUT":
            return await self.update(request, target)
        if method == "PATCH":
            return await self.patch(request, target)
        if method == "DELETE" and not target.subresource:
            return await self.delete(request, target)
        raise errors.method_not_allowed()

    # --------------------------------------------------------------- encoding helpers

    def encoder(self, rtype: ResourceType) -> Callable[[Stored], bytes]:
        """Objects are stored in the storage version; relabel them when served in another."""
        if rtype.version == rtype.storage_version:
            return lambda stored: stored.raw

        def convert(stored: Stored) -> bytes:
            obj = dict(stored.obj)
            obj["apiVersion"] = rtype.api_version
            return encode_json(obj)

        return convert

    def _as_object(self, rtype: ResourceType, stored: Stored) -> dict[str, Any]:
        if rtype.version == rtype.storage_version:
            return stored.obj
        return {**stored.obj, "apiVersion": rtype.api_version}

    async def _respond_object(self, request: web.Request, target: Target, stored: Stored,
                              status: int = 200) -> web.Response:
        await self.store.wait_durable(stored.rv)
        if _wants_table(request):
            meta = {"resourceVersion": str(stored.rv)}
            return _json_response(to_table(target.rtype, [self._as_object(target.rtype, stored)], meta), status)
        return _raw_response(self.encoder(target.rtype)(stored), status)

    # --------------------------------------------------------------- body decoding

    async def _read_body(self, request: web.Request) -> bytes:
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

    async def _decode_object(self, request: web.Request, rtype: ResourceType) -> dict[str, Any]:
        ctype = request.content_type
        body = await self._read_body(request)
        if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                obj = yaml.safe_load(body)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error converting YAML to JSON: {exc}") from exc
        elif ctype in (JSON, "", "application/octet-stream") or ctype.endswith("+json"):
            try:
                obj = decode_json(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise errors.bad_request(
                    f"the object provided is unrecognized (must be of type {rtype.kind}): couldn't get "
                    f"version/kind; json parse error: {_json_error(exc)} ({_excerpt(body)})") from exc
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
        self._check_kind(rtype, obj)
        return obj

    def _check_kind(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
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
            if version != rtype.version or kind != rtype.kind:
                internal = rtype.group.split(".")[0] if rtype.group else "core"
                raise errors.bad_request(
                    f'{kind} in version "{version}" cannot be handled as a {rtype.kind}: converting '
                    f"({version}.{kind}) to ({internal}.{rtype.kind}): unknown conversion")
        else:
            if version != rtype.version and self.registry.get(group, version, rtype.plural) is None:
                raise mismatch
            if kind != rtype.kind:
                name = str((obj.get("metadata") or {}).get("name") or "")
                raise errors.invalid(rtype.kind, rtype.group, name, [errors.Cause(
                    "FieldValueInvalid", f'Invalid value: "{kind}": must be {rtype.kind}', "kind")])
        obj["apiVersion"], obj["kind"] = rtype.api_version, rtype.kind

    # --------------------------------------------------------------- verbs

    async def get(self, request: web.Request, target: Target) -> web.Response:
        stored = self.store.get(target.rtype, target.namespace, target.name)
        if target.subresource == "finalize":
            raise errors.method_not_allowed()
        return await self._respond_object(request, target, stored)

    async def create(self, request: web.Request, target: Target) -> web.Response:
        obj = await self._decode_object(request, target.rtype)
        checks = _field_checks(request)
        stored = self.store.create(target.rtype, target.namespace, obj, dry_run=_dry_run(request), checks=checks)
        return _warn(await self._respond_object(request, target, stored, 201), checks)

    async def update(self, request: web.Request, target: Target) -> web.Response:
        obj = await self._decode_object(request, target.rtype)
        checks = _field_checks(request)
        stored = self.store.update(target.rtype, target.namespace, target.name, obj,
                                   subresource=target.subresource, dry_run=_dry_run(request), checks=checks)
        return _warn(await self._respond_object(request, target, stored), checks)

    async def patch(self, request: web.Request, target: Target) -> web.Response:
        ctype = request.content_type
        if ctype not in PATCH_TYPES:
            accepted = ("application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                        if not target.rtype.builtin else ", ".join(PATCH_TYPES))
            raise errors.unsupported_media_type(accepted)
        body = await self._read_body(request)
        if ctype == "application/apply-patch+yaml":
            return await self._apply(request, target, body)
        try:
            patch = decode_json(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise errors.bad_request(_json_error(exc)) from exc
        rtype = target.rtype
        if ctype == "application/json-patch+json":
            def apply(doc: dict[str, Any]) -> Any:
                return apply_json_patch(doc, patch)
        elif ctype == "application/merge-patch+json":
            if not isinstance(patch, dict):
                raise errors.bad_request("the patch must be a JSON object")

            def apply(doc: dict[str, Any]) -> Any:
                return apply_merge_patch(doc, patch)
        else:
            if not rtype.builtin:
                raise errors.unsupported_media_type(
                    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
            if not isinstance(patch, dict):
                raise errors.bad_request("the patch must be a JSON object")

            def apply(doc: dict[str, Any]) -> Any:
                return apply_strategic_merge_patch(doc, patch, rtype.kind_key)
        checks = _field_checks(request)
        stored = self.store.patch(rtype, target.namespace, target.name, apply,
                                  subresource=target.subresource, dry_run=_dry_run(request), checks=checks)
        return _warn(await self._respond_object(request, target, stored), checks)

    async def _apply(self, request: web.Request, target: Target, body: bytes) -> web.Response:
        """Server-side apply, simplified: create when absent, else merge the applied fields in."""
        try:
            applied = yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from exc
        if not isinstance(applied, dict):
            raise errors.bad_request("the apply patch must be an object")
        self._check_kind(target.rtype, applied)
        dry_run = _dry_run(request)  # `kubectl diff --server-side` sends dryRun=All: nothing may be stored
        if self.store.lookup(target.rtype, target.namespace, target.name) is None:
            applied.setdefault("metadata", {})["name"] = target.name
            stored = self.store.create(target.rtype, target.namespace, applied, dry_run=dry_run)
            return await self._respond_object(request, target, stored, 201)
        stored = self.store.patch(target.rtype, target.namespace, target.name,
                                  lambda doc: apply_merge_patch(doc, applied), subresource=target.subresource,
                                  dry_run=dry_run)
        return await self._respond_object(request, target, stored)

    async def _delete_options(self, request: web.Request) -> DeleteOptions:
        body = await self._read_body(request)
        opts: dict[str, Any] = {}
        if body.strip():
            try:
                opts = (protobuf.decode_delete_options(body) if request.content_type == protobuf.MEDIA_TYPE
                        else decode_json(body))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise errors.bad_request(_json_error(exc)) from exc
            if not isinstance(opts, dict):
                raise errors.bad_request("DeleteOptions must be an object")
        pre = opts.get("preconditions") or {}
        propagation = opts.get("propagationPolicy") or request.query.get("propagationPolicy") or "Background"
        if opts.get("orphanDependents") is True or _truthy(request.query.get("orphanDependents")):
            propagation = "Orphan"
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise errors.bad_request(f'propagationPolicy: Unsupported value: "{propagation}": supported values: '
                                     f'"Foreground", "Background", "Orphan"')
        grace = opts.get("gracePeriodSeconds")
        if grace is None and request.query.get("gracePeriodSeconds") is not None:
            try:
                grace = int(request.query["gracePeriodSeconds"])
            except ValueError as exc:
                raise errors.bad_request("gracePeriodSeconds must be an integer") from exc
        rv = pre.get("resourceVersion")
        return DeleteOptions(uid=pre.get("uid"), resource_version=str(rv) if rv is not None else None,
                             propagation=propagation, grace_period=grace)

    async def delete(self, request: web.Request, target: Target) -> web.Response:
        options = await self._delete_options(request)
        dry_run = request.query.get("dryRun") == "All"
        rtype = target.rtype
        stored, gone = self.store.delete(rtype, target.namespace, target.name, options, dry_run=dry_run)
        await self.store.wait_durable(stored.rv)
        if not gone or rtype.storage_key == "/pods":
            return _raw_response(self.encoder(rtype)(stored))
        details: dict[str, Any] = {"name": target.name}
        if rtype.group:
            details["group"] = rtype.group
        details["kind"] = rtype.plural
        details["uid"] = stored.obj["metadata"].get("uid", "")
        return _json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": details})

    async def delete_collection(self, request: web.Request, target: Target) -> web.Response:
        options = await self._delete_options(request)
        labels, fields = self._selectors(request, target.rtype)
        deleted: list[Stored] = []
        for stored in self.store.items(target.rtype.storage_key, target.namespace):
            if self._matches(stored, labels, fields):
                final, _ = self.store.delete(target.rtype, stored.namespace, stored.name, options)
                deleted.append(final)
        rv = self.store.rv
        await self.store.wait_durable(rv)
        return self._list_response(request, target.rtype, deleted, {"resourceVersion": str(rv)})

    async def scale(self, request: web.Request, target: Target) -> web.Response:
        rtype = target.rtype
        if request.method in ("PUT", "PATCH"):
            current = self.store.get(rtype, target.namespace, target.name)
            scale = _scale_of(current.obj)
            if request.method == "PUT":
                body = await self._read_body(request)
                try:
                    new_scale = decode_json(body)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise errors.bad_request(_json_error(exc)) from exc
            else:
                body = await self._read_body(request)
                patch = decode_json(body)
                new_scale = (apply_json_patch(scale, patch) if request.content_type == "application/json-patch+json"
                             else apply_merge_patch(scale, patch))
            replicas = (new_scale.get("spec") or {}).get("replicas") if isinstance(new_scale, dict) else None
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid("Scale", "autoscaling", target.name, [errors.Cause(
                    "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "spec.replicas")])
            given_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
            if given_rv and str(given_rv) != str(current.rv):
                raise errors.conflict(rtype.plural, rtype.group, target.name)
            obj = decode_json(current.raw)
            obj.setdefault("spec", {})["replicas"] = replicas
            stored = self.store.update(rtype, target.namespace, target.name, obj, require_rv=False)
        else:
            stored = self.store.get(rtype, target.namespace, target.name)
        await self.store.wait_durable(stored.rv)
        return _json_response(_scale_of(stored.obj))

    # --------------------------------------------------------------- list

    def _selectors(self, request: web.Request, rtype: ResourceType) -> tuple[LabelSelector, FieldSelector]:
        labels = LabelSelector.parse(request.query.get("labelSelector", ""))
        fields = FieldSelector.parse(request.query.get("fieldSelector", ""), rtype.field_selectors,
                                     builtin=rtype.builtin)
        return labels, fields

    @staticmethod
    def _matches(stored: Stored, labels: LabelSelector, fields: FieldSelector) -> bool:
        if not labels.empty() and not labels.matches(stored.obj["metadata"].get("labels")):
            return False
        return fields.empty() or fields.matches(field_values(stored.obj, fields.keys))

    async def list_objects(self, request: web.Request, target: Target) -> web.Response:
        rtype = target.rtype
        query = request.query
        labels, fields = self._selectors(request, rtype)
        limit = _int_param(query.get("limit"), "limit")
        token = query.get("continue")
        key = rtype.storage_key
        await self._wait_for_rv(query.get("resourceVersion"))
        if token:
            rv, start = _decode_continue(token)
            items = self.store.snapshot_at(key, rv)
            if items is None:
                fresh = _encode_continue(self.store.rv, start)
                raise StatusError(410, "Expired",
                                  "The provided continue parameter is too old to display a consistent list result. "
                                  "You can start a new list without the continue parameter, or use the continue "
                                  "token in this response to retrieve the remainder of the results. Continuing "
                                  "with the provided token results in an inconsistent list - objects that were "
                                  "created, modified, or deleted between the time the first chunk was returned and "
                                  "now may show up in the list.", extra={"metadata": {"continue": fresh}})
            if target.namespace:  # items are sorted by "namespace/name": a namespace is one slice
                items = namespace_slice(items, target.namespace, _item_key)
        else:
            rv = self.store.rv
            start = ""
            items = self.store.items(key, target.namespace)
        page: list[Stored] = []
        next_start = ""
        remaining = 0
        # Items are in key order, so the ones before ``start`` are a prefix: pages cost O(limit).
        first = bisect.bisect_left(items, start, key=_item_key) if start else 0
        for position in range(first, len(items)):
            stored = items[position]
            if limit and len(page) >= limit:
                next_start = _item_key(page[-1]) + "\x00"
                remaining = len(items) - position
                break
            if self._matches(stored, labels, fields):
                page.append(stored)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if next_start:
            meta["continue"] = _encode_continue(rv, next_start)
            if labels.empty() and fields.empty():
                meta["remainingItemCount"] = remaining
            if not token:
                self.store.snapshot(key, rv, self.store.items(key))
        elif not rtype.builtin:
            meta["continue"] = ""
        await self.store.wait_durable(rv)
        return self._list_response(request, rtype, page, meta)

    def _list_response(self, request: web.Request, rtype: ResourceType, items: list[Stored],
                       meta: dict[str, Any]) -> web.Response:
        if _wants_table(request):
            return _json_response(to_table(rtype, [self._as_object(rtype, s) for s in items], meta))
        encode = self.encoder(rtype)
        head = encode_json({"apiVersion": rtype.api_version, "kind": rtype.list_kind, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(encode(s) for s in items) + b"]}"
        return _raw_response(body)

    async def _wait_for_rv(self, text: str | None) -> None:
        """A list at a future resourceVersion waits briefly, then 504 (kube's "Too large resource version")."""
        wanted = _int_param(text, "resourceVersion") if text not in (None, "", "0") else 0
        if not wanted or wanted <= self.store.rv:
            return
        deadline = time.monotonic() + TOO_LARGE_RV_WAIT
        while self.store.rv < wanted and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.store.rv < wanted:
            raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {wanted}, current: "
                              f"{self.store.rv}", {"causes": [{"reason": "ResourceVersionTooLarge",
                                                               "message": "Too large resource version"}],
                                                   "retryAfterSeconds": 1})

    # --------------------------------------------------------------- watch

    async def watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        rtype = target.rtype
        query = request.query
        labels, fields = self._selectors(request, rtype)
        if target.name:
            name_sel = FieldSelector.parse(f"metadata.name={target.name}", rtype.field_selectors,
                                           builtin=rtype.builtin)
            fields = name_sel if fields.empty() else FieldSelector.parse(
                query.get("fieldSelector", "") + f",metadata.name={target.name}", rtype.field_selectors,
                builtin=rtype.builtin)
        rv_text = query.get("resourceVersion", "")
        from_rv = _int_param(rv_text, "resourceVersion") if rv_text not in ("", "0") else None
        timeout_param = _int_param(query.get("timeoutSeconds"), "timeoutSeconds")
        timeout = float(timeout_param) if timeout_param else \
            self.options.min_request_timeout * (1 + random.random())
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        send_initial = _truthy(query.get("sendInitialEvents"))
        encode = self._watch_encoder(request, rtype)
        key = rtype.storage_key
        store = self.store
        start_rv = from_rv if from_rv is not None else store.rv
        watcher = Watcher(namespace=target.namespace, labels=labels, fields=fields, encode=encode,
                          start_rv=start_rv, max_buffer=store.watch_buffer)
        initial = from_rv is None or send_initial
        if initial:
            for stored in store.items(key, target.namespace):
                watcher.push_initial(stored)
            if send_initial:
                watcher.push_raw(self._bookmark(rtype, start_rv, initial_end=True))
        await store.wait_durable(min(start_rv, store.rv))  # a future resourceVersion just stays silent
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON,
                                                           "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        try:
            store.attach_watcher(key, watcher, start_rv)
        except StatusError as exc:
            await response.prepare(request)
            await response.write(b'{"type":"ERROR","object":' + encode_json(exc.to_status()) + b"}\n")
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            await self._stream(response, watcher, rtype, timeout, bookmarks)
        except ConnectionError:
            pass  # the client went away
        finally:
            store.detach_watcher(key, watcher)
        return response

    def _watch_encoder(self, request: web.Request, rtype: ResourceType) -> Callable[[Stored], bytes]:
        if not _wants_table(request):
            return self.encoder(rtype)

        def table(stored: Stored) -> bytes:
            obj = self._as_object(rtype, stored)
            return encode_json(to_table(rtype, [obj], {"resourceVersion": str(stored.rv)}))

        return table

    def _bookmark(self, rtype: ResourceType, rv: int, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        if rtype.builtin:
            meta["creationTimestamp"] = None
        obj = {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
        return b'{"type":"BOOKMARK","object":' + encode_json(obj) + b"}\n"

    async def _stream(self, response: web.StreamResponse, watcher: Watcher, rtype: ResourceType,
                      timeout: float, bookmarks: bool) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        interval = self.options.bookmark_interval
        next_bookmark = loop.time() + interval if bookmarks else float("inf")
        final_bookmark = deadline - 2.0 if bookmarks else float("inf")
        history = self.store.history(rtype.storage_key)
        while True:
            now = loop.time()
            wake = min(deadline, next_bookmark, final_bookmark)
            lines = await watcher.next_lines(max(wake - now, 0.0))
            if lines:
                await response.write(b"".join(lines))
            elif watcher.closed:
                break
            now = loop.time()
            if now >= deadline:
                break
            if now >= next_bookmark or now >= final_bookmark:
                if now >= final_bookmark:
                    final_bookmark = float("inf")
                next_bookmark = now + interval
                if history.latest > watcher.sent_rv:
                    watcher.sent_rv = history.latest
                    await response.write(self._bookmark(rtype, history.latest))
        await response.write_eof()


def _dry_run(request: web.Request) -> bool:
    return request.query.get("dryRun") == "All"


def _field_checks(request: web.Request) -> FieldChecks:
    mode = request.query.get("fieldValidation", "Warn")
    if mode not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(f"fieldValidation: Unsupported value: \"{mode}\": supported values: "
                                 f'"Ignore", "Strict", "Warn"')
    return FieldChecks(mode)


def _warn(response: web.Response, checks: FieldChecks) -> web.Response:
    """Unknown fields under fieldValidation=Warn travel as HTTP ``Warning: 299`` headers, like kube."""
    for text in checks.warnings:
        escaped = text.replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response


def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                   "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items()))},
    }




def _item_key(stored: Stored) -> str:
    return etcd_key(stored.namespace, stored.name)


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("unknown version")
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error, json.JSONDecodeError) as exc:
        raise errors.bad_request(f"invalid continue token: {exc}") from exc


def _int_param(text: str | None, name: str) -> int:
    if text in (None, ""):
        return 0
    assert text is not None
    try:
        return int(text)
    except ValueError as exc:
        raise errors.bad_request(f'invalid {name}: strconv.ParseInt: parsing "{text}": invalid syntax') from exc


_GO_JSON_CONTEXT = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
    "Invalid control character at": "in string literal",
}


def _innermost_container(doc: str, pos: int) -> str:
    """'{' or '[': the container open at ``pos`` (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in doc[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _json_error(exc: Exception) -> str:
    """Go encoding/json's wording for a parse error (kube clients and tests match on it)."""
    if not isinstance(exc, json.JSONDecodeError):
        return str(exc)
    doc, pos, msg = exc.doc, exc.pos, exc.msg
    if pos >= len(doc) or msg.startswith("Unterminated string") or not doc[pos:].strip():
        return "unexpected end of JSON input"
    char = doc[pos]
    shown = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "'": "\\'"}.get(char, char)
    if msg == "Expecting ',' delimiter":
        context = "after array element" if _innermost_container(doc, pos) == "[" else "after object key:value pair"
    else:
        context = _GO_JSON_CONTEXT.get(msg, msg.lower())
    return f"invalid character '{shown}' {context}"


def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= 50 else text[:50] + "..."
