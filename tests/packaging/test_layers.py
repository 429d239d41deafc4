"""The layers of docs/architecture.md, checked on the imports: each package imports only the layers below it.

A rule written once lives in the lowest layer that owns it; a program that imports another program (as
preserve mode once imported the descheduler's filter) is a rule living in the wrong place.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MAY_IMPORT: dict[str, set[str]] = {
    "controller_manager": set(),
    "sharedcli": {"controller_manager"},
    "kube_api": {"controller_manager"},
    "karmada_api": {"controller_manager", "kube_api"},
    "interpreter": {"controller_manager", "kube_api", "karmada_api"},
    "estimator": {"controller_manager", "kube_api", "karmada_api"},
    "clusteraccess": {"controller_manager", "kube_api", "karmada_api", "estimator"},
}
"""The layers below the programs; each program may import all of these and no other program."""
PROGRAMS = ("controllers", "descheduler", "rebalancectl")
for _program in PROGRAMS:
    MAY_IMPORT[_program] = {"sharedcli", *MAY_IMPORT["clusteraccess"], "clusteraccess", "interpreter"}
OURS = {*MAY_IMPORT, "devplane"}
EXCEPTIONS = {"controller_manager/__main__.py"}
"""``python -m controller_manager`` starts karmada-controller-manager: the one import of a program below it."""


def imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in EXCEPTIONS:
            continue
        beyond = imported_packages(path) - MAY_IMPORT[package] - {package}
        if beyond:
            wrong[relative] = sorted(beyond)
    assert not wrong, f"imports beyond the layers below {package}: {wrong}"
