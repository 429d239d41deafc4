"""Karmada's default resource interpreter for the native kinds: pure functions, one module per operation.

Karmada keeps them in ``pkg/resourceinterpreter/default/native/`` (at commit f8fdd02): what a
template's replicas and their requirements are (``replicas``), a replica count written back into
a member's copy (``revisereplica``), the fields a member copy must not carry (``prune``) or must
keep from the member (``retain``), the status reflected from a member object (``reflectstatus``)
and its health (``health``), and the members' statuses folded into the template's
(``aggregatestatus``). ``kinds`` holds the per-kind tables they share, ``goconvert`` the reading of
member objects as Go's typed structs. The product's binding-status controller and the dev plane's
detector, binding, execution and work-status controllers use these; nothing here does I/O.
"""
