"""SCRAM users in ZooKeeper: ``pafka users`` and the KIP-554 admin APIs against a real broker.

The layout is checked by literal paths and JSON, as Kafka's tools write and read it:
``/config/users/{sanitized user}`` = ``{"version":1,"config":{...}}``, and one
``/config/changes/config_change_N`` = ``{"version":2,"entity_path":"users/{user}"}`` per change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    KafkaAdminClient,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kazoo.client import KazooClient

from pafka.security.plain import check_password
from pafka.security.scram_credentials import ScramCredential
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.wire import request_once

RESOURCE_NOT_FOUND, UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL = (
    91,
    33,
    92,
    93,
)


@pytest.fixture(scope="module")
def scram_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(tmp_path_factory, "scram", brokers=1, controllers=1) as handle:
        yield handle


def pafka(
    zk_connect: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "users", *args, "--zookeeper", zk_connect],
        env={**os.environ},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def user_node(zk: KazooClient, sanitized: str) -> dict[str, Any]:
    data, _ = zk.get(f"/config/users/{sanitized}")
    payload: dict[str, Any] = json.loads(data)
    return payload


def changes(zk: KazooClient) -> dict[str, dict[str, Any]]:
    if not zk.exists("/config/changes"):
        return {}
    return {
        child: json.loads(zk.get(f"/config/changes/{child}")[0])
        for child in zk.get_children("/config/changes")
    }


def new_changes(zk: KazooClient, before: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    after = changes(zk)
    for child in after:
        assert re.fullmatch(r"config_change_\d{10}", child), child
    return [after[c] for c in sorted(set(after) - set(before))]


def test_cli_create_list_delete_keeps_quotas(scram_cluster: ClusterHandle, tmp_path: Path) -> None:
    zk, connect = scram_cluster.zk, scram_cluster.zk_connect
    # A quota of the same user, written by someone else (kafka-configs --add-config).
    zk.ensure_path("/config/users")
    zk.create("/config/users/alice", b'{"version":1,"config":{"producer_byte_rate":"1024"}}')
    password_file = tmp_path / "alice.password"
    password_file.write_text("s3cret pässword\n", encoding="utf-8")
    before = changes(zk)
    created = pafka(
        connect,
        "create",
        "alice",
        "--mechanism",
        "SCRAM-SHA-256",
        "--mechanism",
        "SCRAM-SHA-512",
        "--iterations",
        "8192",
        "--password-file",
        str(password_file),
    )
    assert created.returncode == 0, created.stderr
    assert "s3cret" not in created.stdout + created.stderr
    node = user_node(zk, "alice")
    assert node["version"] == 1
    config = node["config"]
    assert set(config) == {"producer_byte_rate", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert config["producer_byte_rate"] == "1024"
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert re.fullmatch(
            r"salt=[A-Za-z0-9+/=]+,stored_key=[A-Za-z0-9+/=]+,server_key=[A-Za-z0-9+/=]+,"
            r"iterations=8192",
            config[mechanism],
        )
        assert ScramCredential.parse(config[mechanism]).iterations == 8192
    # The password is the file's first line, without its newline; PLAIN checks it.
    assert check_password("alice", "s3cret pässword", config)
    assert not check_password("alice", "s3cret pässword\n", config)
    assert new_changes(zk, before) == [{"version": 2, "entity_path": "users/alice"}]

    listed = pafka(connect, "list")
    assert listed.returncode == 0, listed.stderr
    assert (
        "alice: SCRAM-SHA-256(iterations=8192), SCRAM-SHA-512(iterations=8192)"
        in listed.stdout.splitlines()
    )

    before = changes(zk)
    dropped = pafka(connect, "delete", "alice", "--mechanism", "SCRAM-SHA-256")
    assert dropped.returncode == 0, dropped.stderr
    assert set(user_node(zk, "alice")["config"]) == {"producer_byte_rate", "SCRAM-SHA-512"}
    assert new_changes(zk, before) == [{"version": 2, "entity_path": "users/alice"}]

    gone = pafka(connect, "delete", "alice")
    assert gone.returncode == 0, gone.stderr
    assert user_node(zk, "alice")["config"] == {"producer_byte_rate": "1024"}
    assert not any(line.startswith("alice:") for line in pafka(connect, "list").stdout.splitlines())
    again = pafka(connect, "delete", "alice")
    assert again.returncode == 1
    assert "no SCRAM credential" in again.stderr and "Traceback" not in again.stderr


def test_cli_password_sources(scram_cluster: ClusterHandle) -> None:
    zk, connect = scram_cluster.zk, scram_cluster.zk_connect
    from_stdin = pafka(connect, "create", "bob", "--password-stdin", stdin="from stdin\n")
    assert from_stdin.returncode == 0, from_stdin.stderr
    config = user_node(zk, "bob")["config"]
    assert set(config) == {"SCRAM-SHA-512"}  # the default mechanism
    assert ScramCredential.parse(config["SCRAM-SHA-512"]).iterations == 4096
    assert check_password("bob", "from stdin", config)

    explicit = pafka(connect, "create", "bob", "--password", "in argv")
    assert explicit.returncode == 0, explicit.stderr
    assert "warning" in explicit.stderr and "visible" in explicit.stderr
    assert check_password("bob", "in argv", user_node(zk, "bob")["config"])

    missing = pafka(connect, "create", "bob")
    assert missing.returncode == 2 and "--password-file" in missing.stderr
    weak = pafka(connect, "create", "bob", "--iterations", "1000", "--password-stdin", stdin="x\n")
    assert weak.returncode == 1 and "too few iterations" in weak.stderr
    empty = pafka(connect, "create", "bob", "--password-stdin", stdin="\n")
    assert empty.returncode == 1 and "empty" in empty.stderr


def test_cli_sanitizes_user_names(scram_cluster: ClusterHandle) -> None:
    zk, connect = scram_cluster.zk, scram_cluster.zk_connect
    before = changes(zk)
    user = "carol@example.com/ops"
    created = pafka(connect, "create", user, "--password-stdin", stdin="pw\n")
    assert created.returncode == 0, created.stderr
    assert "SCRAM-SHA-512" in user_node(zk, "carol%40example.com%2Fops")["config"]
    assert new_changes(zk, before) == [
        {"version": 2, "entity_path": "users/carol%40example.com%2Fops"}
    ]
    assert any(line.startswith(f"{user}: ") for line in pafka(connect, "list").stdout.splitlines())


def test_admin_client_alters_and_describes(scram_cluster: ClusterHandle) -> None:
    zk = scram_cluster.zk
    admin = KafkaAdminClient(bootstrap_servers=scram_cluster.bootstrap, client_id="scram-test")
    try:
        before = changes(zk)
        result = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("dave", "SCRAM-SHA-256", "dave-pw"),
                UserScramCredentialUpsertion("dave", "SCRAM-SHA-512", "dave-pw", iterations=8192),
                UserScramCredentialUpsertion("erin", "SCRAM-SHA-512", "erin-pw"),
            ]
        )
        assert result == {"dave": None, "erin": None}
        config = user_node(zk, "dave")["config"]
        assert set(config) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
        # The broker stored the keys derived from the client's salted password.
        assert check_password("dave", "dave-pw", config)
        assert check_password("dave", "dave-pw", {"SCRAM-SHA-256": config["SCRAM-SHA-256"]})
        assert sorted(c["entity_path"] for c in new_changes(zk, before)) == [
            "users/dave",
            "users/erin",
        ]

        described = admin.describe_user_scram_credentials(["dave"])
        assert described == {
            "dave": {
                "error": None,
                "credential_infos": [
                    {"mechanism": ScramMechanism.SCRAM_SHA_256, "iterations": 4096},
                    {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 8192},
                ],
            }
        }
        everyone = admin.describe_user_scram_credentials()
        assert {"dave", "erin"} <= set(everyone)
        assert all(v["error"] is None for v in everyone.values())

        # A user created by the CLI is seen by the admin API, and deleted through it.
        created = pafka(
            scram_cluster.zk_connect, "create", "frank", "--password-stdin", stdin="f\n"
        )
        assert created.returncode == 0, created.stderr
        assert admin.describe_user_scram_credentials(["frank"])["frank"]["error"] is None
        gone = admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("frank", "SCRAM-SHA-512")]
        )
        assert gone == {"frank": None}
        assert user_node(zk, "frank")["config"] == {}
        missing = admin.describe_user_scram_credentials(["frank"])["frank"]["error"]
        assert "does not exist" in missing
    finally:
        admin.close()


def _alter(cluster: ClusterHandle, deletions: list[Any], upsertions: list[Any]) -> dict[str, Any]:
    R = AlterUserScramCredentialsRequest[0]
    request = R(
        deletions=[R.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions],
        upsertions=[
            R.ScramCredentialUpsertion(
                name=n, mechanism=m, iterations=i, salt=b"salt", salted_password=b"x" * 32
            )
            for n, m, i in upsertions
        ],
    )
    response = request_once(
        cluster.broker_address(cluster.broker_ids()[0]),
        request,
        AlterUserScramCredentialsResponse,
        0,
    )
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def test_alter_errors_as_kafka(scram_cluster: ClusterHandle) -> None:
    zk = scram_cluster.zk
    answers = _alter(
        scram_cluster,
        deletions=[("gina", 1), ("hank", 0), ("", 1)],
        upsertions=[("ivan", 1, 1000), ("judy", 2, 20000), ("kim", 2, 4096), ("kim", 2, 4096)],
    )
    assert answers == {
        "gina": (RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "hank": (UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "ivan": (UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "judy": (UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "kim": (
            DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
    }
    for user in ("gina", "hank", "ivan", "judy", "kim"):
        assert not zk.exists(f"/config/users/{user}")
    # One user's refusal does not hold back another's change.
    assert _alter(scram_cluster, [("gina", 1)], [("lee", 1, 4096)]) == {
        "gina": (RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "lee": (0, None),
    }
    assert "SCRAM-SHA-256" in user_node(zk, "lee")["config"]


def test_describe_errors_as_kafka(scram_cluster: ClusterHandle) -> None:
    _alter(scram_cluster, [], [("mona", 2, 4096)])
    R = DescribeUserScramCredentialsRequest[0]
    request = R(users=[R.UserName(name=n) for n in ("mona", "nobody", "", "dup", "dup")])
    response = request_once(
        scram_cluster.broker_address(scram_cluster.broker_ids()[0]),
        request,
        DescribeUserScramCredentialsResponse,
        0,
    )
    assert response.error_code == 0
    got = {r.user: (r.error_code, r.error_message, r.credential_infos) for r in response.results}
    assert [r.user for r in response.results] == ["mona", "nobody", "", "dup"]
    mona = got["mona"]
    assert mona[:2] == (0, None)
    assert [(c.mechanism, c.iterations) for c in mona[2]] == [(2, 4096)]
    assert got["nobody"][:2] == (
        RESOURCE_NOT_FOUND,
        "Attempt to describe a user credential that does not exist: nobody",
    )
    assert got[""][:2] == (RESOURCE_NOT_FOUND, "Username must not be empty")
    assert got["dup"][0] == DUPLICATE_RESOURCE


def test_confluent_kafka_admin_client(scram_cluster: ClusterHandle) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.admin import ScramMechanism as Mechanism

    admin = AdminClient({"bootstrap.servers": scram_cluster.bootstrap})
    info = ScramCredentialInfo(Mechanism.SCRAM_SHA_256, 10000)
    upsert = UserScramCredentialUpsertion("olga", info, b"olga-pw", b"olga-salt")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        assert future.result(timeout=30) is None
    config = user_node(scram_cluster.zk, "olga")["config"]
    credential = ScramCredential.parse(config["SCRAM-SHA-256"])
    assert credential.salt == b"olga-salt" and credential.iterations == 10000
    assert check_password("olga", "olga-pw", config)
    futures: Any = admin.describe_user_scram_credentials(["olga"])  # a future per user
    described = futures["olga"].result(timeout=30)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(Mechanism.SCRAM_SHA_256, 10000)]


def test_concurrent_changes_of_one_user_all_land(scram_cluster: ClusterHandle) -> None:
    """Writers racing on one user's config: each write is version-checked and retried, so no
    change is lost, and each lands with its own notification."""
    from concurrent.futures import ThreadPoolExecutor

    from pafka.admin import scram_users

    before = changes(scram_cluster.zk)
    writers = 6

    def write(i: int) -> None:
        client = KazooClient(hosts=scram_cluster.zk_connect)
        client.start(timeout=15)
        try:
            credential = ScramCredential.from_password("SCRAM-SHA-256", f"pw{i}")
            change = scram_users.combined(
                [scram_users.upsert("SCRAM-SHA-256", credential), lambda c: {**c, f"k{i}": "1"}]
            )
            scram_users.alter_user(client, "racer", change)
        finally:
            client.stop()
            client.close()

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))
    config = user_node(scram_cluster.zk, "racer")["config"]
    assert {f"k{i}" for i in range(writers)} <= set(config)
    assert (
        new_changes(scram_cluster.zk, before)
        == [{"version": 2, "entity_path": "users/racer"}] * writers
    )
