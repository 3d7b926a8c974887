"""What every API handler receives: the request header and the broker's parts.

Handlers pass every error code they put in a response through :meth:`RequestContext.error`:
they know their codes, so counting there costs nothing on success and needs no walk of the
response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pafka.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from services.broker.broker import Broker


@dataclass(frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    broker: Broker
    # Who sent the request (User:ANONYMOUS on an unauthenticated listener) and on which
    # listener it came: authorization and quotas key on the first, Metadata's endpoints on the
    # second.
    principal: KafkaPrincipal = ANONYMOUS
    listener: str = "PLAINTEXT"

    def error(self, code: int) -> int:
        """Count an error code the response carries (Kafka's ErrorsPerSec), and return it for
        the response field; 0 is not counted."""
        self.broker.metrics.count_error(self.api_key, code)
        return code
