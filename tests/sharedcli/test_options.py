"""Flag parsing with Karmada's names and Go's formats; --controllers selection."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from controller_manager.manager import split_bind_address
from controllers.app import build_parser
from controllers.registry import is_enabled, parse_selection, unknown_names
from descheduler.app import build_parser as descheduler_parser
from sharedcli.flagtypes import bind_address, boolean, format_duration, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("2m0s", 120.0), ("5ms", 0.005), ("16m40s", 1000.0), ("1h30m", 5400.0), ("0", 0.0), ("1.5s", 1.5),
    ("300us", 0.0003), ("10s", 10.0),
])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "2m0", "1x", "s", "2mm", "--1s"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)


def test_duration_formatting_round_trips() -> None:
    for text in ("2m0s", "5ms", "16m40s", "15s"):
        assert format_duration(parse_duration(text)) == text


def test_bind_addresses() -> None:
    assert split_bind_address(":8080") == ("0.0.0.0", 8080)
    assert split_bind_address("127.0.0.1:10357") == ("127.0.0.1", 10357)
    assert split_bind_address("0") is None
    with pytest.raises(argparse.ArgumentTypeError):
        bind_address("8080")


@pytest.mark.parametrize(("selection", "name", "default", "enabled"), [
    (["*"], "workloadRebalancer", True, True),
    (["*", "-workloadRebalancer"], "workloadRebalancer", True, False),
    (["-workloadRebalancer", "*"], "workloadRebalancer", True, False),
    (["workloadRebalancer", "-workloadRebalancer"], "workloadRebalancer", True, True),  # first entry decides
    (["bindingStatus"], "workloadRebalancer", True, False),
    (["*"], "hpaScaleTargetMarker", False, False),  # disabled by default: * does not enable it
    (["*", "hpaScaleTargetMarker"], "hpaScaleTargetMarker", False, True),
    ([], "workloadRebalancer", True, False),
])
def test_controllers_selection(selection: list[str], name: str, default: bool, enabled: bool) -> None:
    assert is_enabled(name, selection, enabled_by_default=default) is enabled


def test_selection_parsing_and_unknown_names() -> None:
    assert parse_selection("*,-foo, bar ,") == ["*", "-foo", "bar"]
    assert unknown_names(["*", "-binding", "workloadRebalancer"], ["workloadRebalancer"]) == ["binding"]


def test_controller_manager_defaults_are_karmadas() -> None:
    args = build_parser().parse_args([])
    assert args.controllers == ["*"]
    assert args.kube_api_qps == 40 and args.kube_api_burst == 60
    assert args.leader_elect is True
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (15.0, 10.0, 2.0)
    assert args.leader_elect_resource_namespace == "karmada-system"
    assert args.metrics_bind_address == ":8080" and args.health_probe_bind_address == ":10357"
    assert (args.rate_limiter_base_delay, args.rate_limiter_max_delay) == (0.005, 1000.0)
    assert (args.rate_limiter_qps, args.rate_limiter_bucket_size) == (10, 100)
    assert args.concurrent_resourcebinding_syncs == 5 and args.concurrent_clusterresourcebinding_syncs == 5
    assert args.cluster_cache_sync_timeout == 120.0


def test_karmada_flags_of_other_controllers_are_accepted() -> None:
    args = build_parser().parse_args(["--concurrent-work-syncs=10", "--enable-taint-manager=false",
                                      "--feature-gates=Failover=true", "--graceful-eviction-timeout=10m0s"])
    assert args.concurrent_work_syncs == 10


def test_bad_flag_value_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--leader-elect-lease-duration=soon"])
    assert exit_info.value.code == 2
    assert 'invalid duration "soon"' in capsys.readouterr().err


def test_lease_names_default_apart_from_karmadas_controller_manager() -> None:
    """Karmada's controller-manager keeps running (its other controllers) and holds the Lease
    "karmada-controller-manager", which it cannot rename: ours takes one of its own. The descheduler
    replaces Karmada's and keeps its Lease, so the two never deschedule at once."""
    assert build_parser().parse_args([]).leader_elect_resource_name == "karmada-rebalance-controller-manager"
    assert descheduler_parser().parse_args([]).leader_elect_resource_name == "karmada-descheduler"


def test_lease_name_flag_is_karmada_schedulers() -> None:
    parser = build_parser()
    assert parser.parse_args(["--leader-elect-resource-name=rebalance-lock"]).leader_elect_resource_name == \
        "rebalance-lock"
    [action] = [a for a in parser._actions if "--leader-elect-resource-name" in a.option_strings]
    assert action.help is not None and action.help.startswith(
        "The name of resource object that is used for locking during leader election.")
    assert 'karmada-controller-manager' in action.help and '(default "karmada-rebalance-controller-manager")' \
        in action.help
    # Karmada's descheduler has no such flag: accepted, but not offered by --help.
    [hidden] = [a for a in descheduler_parser()._actions if "--leader-elect-resource-name" in a.option_strings]
    assert hidden.help == argparse.SUPPRESS


@pytest.mark.parametrize("name", ["", "Karmada", "lease_name", "-lease", "lease.", "a" * 254])
def test_bad_lease_name_is_an_argparse_error(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([f"--leader-elect-resource-name={name}"])
    assert exit_info.value.code == 2
    assert f'invalid name "{name}"' in capsys.readouterr().err


@pytest.mark.parametrize("program", ["karmada-controller-manager", "karmada-descheduler"])
def test_a_kubeconfig_that_is_not_there_is_named_and_exits_2(program: str, tmp_path: Path) -> None:
    """Not kubernetes_asyncio's "Invalid kube-config file. Expected key current-context" for a file that does
    not exist, nor for a default kubeconfig that does not exist either."""
    exe = Path(sys.executable).parent / program
    missing = subprocess.run([str(exe), "--kubeconfig", str(tmp_path / "nope")], capture_output=True, text=True,
                             timeout=60, check=False)
    assert missing.returncode == 2
    assert f"--kubeconfig {tmp_path / 'nope'}: no such file" in missing.stderr
    env = {key: value for key, value in os.environ.items()
           if key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    default = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False,
                             env={**env, "HOME": str(tmp_path)})
    assert default.returncode == 2
    assert f"no --kubeconfig given, not running in a cluster (no service account), and no kubeconfig at " \
           f"{tmp_path}/.kube/config" in default.stderr


REFERENCE_FLAGS = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "flags"
_FLAG_LINE = re.compile(r"^\s+(?:-\w, )?--(?P<name>[\w-]+)(?: (?P<type>\S+))?\s{2,}"
                        r".*?(?:\(default (?P<default>.*)\))?$")
_SAMPLES = {"duration": "1m0s", "Level": "2", "int": "1", "int32": "1", "int64": "1", "uint": "1", "float": "1.5",
            "float32": "1.5"}


def reference_flags(component: str) -> list[str]:
    """Each flag of Karmada's ``<component> --help`` (../shared/reference/flags) as ``--name=value``: its default
    when it shows one, else a value of its type."""
    argv = []
    for line in (REFERENCE_FLAGS / f"{component}.md").read_text().splitlines():
        if (found := _FLAG_LINE.match(line)) is None:
            continue
        kind, default = found["type"], (found["default"] or "").strip('"')
        value = "true" if kind is None else default if default and default != "[]" else _SAMPLES.get(kind, "x")
        argv.append(f"--{found['name']}={value}")
    return argv


@pytest.mark.skipif(not REFERENCE_FLAGS.is_dir(), reason="no ../shared/reference/flags next to the checkout")
@pytest.mark.parametrize(("component", "parser"), [("karmada-controller-manager", build_parser),
                                                   ("karmada-descheduler", descheduler_parser)])
def test_every_flag_of_karmadas_component_is_accepted(component: str, parser: Callable[[], argparse.ArgumentParser],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """An existing deployment's arguments keep working: implemented, or accepted and ignored (klog's flags,
    other controllers' settings)."""
    argv = reference_flags(component)
    assert len(argv) > 40
    for flag in argv:
        try:
            parser().parse_args([flag])
        except SystemExit:
            pytest.fail(f"{component} refuses {flag}: {capsys.readouterr().err.strip()}")


@pytest.mark.parametrize("module", ["controller_manager", "descheduler"])
def test_the_version_subcommand_prints_karmadas_line(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "version"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r'karmada-(controller-manager|descheduler) version: version\.Info\{GitVersion:"v[^"]+", '
                        r'GitCommit:"[^"]*", GitShortCommit:"[^"]*", GitTreeState:"[^"]*", BuildDate:"[^"]*", '
                        r'GoVersion:"python[\d.]+", Compiler:"\w+", Platform:"\w+/\w+"\}\n', done.stdout)


@pytest.mark.parametrize(("text", "value"), [("true", True), ("T", True), ("1", True), ("TRUE", True),
                                             ("false", False), ("F", False), ("0", False), ("False", False)])
def test_booleans_are_gos(text: str, value: bool) -> None:
    assert boolean(text) is value


@pytest.mark.parametrize("text", ["yes", "no", "on", "off", "tRuE", ""])
def test_what_go_refuses_as_a_boolean_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f'invalid boolean "{text}": use true or false'):
        boolean(text)
