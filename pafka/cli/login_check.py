"""One login before a kafka-python client is built, so wrong credentials fail at once.

kafka-python retries a refused SASL login until its bootstrap gives up, then says only that it
could not bootstrap (30 s later). Kafka's own tools fail on the first refusal and name the
authentication; logging in once with pafka's client, to the first bootstrap server that
answers, does the same for pafka's tools.
"""

from __future__ import annotations

import asyncio
import contextlib

from pafka.client.secure_connect import secure_connection
from pafka.errors import PafkaError, SaslAuthenticationFailedError
from pafka.security.client_security import ClientSecurity

LOGIN_TIMEOUT_S = 10.0


def check_login(bootstrap: str, security: ClientSecurity) -> None:
    """Raises SaslAuthenticationFailedError when a broker refuses the credentials; a broker
    that cannot be reached is left to the client, which tries the others."""
    if not security.protocol.uses_sasl:
        return
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            continue  # the client reports a malformed address in its own words
        try:
            asyncio.run(_login(host.strip("[]"), int(port), security))
            return
        except SaslAuthenticationFailedError:
            raise
        except (OSError, TimeoutError, PafkaError):
            continue


async def _login(host: str, port: int, security: ClientSecurity) -> None:
    _, writer, _ = await secure_connection(
        host, port, security, client_id="pafka-cli", setup_timeout_s=LOGIN_TIMEOUT_S
    )
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
