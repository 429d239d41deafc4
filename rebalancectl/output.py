"""How results are printed: ``-o name|yaml|json`` for rebalancers, and the WORKLOAD/RESULT/REASON table."""

from __future__ import annotations

import json
from collections.abc import Sequence

import yaml

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.rebalancers import preserve_requested
from karmada_api.resources import WORKLOAD_REBALANCERS
from karmada_api.shapes import rebalancer_spec, rebalancer_status

from .selection import workload_from_reference
from .waves import WAVE_ANNOTATION, Wave

FORMATS = ("name", "yaml", "json")
PENDING = "Pending"


def as_list(items: Sequence[Obj]) -> Obj:
    """One object as itself; several as a ``v1 List``, as kubectl prints them."""
    if len(items) == 1:
        return items[0]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def render(items: Sequence[Obj], fmt: str) -> str:
    """The rebalancers in one of :data:`FORMATS` (``name``: ``workloadrebalancer.apps.karmada.io/NAME``)."""
    if fmt == "name":
        prefix = f"{WORKLOAD_REBALANCERS.plural[:-1]}.{WORKLOAD_REBALANCERS.group}"
        return "".join(f"{prefix}/{objects.name(item) or objects.metadata(item).get('generateName', '')}\n"
                       for item in items)
    if fmt == "json":
        return json.dumps(as_list(items), indent=4) + "\n"
    if fmt == "yaml":
        text: str = yaml.safe_dump(as_list(items), sort_keys=False)
        return text
    raise ValueError(f"unknown output format {fmt!r}")


def render_waves(plan: Sequence[Wave], fmt: str) -> str:
    """``--dry-run`` with waves: YAML documents under a ``# wave K/N`` comment each; as JSON or names, every
    rebalancer (each carries its wave in an annotation)."""
    if fmt != "yaml":
        return render([obj for wave in plan for obj in wave.rebalancers], fmt)
    return "---\n".join(f"# wave {wave.label}: {len(wave.workloads)} workloads\n{render(wave.rebalancers, fmt)}"
                        for wave in plan)


def result_rows(rebalancer: Obj) -> list[tuple[str, str, str]]:
    """One row per workload of the rebalancer: WORKLOAD, RESULT (Pending until it has one), REASON. A workload the
    spec lists twice is one row, as the controller gives it one status entry."""
    observed: dict[str, tuple[str, str]] = {}
    for item in rebalancer_status(rebalancer).get("observedWorkloads") or []:
        workload = str(workload_from_reference(item.get("workload") or {}))
        observed[workload] = (str(item.get("result") or PENDING), str(item.get("reason") or ""))
    rows: dict[str, tuple[str, str]] = {}
    for ref in rebalancer_spec(rebalancer).get("workloads") or []:
        workload = str(workload_from_reference(ref))
        if workload not in rows:
            rows[workload] = observed.pop(workload, (PENDING, ""))
    rows.update(observed)  # in the status but no longer in the spec
    return [(workload, result, reason) for workload, (result, reason) in rows.items()]


def mode_line(rebalancer: Obj) -> str:
    """``Mode: ...`` for a rebalancer that asks for preserve mode (or names it wrongly); "" for a plain one, whose
    output stays the table alone."""
    try:
        preserve = preserve_requested(rebalancer)
    except ValueError as exc:
        return f"Mode: invalid, {exc} (every workload fails)\n"
    return "Mode: preserve available replicas (only replicas confirmed unschedulable move)\n" if preserve else ""


def wave_line(rebalancer: Obj) -> str:
    """``Wave: K/N`` for a rebalancer that ``create --max-concurrent`` made; "" for any other."""
    wave = objects.annotations(rebalancer).get(WAVE_ANNOTATION)
    return f"Wave: {wave}\n" if wave else ""


def table(rows: Sequence[tuple[str, ...]], headers: tuple[str, ...] = ("WORKLOAD", "RESULT", "REASON")) -> str:
    """Columns padded like kubectl's tables (three spaces between columns, no trailing spaces)."""
    lines = [headers, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "".join("   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n"
                   for line in lines)


def summary(created: Sequence[Obj]) -> str:
    """The default output of ``create``: one line per rebalancer and its workload count."""
    return "".join(f"workloadrebalancer.apps.karmada.io/{objects.name(item)} created "
                   f"({len(rebalancer_spec(item).get('workloads') or [])} workloads)\n" for item in created)
