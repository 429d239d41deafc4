"""What a failed request leaves behind: nothing that only a cyclic garbage collection can free.

The components run with rare young collections (``sharedcli/gcpolicy.py``): anything a request leaves in
a reference cycle stays in memory for thousands of requests. A 404 GET (a template that is gone) or a
409 PUT happens on every reconcile of some controllers, so it must be freed by reference counting alone.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from kube_api.resources import CONFIGMAPS


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def test_a_404_is_freed_without_the_cyclic_collector(kube: KubeClient, no_cyclic_gc: None) -> None:
    assert await kube.get_or_none(CONFIGMAPS, "missing", "default") is None
    with pytest.raises(ApiError) as caught:
        await kube.get(CONFIGMAPS, "missing", "default")
    error = weakref.ref(caught.value)
    del caught
    assert error() is None, "the ApiError (and the response its traceback holds) lives in a reference cycle"


async def test_a_409_is_freed_without_the_cyclic_collector(kube: KubeClient, no_cyclic_gc: None) -> None:
    created = await kube.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "c", "namespace": "default"}})
    stale = {**created, "metadata": {**created["metadata"], "resourceVersion": "1"}}
    errors: list[weakref.ref[ApiError]] = []
    for _ in range(3):
        try:
            await kube.update(CONFIGMAPS, stale)
        except ApiError as exc:
            assert exc.is_conflict
            errors.append(weakref.ref(exc))
    assert len(errors) == 3
    assert [e() for e in errors] == [None, None, None]


async def test_an_unread_update_writes_and_still_reports_a_conflict(kube: KubeClient) -> None:
    """update_unread skips decoding the answer, not checking it: the write lands, a stale copy is a 409."""
    created = await kube.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "unread", "namespace": "default"}})
    assert await kube.update_unread(CONFIGMAPS, {**created, "data": {"k": "v"}}) is None
    assert (await kube.get(CONFIGMAPS, "unread", "default"))["data"] == {"k": "v"}
    with pytest.raises(ApiError) as caught:
        await kube.update_unread(CONFIGMAPS, {**created, "data": {"k": "stale"}})
    assert caught.value.is_conflict
