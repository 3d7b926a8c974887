"""Security: who a connection is (TLS, SASL), what it may do (ACLs), how fast it may go (quotas).

Everything in this package is pure: the broker, the gateway and the CLI bring the sockets,
ZooKeeper and clocks.
"""
