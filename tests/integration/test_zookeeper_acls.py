"""ZooKeeper ACLs (Kafka's zookeeper.set.acl) on a real cluster: services authenticate with a
digest identity and create every znode readable by anyone, writable only by that identity;
credentials' subtrees are not even readable; wrong credentials stop a service at start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import Permissions

from pafka.local.ports import free_port
from pafka.zk import znodes
from pafka.zk.security import parse_zk_auth
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.secure_cluster import ZK_AUTH, authenticated, create_topic_and_round_trip

TOPIC = "secured"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "zk-acls", brokers=2, controllers=1, gateways=1, zk_auth=ZK_AUTH
    ) as handle:
        create_topic_and_round_trip(handle.local.bootstrap, TOPIC)
        yield handle


@pytest.fixture(scope="module")
def owner(secured: ClusterHandle) -> Iterator[KazooClient]:
    """Authenticated as the services are."""
    client = authenticated(secured.zk_connect)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def anonymous(secured: ClusterHandle) -> KazooClient:
    """The handle's own client has no credentials."""
    return secured.zk


def test_a_cluster_with_zookeeper_auth_works(secured: ClusterHandle) -> None:
    create_topic_and_round_trip(secured.local.bootstrap, "secured-again", partitions=1)
    assert all(s.ready() for s in secured.local.services.values())


def test_anyone_reads_brokers_and_topics_but_cannot_change_them(
    secured: ClusterHandle, anonymous: KazooClient
) -> None:
    assert sorted(anonymous.get_children(znodes.BROKER_IDS)) == ["1", "2"]
    data, _ = anonymous.get(znodes.TopicZNode.path(TOPIC))
    assert znodes.TopicZNode.decode(TOPIC, data).partitions.keys() == {0, 1}
    state = znodes.PartitionState.path(TOPIC, 0)
    anonymous.get(state)
    with pytest.raises(NoAuthError):
        anonymous.set(znodes.TopicZNode.path(TOPIC), b"{}")
    with pytest.raises(NoAuthError):
        anonymous.set(state, b"{}")
    with pytest.raises(NoAuthError):
        anonymous.delete(state)
    with pytest.raises(NoAuthError):
        anonymous.create(znodes.BrokerInfo.path(99), b"{}", ephemeral=True)
    with pytest.raises(NoAuthError):
        anonymous.create(znodes.DELETE_TOPICS + "/" + TOPIC)


def test_every_znode_the_services_made_has_the_secure_acl(owner: KazooClient) -> None:
    identity = parse_zk_auth(ZK_AUTH, "test").identity
    for path in (
        znodes.BrokerInfo.path(1),
        znodes.TopicZNode.path(TOPIC),
        znodes.PartitionState.path(TOPIC, 1),
        znodes.CONTROLLER_EPOCH,
        znodes.CLUSTER_ID,
    ):
        acls, _ = owner.get_acls(path)
        assert {(a.id.scheme, a.id.id, a.perms) for a in acls} == {
            ("digest", identity, Permissions.ALL),
            ("world", "anyone", Permissions.READ),
        }, path


def test_credentials_are_not_world_readable(
    secured: ClusterHandle, owner: KazooClient, anonymous: KazooClient
) -> None:
    path = znodes.EntityConfigZNode.path(znodes.entity_config_path("alice", None))
    payload = znodes.EntityConfigZNode({"producer_byte_rate": "1048576"}).encode()
    owner.create(path, payload, makepath=True)
    with pytest.raises(NoAuthError):
        anonymous.get(path)
    with pytest.raises(NoAuthError):
        anonymous.get_children(znodes.CONFIG_USERS)
    wrong = authenticated(secured.zk_connect, "digest:pafka:wrong")
    try:
        with pytest.raises(NoAuthError):
            wrong.get(path)
    finally:
        wrong.stop()
        wrong.close()
    assert owner.get(path)[0] == payload


def test_parents_made_on_the_way_get_their_own_acl(
    secured: ClusterHandle, owner: KazooClient
) -> None:
    """A parent created by makepath gets its own path's ACL, not its child's."""
    owner.ensure_path("/fresh")
    fresh = authenticated(secured.zk_connect + "/fresh")
    try:
        fresh.create("/config/users/carol", b"{}", makepath=True)
        fresh.create("/brokers/topics/t/partitions/0/state", b"{}", makepath=True)
        assert len(fresh.get_acls("/config")[0]) == 2
        assert len(fresh.get_acls("/config/users")[0]) == 1
        assert len(fresh.get_acls("/config/users/carol")[0]) == 1
        assert len(fresh.get_acls("/brokers/topics/t/partitions")[0]) == 2
    finally:
        fresh.stop()
        fresh.close()


def _start_broker(
    secured: ClusterHandle, tmp_path: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "broker"],
        env={
            **os.environ,
            "PAFKA_BROKER_ID": "7",
            "PAFKA_BROKER_ZOOKEEPER": secured.zk_connect,
            "PAFKA_BROKER_HOST": "127.0.0.1",
            "PAFKA_BROKER_ADVERTISED_HOST": "127.0.0.1",
            "PAFKA_BROKER_PORT": str(free_port()),
            "PAFKA_BROKER_HTTP_PORT": str(free_port()),
            "PAFKA_BROKER_DATA_DIR": str(tmp_path / "data"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_wrong_credentials_stop_a_service_at_start(secured: ClusterHandle, tmp_path: Path) -> None:
    done = _start_broker(secured, tmp_path, {"PAFKA_BROKER_ZK_AUTH": "digest:pafka:wrong"})
    assert done.returncode == 1
    assert "ZooKeeper refuses writes to /brokers/ids by digest user 'pafka'" in done.stderr
    assert "the-right-password" not in done.stderr + done.stdout


def test_no_credentials_stop_a_service_at_start(secured: ClusterHandle, tmp_path: Path) -> None:
    done = _start_broker(secured, tmp_path, {})
    assert done.returncode == 1
    assert "no identity (ZooKeeper authentication not configured)" in done.stderr


def test_existing_znodes_are_secured_by_the_migration(
    secured: ClusterHandle, anonymous: KazooClient, tmp_path: Path
) -> None:
    """Nodes created before ACLs were turned on keep theirs until `pafka zookeeper secure`."""
    anonymous.create("/migrated/brokers/topics/old", b"{}", makepath=True)
    anonymous.create("/migrated/config/users/bob", b"{}", makepath=True)
    anonymous.create("/migrated/consumers/g/ids", b"", makepath=True)
    chroot = secured.zk_connect + "/migrated"
    secret = tmp_path / "zk-auth"
    secret.write_text(ZK_AUTH)
    done = _cli(chroot, {"PAFKA_CLI_ZK_AUTH_FILE": str(secret)}, "zookeeper", "secure")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "set secure ACLs on 9 znodes"
    after = KazooClient(hosts=chroot)
    after.start(timeout=15)
    try:
        after.get("/brokers/topics/old")
        with pytest.raises(NoAuthError):
            after.set("/brokers/topics/old", b"{}")
        with pytest.raises(NoAuthError):
            after.get("/config/users/bob")
        after.create("/consumers/other", b"")  # the old consumers' root stays open
        with pytest.raises(NoAuthError):
            after.create("/consumers/g/other", b"")
    finally:
        after.stop()
        after.close()


def _cli(connect: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pafka.cli.main",
            *args,
            "--zookeeper",
            connect,
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_command_line_writes_with_credentials_and_reads_without(
    secured: ClusterHandle, owner: KazooClient, tmp_path: Path
) -> None:
    refused = _cli(secured.zk_connect, {}, "topics", "create", "cli-made")
    assert refused.returncode == 1
    assert "NoAuth" in refused.stderr and "PAFKA_CLI_ZK_AUTH" in refused.stderr
    secret = tmp_path / "zk-auth"
    secret.write_text(ZK_AUTH)
    made = _cli(
        secured.zk_connect, {"PAFKA_CLI_ZK_AUTH_FILE": str(secret)}, "topics", "create", "cli-made"
    )
    assert made.returncode == 0, made.stderr
    listed = _cli(secured.zk_connect, {}, "topics", "list")
    assert "cli-made" in listed.stdout.split()
    acls, _ = owner.get_acls(znodes.TopicZNode.path("cli-made"))
    assert len(acls) == 2 and {a.id.scheme for a in acls} == {"digest", "world"}


def test_scram_users_made_by_the_command_line_are_not_world_readable(
    secured: ClusterHandle, anonymous: KazooClient, tmp_path: Path
) -> None:
    secret, password = tmp_path / "zk-auth", tmp_path / "dave.pw"
    secret.write_text(ZK_AUTH)
    password.write_text("dave-secret\n")
    made = _cli(
        secured.zk_connect,
        {"PAFKA_CLI_ZK_AUTH_FILE": str(secret)},
        "users",
        "create",
        "dave",
        "--password-file",
        str(password),
    )
    assert made.returncode == 0, made.stderr
    path = znodes.EntityConfigZNode.path(znodes.entity_config_path("dave", None))
    with pytest.raises(NoAuthError):
        anonymous.get(path)
    listed = _cli(secured.zk_connect, {"PAFKA_CLI_ZK_AUTH_FILE": str(secret)}, "users", "list")
    assert "dave" in listed.stdout
