"""docs/architecture.md's size rule, checked: a product module stays within 600 lines, a dev-plane one within 700."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("controller_manager", "sharedcli", "kube_api", "karmada_api", "interpreter", "estimator", "clusteraccess",
           "controllers", "descheduler", "rebalancectl")
LIMITS = {"product": 600, "devplane": 700}


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_modules_stay_within_the_size_rule() -> None:
    too_long = {}
    for package, limit in [*((p, LIMITS["product"]) for p in PRODUCT), ("devplane", LIMITS["devplane"])]:
        for path in sorted((ROOT / package).rglob("*.py")):
            if lines(path) > limit:
                too_long[path.relative_to(ROOT).as_posix()] = f"{lines(path)} lines, at most {limit}"
    assert not too_long, f"modules past docs/architecture.md's size rule (split them): {too_long}"
