"""A complete example controller: stamp every ConfigMap with the number of keys it holds.

It watches the ConfigMaps of every namespace and keeps the annotation
``example.io/keys`` equal to ``len(data)``. Run it against any cluster or the dev plane::

    python examples/configmap_stamper.py --kubeconfig .devplane/kube/karmada.config \\
        --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081

The walk-through is docs/writing-a-controller.md.
"""

from __future__ import annotations

import argparse
import sys

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.reconcile import Request, Result
from kube_api.resources import CONFIGMAPS
from sharedcli.options import CommonOptions, add_common_flags
from sharedcli.ratelimiterflag import add_rate_limiter_flags, rate_limiter_options
from sharedcli.runner import new_manager, run_component

NAME = "configmap-stamper"
ANNOTATION = "example.io/keys"


class Stamper:
    """The reconciler: read from the cache, write only when something differs."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.cache = manager.informer(CONFIGMAPS).store
        self.events = manager.event_recorder(NAME)

    async def reconcile(self, request: Request) -> Result:
        obj = self.cache.get(str(request))
        if obj is None:
            return Result()  # deleted: nothing to do
        want = str(len(obj.get("data") or {}))
        if objects.annotations(obj).get(ANNOTATION) == want:
            return Result()
        try:
            await self.client.patch(CONFIGMAPS, request.name, {"metadata": {"annotations": {ANNOTATION: want}}},
                                    namespace=request.namespace)
        except ApiError as exc:
            if exc.is_not_found:
                return Result()
            raise  # retried with backoff by the controller
        self.events.event(obj, "Normal", "Stamped", f"annotated with {want} keys")
        return Result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__.splitlines()[0] if __doc__ else None)
    add_common_flags(parser, health_port=8081)
    add_rate_limiter_flags(parser)
    parser.add_argument("--concurrent-syncs", type=int, default=2, help="workers (default 2)")
    parser.add_argument("--leader-elect-resource-name", default=NAME)
    args = parser.parse_args(argv)
    options = CommonOptions.from_args(args)

    async def build() -> Manager:
        manager = await new_manager(NAME, options, lease_name=args.leader_elect_resource_name)
        controller = Controller(NAME, Stamper(manager), workers=args.concurrent_syncs,
                                rate_limiter_options=rate_limiter_options(args))
        controller.watches(manager.informer(CONFIGMAPS))
        manager.add_controller(controller)
        return manager

    return run_component(NAME, options, build)


if __name__ == "__main__":
    sys.exit(main())
