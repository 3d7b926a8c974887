"""Request and response bodies of the gateway's routes, one module per router, as /docs shows
them. The class names are the schema names in the OpenAPI document."""
