"""One client connection's security: its listener, who it is, and where its SASL exchange
stands. The transport creates one per connection; the dispatcher and the SASL authenticator
read and advance it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pafka.security.listeners import SecurityProtocol
from pafka.security.principal import ANONYMOUS, KafkaPrincipal
from pafka.security.sasl_mechanisms import ServerMechanism
from pafka.security.sasl_state import SaslState


@dataclass(eq=False)
class ConnectionSession:
    host: str
    listener: str = "PLAINTEXT"
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    principal: KafkaPrincipal = ANONYMOUS
    # None on listeners without SASL.
    sasl_state: SaslState | None = None
    mechanism_name: str | None = None
    mechanism: ServerMechanism | None = field(default=None, repr=False)
    # Monotonic time at which the SASL session ends (connections.max.reauth.ms).
    expires_at: float = math.inf
    # Set when the response being sent is the last: a refused authentication.
    close_after_response: bool = False

    @property
    def authenticated(self) -> bool:
        return self.sasl_state in (None, SaslState.AUTHENTICATED)
