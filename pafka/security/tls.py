"""TLS for Kafka listeners and clients, from PEM files (certificate, key, CA bundle).

The server context follows Kafka's ``ssl.client.auth``: ``none``, ``requested`` (a client
certificate is verified when sent) or ``required`` (mTLS). A verified client certificate makes
the connection's principal ``User:`` and its subject in RFC 2253 form, as Kafka's default
principal builder does (``User:CN=alice,OU=eng,O=example``).

Certificates are renewed underneath running services (cert-manager rotates them every few
weeks), so :class:`ReloadingContext` re-reads the files when they change: the certificate and
key replace the old ones for every handshake after that; a new CA bundle adds to the trusted
set (removing a CA needs a restart).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import ssl
from dataclasses import dataclass
from typing import Any

from pafka.errors import ConfigError
from pafka.security.principal import ANONYMOUS, KafkaPrincipal

log = logging.getLogger(__name__)


class ClientAuth(enum.StrEnum):
    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"

    @classmethod
    def parse(cls, text: str) -> ClientAuth:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ConfigError(
                f"ssl client auth {text!r} is not none, requested or required"
            ) from None


@dataclass(frozen=True)
class TlsFiles:
    certfile: str | None = None
    keyfile: str | None = None
    cafile: str | None = None
    key_password: str | None = None

    def paths(self) -> tuple[str, ...]:
        return tuple(p for p in (self.certfile, self.keyfile, self.cafile) if p)


def server_context(files: TlsFiles, client_auth: ClientAuth = ClientAuth.NONE) -> ssl.SSLContext:
    if not files.certfile:
        raise ConfigError("a TLS listener needs a certificate file (and its key)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load(ctx, files)
    if client_auth is not ClientAuth.NONE:
        if not files.cafile:
            raise ConfigError(f"ssl client auth {client_auth} needs a CA file to verify clients")
        ctx.verify_mode = (
            ssl.CERT_REQUIRED if client_auth is ClientAuth.REQUIRED else ssl.CERT_OPTIONAL
        )
    return ctx


def client_context(files: TlsFiles, *, check_hostname: bool = True) -> ssl.SSLContext:
    """A client's context: the CA bundle to trust (the system's when none is given), and a
    certificate of its own for mTLS. ``check_hostname`` is Kafka's
    ``ssl.endpoint.identification.algorithm=https`` (on by default since Kafka 2.0)."""
    ctx = (
        ssl.create_default_context(cafile=files.cafile)
        if files.cafile
        else ssl.create_default_context()
    )
    ctx.check_hostname = check_hostname
    if files.certfile:
        try:
            ctx.load_cert_chain(files.certfile, files.keyfile, files.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load client certificate {files.certfile}: {exc}") from exc
    return ctx


def _load(ctx: ssl.SSLContext, files: TlsFiles) -> None:
    try:
        assert files.certfile is not None
        ctx.load_cert_chain(files.certfile, files.keyfile, files.key_password)
        if files.cafile:
            ctx.load_verify_locations(cafile=files.cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load TLS files {', '.join(files.paths())}: {exc}") from exc


class ReloadingContext:
    """A server context whose files are re-read when their modification times change."""

    def __init__(self, files: TlsFiles, client_auth: ClientAuth) -> None:
        self.files = files
        self.context = server_context(files, client_auth)
        self._stamps = _stamps(files)
        self.reloads = 0

    def reload_if_changed(self) -> bool:
        """Re-read changed files into the live context; a broken new file keeps the old
        certificate serving (and is logged), so a half-written renewal never takes a listener
        down."""
        stamps = _stamps(self.files)
        if stamps == self._stamps:
            return False
        try:
            _load(self.context, self.files)
        except ConfigError as exc:
            log.error("keeping the current TLS certificate: %s", exc)
            return False
        self._stamps = stamps
        self.reloads += 1
        log.info("reloaded TLS files %s", ", ".join(self.files.paths()))
        return True


def _stamps(files: TlsFiles) -> tuple[tuple[int, int], ...]:
    out = []
    for path in files.paths():
        try:
            st = os.stat(path)
        except OSError:
            out.append((-1, -1))
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


# RFC 4514 / 2253 short names of the attributes Python's ssl module reports by long name.
_SHORT_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def subject_name(peercert: dict[str, Any]) -> str:
    """A certificate's subject in RFC 2253 form: most specific first, special characters
    escaped, as Java's ``X500Principal.getName()`` prints it."""
    rdns = peercert.get("subject", ())
    parts = []
    for rdn in reversed(rdns):
        parts.append("+".join(f"{_SHORT_NAMES.get(k, k)}={_escape(str(v))}" for k, v in rdn))
    return ",".join(parts)


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;=' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def principal_of(peercert: dict[str, Any] | None) -> KafkaPrincipal:
    """The principal of a TLS connection: its verified certificate's subject, else
    ``User:ANONYMOUS`` (Kafka's principal of a TLS client that sent no certificate)."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal.user(subject_name(peercert))


async def reload_forever(tls: ReloadingContext, interval_ms: int) -> None:
    """Check the files every ``interval_ms`` for as long as the service runs."""
    while True:
        await asyncio.sleep(interval_ms / 1000)
        tls.reload_if_changed()
