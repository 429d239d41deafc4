"""The REST surface: the entry point of every request, routing, and the verbs on one object.

Requests are routed here (discovery, OpenAPI, access reviews, resource paths) and the verbs
that act on one object (get, create, update, patch, delete) hand their parsed request to
:class:`~devplane.apiserver.store.Store`, which owns the semantics. Lists
(``listing.py``), watches (``watchstream.py``) and the scale subresource
(``subresources.py``) have modules of their own. Every error leaves as a kube ``Status``
(or kube's text/plain 404).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
import yaml
from aiohttp import web

from controller_manager import objects

from . import access_review, builtin_types, discovery, errors, openapi, protobuf
from .auth import RequestGuard
from .bodies import check_kind, decode_json_body, decode_object, read_body
from .errors import StatusError
from .listing import list_objects, list_response
from .params import dry_run, dry_run_values, field_checks, matches, query_selectors, resource_version_param, truthy
from .patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    NON_STRATEGIC_MEDIA_TYPES,
    PATCH_MEDIA_TYPES,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from .resources import ResourceType
from .responses import encoder, error_response, json_response, raw_response, respond_object, warn
from .routing import Target, parse_target
from .startup import Phase, StartupWindows, crd_served_group
from .store import DeleteOptions, Store
from .subresources import scale
from .watch import Stored
from .watchstream import watch

log = structlog.get_logger(__name__)



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
    retry_after: int = 0  # > 0: ask for that pause (details.retryAfterSeconds and the Retry-After header)
    after_dispatch: bool = False  # serve the request, then answer the failure (a write stored, its answer lost)
    delay: float = 0.0  # > 0: wait this long before serving (a slow server: a large LIST, a loaded etcd)

    @property
    def fails(self) -> bool:
        """Whether it answers a failure (code 0: only the delay, the request served as usual)."""
        return self.code != 0


@dataclass
class ServerOptions:
    """The watch timings: how often bookmarks go out, and kube's minimum request timeout (randomized)."""

    bookmark_interval: float = 60.0
    min_request_timeout: float = 1800.0


def _type_checked(apply: Callable[[dict[str, Any]], Any], rtype: ResourceType, patch: Any,
                  ctype: str) -> Callable[[dict[str, Any]], Any]:
    """``apply`` followed by kube's decoding of the patched built-in object into its Go type (a 422 on a value
    of the wrong type: :func:`builtin_types.check_patched`)."""
    def checked(doc: dict[str, Any]) -> Any:
        patched = apply(doc)
        if isinstance(patched, dict):
            builtin_types.check_patched(rtype, patched, patch, ctype)
        return patched

    return checked


class Api:
    """The aiohttp handler; one instance per server."""

    def __init__(self, store: Store, options: ServerOptions) -> None:
        self.store = store
        self.registry = store.registry
        self.options = options
        self.faults: list[Fault] = []
        self.guard: RequestGuard | None = None  # authentication/authorization; None = open server
        self.startup: StartupWindows | None = None  # a restart's 503/404 windows; None = serving normally

    def _injected_fault(self, request: web.Request) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and fault.path_contains in request.path:
                fault.times -= 1
                return fault
        return None

    @staticmethod
    def _fault_error(fault: Fault) -> StatusError:
        if fault.page_not_found:
            return errors.page_not_found()
        details = {"retryAfterSeconds": fault.retry_after} if fault.retry_after > 0 else {}
        return StatusError(fault.code, fault.reason, fault.message, details)

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
                if fault is not None and fault.delay > 0:
                    await asyncio.sleep(fault.delay)
                if fault is not None and fault.fails and not fault.after_dispatch:
                    raise self._fault_error(fault)
                response = await self._dispatch(request)
                if fault is not None and fault.fails:
                    raise self._fault_error(fault)
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
            return json_response(discovery.SERVER_VERSION)
        if path == "/api":
            return json_response(discovery.api_versions())
        if path == "/apis":
            return json_response(discovery.api_group_list(self.registry))
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi_v3(parts[2:])
        if parts == ["openapi", "v2"]:
            protobuf = openapi.OPENAPI_V2_PROTOBUF in request.headers.get("Accept", "")
            return web.Response(body=openapi.v2_document(protobuf),  # kube-openapi's content types for each
                                content_type="application/octet-stream" if protobuf else "application/json")
        if parts[:1] == ["openapi"]:
            raise errors.page_not_found()
        if parts[:1] == ["api"]:
            if len(parts) < 2 or parts[1] != "v1":
                raise errors.page_not_found()
            if len(parts) == 2:
                return json_response(discovery.api_resource_list(self.registry, "", "v1"))
            return await self._resource(request, "", "v1", parts[2:])
        if parts[:1] == ["apis"] and len(parts) >= 2:
            group = parts[1]
            if not self.registry.group_exists(group):
                raise errors.page_not_found()
            if len(parts) == 2:
                return json_response(discovery.api_group(self.registry, group))
            version = parts[2]
            if not self.registry.version_exists(group, version):
                raise errors.page_not_found()
            if len(parts) == 3:
                return json_response(discovery.api_resource_list(self.registry, group, version))
            if group == access_review.GROUP:
                return await self._access_review(request, group, version, parts[3:])
            return await self._resource(request, group, version, parts[3:])
        raise errors.page_not_found()

    async def _access_review(self, request: web.Request, group: str, version: str, parts: list[str]) -> web.Response:
        """Reviews are created and answered, never stored (``access_review.py``): 201 with the status."""
        target, is_collection = parse_target(self.registry, group, version, parts)
        if target is None or not is_collection or target.namespace:
            raise errors.page_not_found()
        if request.method != "POST":
            raise errors.method_not_allowed()
        review = await decode_object(request, self.registry, target.rtype)
        user = access_review.requesting_user(self.guard, request.headers)
        authorizer = self.guard.authorizer if self.guard is not None else None
        answer = access_review.answer(target.rtype.kind, review, user, authorizer)
        return json_response(answer, 201)

    def _openapi_v3(self, parts: list[str]) -> web.Response:
        if not parts:
            return json_response(openapi.root_document(self.registry))
        if parts[:2] == ["api", "v1"] and len(parts) == 2:
            return json_response(openapi.group_version_document(self.registry, "", "v1"))
        if parts[:1] == ["apis"] and len(parts) == 3 and self.registry.version_exists(parts[1], parts[2]):
            return json_response(openapi.group_version_document(self.registry, parts[1], parts[2]))
        raise errors.page_not_found()

    async def _resource(self, request: web.Request, group: str, version: str,
                        parts: list[str]) -> web.StreamResponse:
        target, is_collection = parse_target(self.registry, group, version, parts)
        if target is None:
            raise errors.page_not_found()
        method = request.method
        query = request.query
        watching = truthy(query.get("watch")) or target.legacy_watch
        if is_collection:
            if target.rtype.namespaced is False and target.namespace:
                raise errors.page_not_found()
            if method == "GET":
                return await (self._watch(request, target) if watching else list_objects(self.store, request, target))
            if method == "POST":
                return await self.create(request, target)
            if method == "DELETE":
                return await self.delete_collection(request, target)
            raise errors.method_not_allowed()
        if target.rtype.namespaced and not target.namespace:
            raise errors.page_not_found()
        if watching and method == "GET":
            return await self._watch(request, target)
        if target.subresource == "scale":
            return await scale(self.store, request, target)
        if method == "GET":
            return await self.get(request, target)
        if method == "PUT":
            return await self.update(request, target)
        if method == "PATCH":
            return await self.patch(request, target)
        if method == "DELETE" and not target.subresource:
            return await self.delete(request, target)
        raise errors.method_not_allowed()

    async def _watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        return await watch(self.store, request, target, bookmark_interval=self.options.bookmark_interval,
                           min_request_timeout=self.options.min_request_timeout)

    # --------------------------------------------------------------- verbs

    async def get(self, request: web.Request, target: Target) -> web.Response:
        resource_version_param(request.query.get("resourceVersion"))  # a GET is served from the latest, but parses it
        stored = self.store.get(target.rtype, target.namespace, target.name)
        if target.subresource == "finalize":
            raise errors.method_not_allowed()
        return await respond_object(self.store, request, target.rtype, stored)

    async def create(self, request: web.Request, target: Target) -> web.Response:
        dry = dry_run(request)  # kube validates the options before it reads the body
        obj = await decode_object(request, self.registry, target.rtype)
        checks = field_checks(request)
        stored = self.store.create(target.rtype, target.namespace, obj, dry_run=dry, checks=checks,
                                   refuse_resource_version=True)
        return warn(await respond_object(self.store, request, target.rtype, stored, 201), checks)

    async def update(self, request: web.Request, target: Target) -> web.Response:
        dry = dry_run(request)
        obj = await decode_object(request, self.registry, target.rtype)
        checks = field_checks(request)
        stored = self.store.update(target.rtype, target.namespace, target.name, obj,
                                   subresource=target.subresource, dry_run=dry, checks=checks)
        return warn(await respond_object(self.store, request, target.rtype, stored), checks)

    async def patch(self, request: web.Request, target: Target) -> web.Response:
        ctype = request.content_type
        if ctype not in PATCH_MEDIA_TYPES:
            if target.rtype.builtin:  # go-restful's own answer: the route does not consume that type
                raise StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
            raise errors.unsupported_media_type(NON_STRATEGIC_MEDIA_TYPES)
        dry = dry_run(request)
        body = await read_body(request)
        if ctype == APPLY_PATCH:
            return await self._apply(request, target, body, dry)
        patch = decode_json_body(body)
        rtype = target.rtype
        if ctype == JSON_PATCH:
            def apply(doc: dict[str, Any]) -> Any:
                return apply_json_patch(doc, patch)
        elif ctype == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise errors.bad_request("the patch must be a JSON object")

            def apply(doc: dict[str, Any]) -> Any:
                return apply_merge_patch(doc, patch)
        else:
            if not rtype.builtin:
                raise errors.unsupported_media_type(NON_STRATEGIC_MEDIA_TYPES)
            if not isinstance(patch, dict):
                raise errors.bad_request("the patch must be a JSON object")

            def apply(doc: dict[str, Any]) -> Any:
                return apply_strategic_merge_patch(doc, patch, rtype.kind_key)
        checked = _type_checked(apply, rtype, patch, ctype) if rtype.builtin else apply
        checks = field_checks(request)
        stored = self.store.patch(rtype, target.namespace, target.name, checked,
                                  subresource=target.subresource, dry_run=dry, checks=checks)
        return warn(await respond_object(self.store, request, target.rtype, stored), checks)

    async def _apply(self, request: web.Request, target: Target, body: bytes, dry: bool) -> web.Response:
        """Server-side apply, simplified: create when absent, else merge the applied fields in."""
        try:
            applied = yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from exc
        if not isinstance(applied, dict):
            raise errors.bad_request("the apply patch must be an object")
        check_kind(self.registry, target.rtype, applied)
        if target.rtype.builtin:
            builtin_types.check_applied(target.rtype, applied, target.namespace, target.name)
        if self.store.lookup(target.rtype, target.namespace, target.name) is None:
            applied.setdefault("metadata", {})["name"] = target.name
            stored = self.store.create(target.rtype, target.namespace, applied, dry_run=dry)
            return await respond_object(self.store, request, target.rtype, stored, 201)
        stored = self.store.patch(target.rtype, target.namespace, target.name,
                                  lambda doc: apply_merge_patch(doc, applied), subresource=target.subresource,
                                  dry_run=dry)
        return await respond_object(self.store, request, target.rtype, stored)

    async def _delete_options(self, request: web.Request) -> tuple[DeleteOptions, bool]:
        """The delete's options and whether it is a dry run: from the body when there is one (kube then reads
        nothing of the query's options, ``dryRun`` included, as client-go's DeleteOptions body), else the query."""
        body = await read_body(request)
        opts: dict[str, Any] = {}
        if body.strip():
            opts = (protobuf.decode_delete_options(body) if request.content_type == protobuf.MEDIA_TYPE
                    else decode_json_body(body))
            if not isinstance(opts, dict):
                raise errors.bad_request("DeleteOptions must be an object")
            values = opts.get("dryRun") or []
            dry = dry_run_values(values if isinstance(values, list) else [values], "DeleteOptions")
        else:
            dry = dry_run(request)
        pre = opts.get("preconditions") or {}
        propagation = opts.get("propagationPolicy") or request.query.get("propagationPolicy") or "Background"
        if opts.get("orphanDependents") is True or truthy(request.query.get("orphanDependents")):
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
                             propagation=propagation, grace_period=grace), dry

    async def delete(self, request: web.Request, target: Target) -> web.Response:
        options, dry = await self._delete_options(request)
        rtype = target.rtype
        stored, gone = self.store.delete(rtype, target.namespace, target.name, options, dry_run=dry)
        await self.store.wait_durable(stored.rv)
        if not gone or rtype.storage_key == "/pods":
            return raw_response(encoder(rtype)(stored))
        details: dict[str, Any] = {"name": target.name}
        if rtype.group:
            details["group"] = rtype.group
        details["kind"] = rtype.plural
        details["uid"] = objects.uid(stored.obj)
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "details": details})

    async def delete_collection(self, request: web.Request, target: Target) -> web.Response:
        options, dry = await self._delete_options(request)
        labels, fields = query_selectors(request, target.rtype)
        deleted: list[Stored] = []
        for stored in self.store.items(target.rtype.storage_key, target.namespace):
            if matches(stored, labels, fields):
                final, _ = self.store.delete(target.rtype, stored.namespace, stored.name, options, dry_run=dry)
                deleted.append(final)
        rv = self.store.rv
        await self.store.wait_durable(rv)
        return list_response(request, target.rtype, deleted, {"resourceVersion": str(rv)})

