"""Kafka principals: ``User:alice``, the identity ACLs and quotas are keyed by.

A connection's principal comes from its listener: ``User:ANONYMOUS`` on PLAINTEXT, the SASL
user name after SASL, the certificate's subject (RFC 2253 form) after TLS with a client
certificate, as Kafka's ``DefaultKafkaPrincipalBuilder`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.errors import InvalidPrincipalTypeError

USER_TYPE = "User"


@dataclass(frozen=True, order=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``Type:name`` as ACLs and ``super.users`` spell it; the name may hold colons."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise InvalidPrincipalTypeError(f"{text!r} is not a principal of the form Type:name")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal.user("ANONYMOUS")
