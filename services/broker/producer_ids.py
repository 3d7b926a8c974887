"""Cluster-unique producer ids for idempotent producers, claimed from ZooKeeper in blocks."""

from __future__ import annotations

import asyncio
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.zk.znodes import ProducerIdBlockZNode


def claim_block(zk: KazooClient, broker_id: int, block_size: int) -> ProducerIdBlockZNode:
    """Take the next block with a conditional write; losers of a race re-read and retry."""
    path = ProducerIdBlockZNode.path()
    while True:
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            block = ProducerIdBlockZNode(broker_id, 0, block_size - 1)
            try:
                zk.create(path, block.encode(), makepath=True)
                return block
            except NodeExistsError:
                continue
        previous = ProducerIdBlockZNode.decode(data)
        start = previous.block_end + 1
        block = ProducerIdBlockZNode(broker_id, start, start + block_size - 1)
        try:
            zk.set(path, block.encode(), version=stat.version)
            return block
        except BadVersionError:
            continue


class ProducerIdAllocator:
    def __init__(self, zk: Any, broker_id: int, block_size: int) -> None:
        self._zk = zk
        self._broker_id = broker_id
        self._block_size = block_size
        self._next = 0
        self._end = -1
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                block = await self._zk.run(
                    claim_block, self._zk.kazoo, self._broker_id, self._block_size
                )
                self._next, self._end = block.block_start, block.block_end
            pid = self._next
            self._next += 1
            return pid
