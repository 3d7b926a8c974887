"""The chart's SCRAM users and ACLs made for real: the services' init containers and the
users-and-ACLs Job's containers, each command as rendered, in a process against a real ZooKeeper
(the ensemble's address and the Secrets' mount paths swapped for the test's), then the
credentials and ACLs read back from ZooKeeper."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from pafka.admin.acls import list_acls
from pafka.admin.client_quotas import describe_quotas
from pafka.admin.scram_users import scram_users
from pafka.security.acls import (
    ANY_BINDING,
    CLUSTER_NAME,
    AccessControlEntry,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal
from pafka.security.quotas import DEFAULT
from tests.unit.test_chart_security_listeners import (
    ACLS,
    FULL,
    QUOTAS,
    SECURED,
    USERS,
    ZK_POD_DOMAIN,
    mounted_files,
    pod_env,
    render,
)

RENDERED_ZK = ",".join(f"{FULL}-zookeeper-{i}.{ZK_POD_DOMAIN}:2181" for i in range(3))
PASSWORDS = {"alice": "alice-pw", "bob.smith": "bob-pw"}


def _job() -> dict[str, Any]:
    # Without ZooKeeper credentials: the test's ZooKeeper has no digest users.
    values = {**SECURED, "zookeeper": {}}
    (job,) = [d for d in render(values) if d["kind"] == "Job"]
    return job


def _run(c: dict[str, Any], spec: dict[str, Any], zk_connect: str, tmp_path: Path) -> None:
    """The container's command with its Secret files written under tmp_path."""
    local = tmp_path / c["name"]
    swaps = {RENDERED_ZK: zk_connect}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in c["volumeMounts"]:
        secret = volumes[mount["name"]].get("secret")
        if not secret:
            continue
        directory = local / mount["name"]
        directory.mkdir(parents=True)
        swaps[mount["mountPath"]] = str(directory)
        if secret["secretName"] == "pafka-users":
            for user, password in PASSWORDS.items():
                (directory / user).write_text(password + "\n")
        for item in secret.get("items", []):
            (directory / item["path"]).write_text(f"pw-{secret['secretName']}\n")
    assert set(mounted_files(spec, c).values()) <= {(s, "password") for s in USERS}, (
        "a service user's Job container sees its password only"
    )

    def swapped(text: str) -> str:
        for old, new in swaps.items():
            text = text.replace(old, new)
        return text

    env = {k: swapped(v) for k, v in pod_env(c.get("env", []), {}, USERS).items()}
    # The kubelet expands $(VAR) in args; the shell loop reads its variables itself.
    argv = [swapped(a.replace("$(SASL_USERNAME)", env.get("SASL_USERNAME", ""))) for a in c["args"]]
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    done = subprocess.run(
        [*c["command"], *argv],
        env={**os.environ, **env, "PATH": path},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (c["name"], done.stdout, done.stderr)


def test_the_job_creates_users_and_acls_in_zookeeper(zk_connect: str, tmp_path: Path) -> None:
    docs = render({**SECURED, "zookeeper": {}})
    for doc in docs:
        # ZooKeeper's init container copies the ZooKeeper image's files: no pafka command.
        if (
            doc["kind"] in ("StatefulSet", "Deployment")
            and "zookeeper" not in doc["metadata"]["name"]
        ):
            # The services' own users, as their pods' init containers create them.
            spec = doc["spec"]["template"]["spec"]
            for c in spec.get("initContainers", []):
                _run(c, spec, zk_connect, tmp_path / doc["metadata"]["name"])
    job = _job()
    spec = job["spec"]["template"]["spec"]
    for c in spec["containers"]:
        _run(c, spec, zk_connect, tmp_path)
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=10)
    try:
        users = scram_users(zk)
        stored = list_acls(zk, ANY_BINDING)
        quotas = describe_quotas(zk, [], strict=False)
    finally:
        zk.stop()
        zk.close()
    assert set(users) == {*USERS.values(), *PASSWORDS}
    for config in users.values():
        assert {"SCRAM-SHA-512", "SCRAM-SHA-256"} <= config.keys()

    def entry(principal: str, op: str, permission: str = "ALLOW", host: str = "*") -> Any:
        kind, _, name = principal.partition(":")
        return AccessControlEntry(
            KafkaPrincipal(kind, name),
            host,
            Operation.parse(op),
            PermissionType.parse(permission),
        )

    literal, prefixed = PatternType.LITERAL, PatternType.PREFIXED
    assert stored == {
        ResourcePattern(ResourceType.TOPIC, "orders", literal): frozenset(
            {entry("User:alice", "Read"), entry("User:alice", "Describe")}
        ),
        ResourcePattern(ResourceType.GROUP, "orders-", prefixed): frozenset(
            {entry("User:alice", "Read")}
        ),
        ResourcePattern(ResourceType.TOPIC, "audit", literal): frozenset(
            {entry("User:bob", "Write", "DENY", "10.0.0.7")}
        ),
        ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, literal): frozenset(
            {entry("User:ops", "Alter")}
        ),
        ResourcePattern(ResourceType.TRANSACTIONAL_ID, "app-tx", literal): frozenset(
            {entry("User:app", "Write")}
        ),
    }
    assert len(ACLS) == len(stored)
    assert quotas == {
        ("alice", None): {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0},
        ("alice", DEFAULT): {"request_percentage": 25.0},
        (None, "reports"): {"consumer_byte_rate": 524288.0},
        (DEFAULT, None): {"producer_byte_rate": 10485760.0},
    }
    assert len(QUOTAS) == len(quotas)
