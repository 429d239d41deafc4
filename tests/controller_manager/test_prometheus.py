"""Both products' /metrics as Prometheus itself sees them.

The controller-manager and the descheduler run as real processes against a dev API server, after
a WorkloadRebalancer has been reconciled and a descheduling cycle has worked a binding through its
queue, so the series carry samples. Then:

* ``promtool check metrics`` accepts each exposition (names, HELP, types, suffixes);
* both expose Karmada's ``karmada_build_info``, and the descheduler Karmada's ``descheduler``
  work queue series (Karmada's e2e test checks ``workqueue_queue_duration_seconds_sum`` on it);
* a real Prometheus server scrapes the controller-manager every second and answers a query for
  ``controller_runtime_reconcile_total`` with its ``controller`` label, and ``up`` is 1;
* every metric the Grafana dashboard queries is exposed by one of the two products.

promtool and prometheus come from Debian's ``prometheus`` package (hack/test-deps.sh installs it); without
them these tests fail rather than skip, so a CI without them cannot pass unnoticed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.support import free_port, stop_process
from devplane.apiserver.server import ApiServer
from devplane.kubeconfig import write_kubeconfig
from karmada_api.buildinfo import BUILD_INFO_HELP
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from tests.conftest import eventually
from tests.controllers.test_controller_manager_process import FAST_ELECTION, Process, done, karmada_system
from tests.controllers.test_workloadrebalancer import RB, create_rebalancer, deploy_ref, make_binding

# The products and the dev API server live on the module's event loop; tests using them must too.
pytestmark = pytest.mark.slow  # both products run as processes for the module, and a real Prometheus
MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "charts" / "karmada-rebalance" / "dashboards" / "karmada-rebalance.json"
JOBS = {"controller_manager": "karmada-controller-manager", "descheduler": "karmada-descheduler"}
INSTALL_HINT = "bash hack/test-deps.sh installs it (Debian's prometheus package), or apt-get install prometheus"
# Series Prometheus makes up itself for every target; a dashboard may query them.
BUILD_INFO_LABELS = {"git_version", "git_commit", "git_short_commit", "git_tree_state", "build_date", "go_version",
                     "compiler", "platform"}
DESCHEDULER_QUEUE = {"name": "descheduler", "controller": "descheduler"}
# A binding the descheduler's filter keeps (a Deployment, dynamically divided); with no member
# cluster to ask, nothing is unschedulable, so it is worked through the queue and left unchanged.
DYNAMIC_PLACEMENT = {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                           "replicaDivisionPreference": "Weighted",
                                           "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
             "scrape_series_added", "ALERTS", "ALERTS_FOR_STATE"}


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: {INSTALL_HINT}")
    return path


@dataclass
class Products:
    """The two running products, by module name, and what their /metrics served once warmed up."""

    processes: dict[str, Process]
    expositions: dict[str, str]


async def scrape(process: Process) -> str:
    async with aiohttp.ClientSession() as h, h.get(f"http://127.0.0.1:{process.metrics_port}/metrics") as r:
        assert r.status == 200, await r.text()
        return await r.text()


async def promtool(*args: str, stdin: str = "") -> tuple[int, str]:
    """Run promtool; its exit code and everything it printed."""
    proc = await asyncio.create_subprocess_exec(tool("promtool"), *args, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        output, _ = await asyncio.wait_for(proc.communicate(stdin.encode()), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, output.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def products(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Products]:
    workdir = tmp_path_factory.mktemp("products")
    kubeconfig = workdir / "karmada.config"
    processes: dict[str, Process] = {}
    async with ApiServer() as server, aiohttp.ClientSession(base_url=server.url) as http:
        write_kubeconfig(kubeconfig, {"karmada-apiserver": server.url}, "karmada-apiserver")
        await karmada_system(http)
        extra = {"controller_manager": ("--rate-limiter-max-delay=2s",),
                 "descheduler": ("--descheduling-interval=1s",)}
        try:
            for module, flags in extra.items():
                metrics, log = free_port(), workdir / f"{module}.log"
                with log.open("wb") as out:
                    proc = await asyncio.create_subprocess_exec(
                        sys.executable, "-m", module, f"--kubeconfig={kubeconfig}",
                        f"--metrics-bind-address=127.0.0.1:{metrics}",
                        f"--health-probe-bind-address=127.0.0.1:{free_port()}", *FAST_ELECTION, *flags,
                        stdout=out, stderr=out)
                processes[module] = Process(proc, metrics, log)
            cm, descheduler = processes["controller_manager"], processes["descheduler"]

            await make_binding(http, "Deployment", "foo")
            async with http.post(RB.format(ns="default"), json={
                    "metadata": {"name": "web-deployment",
                                 "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC_PLACEMENT)}},
                    "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "namespace": "default"},
                             "replicas": 1, "clusters": [{"name": "member1", "replicas": 1}]}}) as r:
                assert r.status == 201, await r.text()
            await create_rebalancer(http, "metrics", [deploy_ref("foo")])
            await eventually(lambda: done(http, "metrics"), timeout=30)

            async def reconciled() -> bool:
                assert cm.proc.returncode is None, cm.log.read_text()
                return await cm.metric("controller_runtime_reconcile_total", controller="workload-rebalancer",
                                       result="success") >= 1

            async def cycled() -> bool:
                """A cycle has worked the binding through the queue (and so has ended, or is about to)."""
                assert descheduler.proc.returncode is None, descheduler.log.read_text()
                return (await descheduler.metric("workqueue_work_duration_seconds_count", **DESCHEDULER_QUEUE) >= 1
                        and await descheduler.metric("descheduler_cycle_duration_seconds_count") >= 1)

            await eventually(reconciled, timeout=30)
            await eventually(cycled, timeout=30)
            for process in processes.values():
                assert process.proc.returncode is None, process.log.read_text()
            yield Products(processes, {module: await scrape(p) for module, p in processes.items()})
        finally:
            await asyncio.gather(*(stop_process(p.proc, grace=10.0) for p in processes.values()))


@MODULE_LOOP
@pytest.mark.parametrize("module", list(JOBS))
async def test_promtool_accepts_the_exposition(products: Products, module: str) -> None:
    exposition = products.expositions[module]
    code, output = await promtool("check", "metrics", stdin=exposition)
    assert code == 0, f"promtool check metrics ({JOBS[module]}), exit {code}:\n{output}"


def samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample called ``name`` in an exposition: its labels and value."""
    return [(dict(sample.labels), float(sample.value)) for family in text_string_to_metric_families(exposition)
            for sample in family.samples if sample.name == name]


@MODULE_LOOP
@pytest.mark.parametrize("module", list(JOBS))
async def test_both_products_expose_karmada_build_info(products: Products, module: str) -> None:
    exposition = products.expositions[module]
    assert f"# HELP karmada_build_info {BUILD_INFO_HELP}\n# TYPE karmada_build_info gauge\n" in exposition
    (labels, value), *others = samples(exposition, "karmada_build_info")
    assert not others, f"{JOBS[module]} exposes more than one karmada_build_info series"
    assert value == 1
    assert set(labels) == BUILD_INFO_LABELS
    assert re.fullmatch(r"v\d+\.\d+\.\d+.*", labels["git_version"]), labels
    assert labels["go_version"].startswith("python3."), labels
    assert re.fullmatch(r"[a-z0-9]+/[a-z0-9]+", labels["platform"]), labels
    assert all(labels.values()), f"empty build_info labels: {labels}"


@MODULE_LOOP
async def test_the_descheduler_works_bindings_through_karmadas_descheduler_queue(products: Products) -> None:
    exposition = products.expositions["descheduler"]

    def queue_sample(name: str) -> float:
        values = [v for labels, v in samples(exposition, name) if labels.items() >= DESCHEDULER_QUEUE.items()]
        assert len(values) == 1, f"{name}{DESCHEDULER_QUEUE}: {values}"
        return values[0]

    queue_sample("workqueue_queue_duration_seconds_sum")  # exposed: what Karmada's e2e test checks
    assert queue_sample("workqueue_queue_duration_seconds_count") >= 1
    assert queue_sample("workqueue_adds_total") >= 1
    assert queue_sample("workqueue_work_duration_seconds_count") >= 1
    assert queue_sample("workqueue_depth") >= 0


@dataclass
class PrometheusServer:
    url: str
    proc: asyncio.subprocess.Process
    log: Path

    async def query(self, promql: str) -> list[dict[str, Any]]:
        async with aiohttp.ClientSession() as h, \
                h.get(f"{self.url}/api/v1/query", params={"query": promql}) as r:
            body = await r.json()
        assert body.get("status") == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


async def start_prometheus(workdir: Path, targets: dict[str, int]) -> PrometheusServer:
    """Prometheus on 127.0.0.1 scraping each job's 127.0.0.1:port every second."""
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                           for job, port in targets.items()]}))
    code, output = await promtool("check", "config", str(config))
    assert code == 0, output
    port, log = free_port(), workdir / "prometheus.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            tool("prometheus"), f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
            f"--storage.tsdb.path={workdir / 'data'}", stdout=out, stderr=out, cwd=workdir)
    return PrometheusServer(f"http://127.0.0.1:{port}", proc, log)


@MODULE_LOOP
async def test_a_real_prometheus_scrapes_the_controller_manager(
        products: Products, tmp_path: Path) -> None:
    targets = {JOBS[m]: p.metrics_port for m, p in products.processes.items()}
    prometheus = await start_prometheus(tmp_path, targets)
    try:
        async def ready() -> bool:
            assert prometheus.proc.returncode is None, prometheus.log.read_text()
            try:
                async with aiohttp.ClientSession() as h, h.get(f"{prometheus.url}/-/ready") as r:
                    return r.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, timeout=30, interval=0.2)

        async def reconciles() -> list[dict[str, Any]]:
            return [s for s in await prometheus.query("controller_runtime_reconcile_total")
                    if s["metric"].get("controller") == "workload-rebalancer"]

        series = await eventually(reconciles, timeout=30, interval=0.5)
        assert {s["metric"]["job"] for s in series} == {JOBS["controller_manager"]}
        assert any(s["metric"].get("result") == "success" and float(s["value"][1]) >= 1 for s in series), series

        for job in targets:
            async def up(job: str = job) -> bool:
                samples = await prometheus.query(f'up{{job="{job}"}}')
                return len(samples) == 1 and samples[0]["value"][1] == "1"

            await eventually(up, timeout=30, interval=0.5)
    finally:
        await stop_process(prometheus.proc, grace=10.0)


# --- the Grafana dashboard ---------------------------------------------------------------------

_FUNCTION = re.compile(r"\b[a-zA-Z_][a-zA-Z0-9_]*\s*\(")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.$])[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
             "offset", "inf", "nan", "Inf", "NaN", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
             "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}


def metric_names(promql: str) -> set[str]:
    """Metric names a PromQL expression selects (functions, labels, ranges and Grafana variables removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', promql)  # string literals
    text = re.sub(r"\$\{[^}]*\}|\$\w+", "", text)  # Grafana variables
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = _GROUPING.sub("", text)
    text = _FUNCTION.sub("(", text)
    return {name for name in _IDENTIFIER.findall(text) if name not in _KEYWORDS}


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of every panel (rows' nested panels included) and variable query."""
    queries: list[str] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            queries.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if variable.get("type") == "query" and isinstance(query, str):
            match = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query)
            if match:
                queries.append(match.group(1))
            elif not query.strip().startswith(("label_names", "label_values", "metrics(")):
                queries.append(query)
    return queries


def exposed_names(exposition: str) -> Iterator[str]:
    """Sample names of an exposition, and those a declared family would have once it has a child."""
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count"),
                "counter": ("", "_total"), "gauge": ("",), "untyped": ("",)}
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            base = name.removesuffix("_total") if kind == "counter" else name
            yield from (base + suffix for suffix in suffixes.get(kind, ("",)))
        elif line and not line.startswith("#"):
            yield re.split(r"[{\s]", line, maxsplit=1)[0]


def test_metric_names_are_extracted_from_promql() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, controller) (rate('
            'controller_runtime_reconcile_time_seconds_bucket{job=~"$job", controller="workload-rebalancer"}'
            '[$__rate_interval]))) / on(controller) group_left sum(rate(workqueue_adds_total[5m] offset 1h))'
            ' > bool 0.5 or vector(0)')
    assert metric_names(expr) == {"controller_runtime_reconcile_time_seconds_bucket", "workqueue_adds_total"}
    dashboard = {"panels": [{"type": "row", "panels": [{"targets": [{"expr": "sum(up)"}, {"refId": "B"}]}]},
                            {"targets": [{"expr": "rate(workqueue_retries_total[1m])"}]}],
                 "templating": {"list": [
                     {"type": "query", "query": {"query": "label_values(workqueue_depth, name)"}},
                     {"type": "query", "query": "label_values(job)"}, {"type": "interval", "query": "1m,5m"}]}}
    assert dashboard_queries(dashboard) == ["sum(up)", "rate(workqueue_retries_total[1m])", "workqueue_depth"]


@MODULE_LOOP
async def test_every_metric_the_dashboard_queries_is_exposed(products: Products) -> None:
    if not DASHBOARD.is_file():
        pytest.fail(f"the Grafana dashboard {DASHBOARD.relative_to(ROOT)} does not exist")
    queries = dashboard_queries(json.loads(DASHBOARD.read_text()))
    assert queries, "the dashboard has no PromQL targets"
    wanted = set().union(*(metric_names(q) for q in queries)) - SYNTHETIC
    exposed = {name for text in products.expositions.values() for name in exposed_names(text)}
    assert not wanted - exposed, (f"the dashboard queries metrics neither product exposes: "
                                  f"{sorted(wanted - exposed)}")
