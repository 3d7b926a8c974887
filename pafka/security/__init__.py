"""Security: who a connection is (TLS, SASL), what it may do (ACLs), how fast it may go (quotas).

Pure decisions and codecs (SCRAM, ACLs, quotas, listeners), plus the TLS contexts built from PEM
files (``tls``); the broker, the gateway and the CLI bring the sockets, ZooKeeper and clocks.
"""
