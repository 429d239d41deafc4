"""The name ``karmada-rebalance`` was invoked by, for usage lines and error messages.

The same program is installed twice: as ``karmada-rebalance`` and as the kubectl plugin
``kubectl-karmada_rebalance``. kubectl runs a plugin by executing the file it found on PATH with
that file's path as ``argv[0]`` (``kubectl karmada-rebalance create`` runs
``kubectl-karmada_rebalance create``: dashes in the command become underscores in the file name).
Recent kubectl also sets ``KUBECTL_PATH`` for its plugins, older versions nothing, so the
executable's own name is what tells the program, whatever the kubectl version. A user who typed
``kubectl karmada-rebalance`` then reads that in ``--help`` and in error lines, as with any kubectl
command.
"""

from __future__ import annotations

import os

PROG = "karmada-rebalance"
PLUGIN_PREFIX = "kubectl-"
PLUGIN_EXECUTABLE = PLUGIN_PREFIX + PROG.replace("-", "_")
"""The plugin's file name: kubectl looks ``kubectl karmada-rebalance`` up as this."""


def program_name(argv0: str) -> str:
    """``kubectl karmada-rebalance`` when run as the kubectl plugin (any ``kubectl-*`` executable,
    ``.exe`` on Windows), else ``karmada-rebalance`` (the console script, ``python -m rebalancectl``)."""
    base = os.path.basename(argv0)
    stem = base[:-len(".exe")] if base.lower().endswith(".exe") else base
    if stem.startswith(PLUGIN_PREFIX) and len(stem) > len(PLUGIN_PREFIX):
        return "kubectl " + stem[len(PLUGIN_PREFIX):].replace("_", "-")
    return PROG
