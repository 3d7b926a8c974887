"""A throwaway certificate authority made with the openssl command line, for local clusters,
tests and benchmarks: a CA, a server certificate for 127.0.0.1 and localhost, and client
certificates for mTLS."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pem:
    cert: Path
    key: Path


@dataclass(frozen=True)
class ThrowawayCa:
    directory: Path
    ca: Pem

    @classmethod
    def create(cls, directory: Path) -> ThrowawayCa:
        directory.mkdir(parents=True, exist_ok=True)
        ca = Pem(directory / "ca.pem", directory / "ca.key")
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=pafka test CA", "-keyout", ca.key, "-out", ca.cert,
        )  # fmt: skip
        return cls(directory, ca)

    def issue(self, name: str, subject: str, *, server: bool = False) -> Pem:
        """A certificate signed by the CA; a server one names 127.0.0.1 and localhost."""
        pem = Pem(self.directory / f"{name}.pem", self.directory / f"{name}.key")
        csr = self.directory / f"{name}.csr"
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", pem.key, "-out", csr,
        )  # fmt: skip
        ext = self.directory / f"{name}.ext"
        usage = "serverAuth,clientAuth" if server else "clientAuth"
        lines = [f"extendedKeyUsage={usage}"]
        if server:
            lines.append("subjectAltName=IP:127.0.0.1,DNS:localhost")
        ext.write_text("\n".join(lines) + "\n")
        _openssl(
            "x509", "-req", "-in", csr, "-CA", self.ca.cert, "-CAkey", self.ca.key,
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", pem.cert,
        )  # fmt: skip
        return pem


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)
