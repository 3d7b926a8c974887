"""Transactions (KIP-98) as pure logic: the transaction coordinator's state table and decisions.

No I/O and no clock: the broker's coordinator (``services/broker/transactions``) reads a
transactional id's state from ZooKeeper, calls these functions with the time, writes the result.
"""
