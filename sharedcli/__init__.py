"""The process side of our components: Karmada's shared flags and the runner every ``main`` ends in.

The counterpart of Karmada's ``pkg/sharedcli`` and of what its ``cmd/*/app`` packages repeat:
flag value types in Go's forms (``flagtypes``), the common and rate-limiter flags (``options``,
``ratelimiterflag``), logging (``logs``), the garbage-collector policy (``gcpolicy``), and the
manager built from the flags and run until a signal (``runner``). Kept out of
``controller_manager``, which is a runtime that knows Kubernetes only.
"""
