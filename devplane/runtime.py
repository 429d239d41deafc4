"""Two small helpers the simulated controllers share: a resourceVersion as a number, and Go's error text.

The number in a resourceVersion: the dev API server writes integers, so two copies of an object
compare (kube's resourceVersions are opaque to real clients; reading one's own writes is the runtime's
``controller_manager.mutationcache``). The text of an error as Go's controllers print it in conditions
and events (several: ``kube_api.validation.aggregate_messages``).
"""

from __future__ import annotations

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.objects import Obj


def resource_version_number(obj: Obj) -> int:
    """``metadata.resourceVersion`` as the integer the dev API server writes (0 when missing or not a
    number): which of two copies of an object is newer."""
    try:
        return int(objects.resource_version(obj) or 0)
    except ValueError:
        return 0


def error_text(err: BaseException) -> str:
    """An error's message as Go prints it: an API error is its Status message (its status line when
    that message is empty)."""
    return err.message if isinstance(err, ApiError) and err.message else str(err)


