"""The errors of the Spark connector, all :class:`pafka.errors.PafkaError`.

::

    ConnectorError              base: something the user can act on, said in one sentence
    ├── OptionError             an option is missing, unknown in this place, or malformed
    ├── UnknownTopicError       a topic (or partition) the options name does not exist
    ├── GatewayUnavailableError no gateway answered within the request timeout
    ├── DataLossError           records the query needs were deleted (failOnDataLoss=true)
    └── ProduceError            the gateway refused or did not acknowledge records

They are raised on the driver (planning) and in Python workers (reads, writes); Spark shows the
message of the latter inside its ``PythonException``, so every message names the topic,
partition, offsets or option concerned.
"""

from __future__ import annotations

from pafka.errors import PafkaError


class ConnectorError(PafkaError):
    """The pafka Spark connector cannot go on."""


class OptionError(ConnectorError, ValueError):
    """An option of the pafka data source is missing or has a bad value."""


class UnknownTopicError(ConnectorError):
    """A topic or partition named by the options does not exist."""


class GatewayUnavailableError(ConnectorError):
    """No pafka gateway could be reached."""


class DataLossError(ConnectorError):
    """Records in the requested range are no longer (or not) in the log."""


class ProduceError(ConnectorError):
    """Records could not be written through the gateway."""
