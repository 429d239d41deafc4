"""A self-signed serving certificate, for API servers that authenticate.

kubectl (client-go's clientcmd) only sends a kubeconfig's credentials over TLS, so a server that
asks for a bearer token must serve HTTPS for kubectl to reach it. The certificate is made at start
by the ``openssl`` command (no Python dependency), valid for the listen address; its private key is
loaded into memory and deleted from disk at once; the certificate doubles as the CA clients trust.
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)


class TlsError(RuntimeError):
    """The serving certificate could not be made."""


@dataclass
class ServingCert:
    """The server's TLS context and the certificate clients should trust (``ca_file`` lives until ``cleanup``)."""

    context: ssl.SSLContext
    ca_pem: bytes
    ca_file: Path

    def cleanup(self) -> None:
        shutil.rmtree(self.ca_file.parent, ignore_errors=True)


def _subject_alt_names(host: str) -> str:
    names = {"DNS:localhost", "IP:127.0.0.1"}
    try:
        ipaddress.ip_address(host)
        names.add(f"IP:{host}")
    except ValueError:
        names.add(f"DNS:{host}")
    return ",".join(sorted(names))


async def self_signed(host: str) -> ServingCert:
    """Make a P-256 certificate for ``host`` (+ localhost, 127.0.0.1), valid one year."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("serving HTTPS needs the openssl command (install the openssl package)")
    folder = Path(tempfile.mkdtemp(prefix="devplane-tls-"))  # mode 0700
    key, cert = folder / "tls.key", folder / "ca.crt"
    try:
        proc = await asyncio.create_subprocess_exec(
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "365", "-subj", "/CN=karmada-devplane-apiserver",
            "-addext", f"subjectAltName={_subject_alt_names(host)}",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise TlsError(f"openssl could not make a certificate: {err.decode(errors='replace').strip()}")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        return ServingCert(context, cert.read_bytes(), cert)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        key.unlink(missing_ok=True)
