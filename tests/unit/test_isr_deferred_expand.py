"""An ISR expansion asked for while the partition's previous ISR write is in flight is not
lost: it is decided again when that write lands (an idle fetch session would never ask again).
Real ZooKeeper, real partition log."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from pathlib import Path

from pafka.cluster.topic_config import TopicConfig
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.zk.client import ZkClient
from pafka.zk.znodes import PartitionState
from services.broker.isr import IsrManager
from services.broker.partition import Partition
from tests.unit.net_util import eventually


def test_an_expansion_asked_during_a_write_lands_after_it(zk_connect: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        zk = ZkClient(zk_connect, session_timeout_ms=6000, name="test")
        await zk.start(timeout_s=10)
        state = PartitionState(1, 0, (1,), 1)
        path = PartitionState.path("t", 0)
        await zk.run(partial(zk.kazoo.create, path, state.encode(), makepath=True))
        p = Partition("t", 0, Log.open(tmp_path / "t-0", LogConfig()), TopicConfig())
        p.leader, p.leader_epoch, p.controller_epoch, p.zk_version = 1, 0, 1, 0
        p.replicas, p.isr, p.is_leader = (1, 2, 3), (1,), True
        isr = IsrManager(zk, 30_000)
        now_ms = int(time.time() * 1000)
        try:
            p.followers.on_fetch(2, 0, 0, now_ms)  # at the high watermark (0): may join
            isr.maybe_expand(p)
            while ("t", 0) not in isr._in_flight:
                await asyncio.sleep(0)
            p.followers.on_fetch(3, 0, 0, now_ms)  # joins while (1, 2) is being written
            isr.maybe_expand(p)
            await eventually(lambda: p.isr == (1, 2, 3), 10.0)
            data, _ = await zk.run(zk.kazoo.get, path)
            assert PartitionState.decode("t", 0, data).isr == (1, 2, 3)
        finally:
            await isr.close()
            p.log.close()
            await zk.close()

    asyncio.run(scenario())
