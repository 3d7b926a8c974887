"""Network deadlines: the timeouts every connection and request is bounded by, and the sockets
that apply them."""
