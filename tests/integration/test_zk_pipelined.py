"""Pipelined and multiRead reads give exactly what one blocking read per znode gives."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pafka.local.zookeeper import ZooKeeperServer
from pafka.zk.client import MULTI_READ_SIZE, children_many, exists_many, get_many, get_small_many


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KazooClient]:
    server = ZooKeeperServer(Path(tmp_path_factory.mktemp("pipelined-zk")))
    server.start()
    root = KazooClient(hosts=server.connect_string)
    root.start(timeout=15)
    chroot = f"/t{uuid.uuid4().hex[:8]}"
    root.ensure_path(chroot)
    root.stop()
    client = KazooClient(hosts=server.connect_string + chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    server.stop()


def serial(zk: KazooClient, path: str) -> tuple[bytes, object] | None:
    if zk.exists(path) is None:
        return None
    data, stat = zk.get(path)
    return bytes(data or b""), stat


def test_many_reads_match_one_at_a_time_in_a_chroot(zk: KazooClient) -> None:
    count = MULTI_READ_SIZE * 2 + 7
    zk.ensure_path("/many")
    paths = [f"/many/{i}" for i in range(count)]
    for i, path in enumerate(paths):
        if i % 5:  # every fifth is missing
            zk.create(path, str(i).encode() * (i % 3))  # some empty
    zk.create("/many/child/grandchild", makepath=True)
    expected = [serial(zk, p) for p in paths]
    assert get_many(zk, paths) == expected
    assert get_small_many(zk, paths) == expected
    assert exists_many(zk, paths) == [None if e is None else e[1] for e in expected]
    assert children_many(zk, ["/many/child", "/many/none"]) == [["grandchild"], None]
    assert get_small_many(zk, []) == get_many(zk, []) == []
