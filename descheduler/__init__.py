"""karmada-descheduler: move replicas that cannot be scheduled out of their member cluster.

``core`` holds the pure decision logic (which bindings qualify, how many replicas to take
from which cluster, the event message, the anti-ping-pong cool-down); the process around it
(informers, the periodic loop, the estimator client, the binding update and events) lives
in the other modules and only feeds ``core`` parsed JSON objects.
"""
