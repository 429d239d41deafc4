"""Go's integer bounds as Kubernetes API fields use them.

``math.MaxInt32``: the largest ``int32`` (replicas, ``progressDeadlineSeconds``), and the "no limit"
start of every minimum Karmada's scheduler, estimator and descheduler compute.
"""

from __future__ import annotations

MAX_INT32 = 2**31 - 1
