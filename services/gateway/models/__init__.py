"""Request and response bodies of the gateway's routes, one module per router, as /docs shows
them. The class names are the schema names in the OpenAPI document."""

# The Kafka wire types numbers end up in: bounded here, so an out-of-range number is a 422
# that /docs documents, never a value the encoder cannot write.
MAX_INT16 = 2**15 - 1
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
