"""Which cluster a client command talks to: --bootstrap-server, --zookeeper, or the local one."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from pafka.cli.cluster import default_data_dir
from pafka.cli.login_check import check_login
from pafka.envconfig import Env
from pafka.errors import ConfigError, CoordinationError
from pafka.local.cluster import read_state
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity
from pafka.security.command_config import read_command_config
from pafka.zk.acl_kazoo import kazoo_client
from pafka.zk.security import ZkSecurity, read_zk_security

ZK_TIMEOUT_S = 10
# The command line's own settings: ZooKeeper credentials for --zookeeper (ZK_AUTH, ZK_AUTH_FILE,
# ZK_SET_ACL), as the services take theirs.
PREFIX = "PAFKA_CLI_"


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--bootstrap-server", help="HOST:PORT[,HOST:PORT...] of brokers")
    group.add_argument("--zookeeper", help="HOST:PORT[/chroot] of the cluster's ZooKeeper")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties of a secured cluster (security.protocol, ssl.*, sasl.*), "
        "as Kafka's tools take them",
    )


@dataclass(frozen=True)
class Target:
    bootstrap: str | None
    zookeeper: str | None
    # How Kafka connections to the cluster are secured (--command-config).
    security: ClientSecurity = PLAINTEXT_CLIENT


def resolve(args: argparse.Namespace) -> Target:
    config = getattr(args, "command_config", None)
    security = read_command_config(config) if config else PLAINTEXT_CLIENT
    if args.bootstrap_server or args.zookeeper:
        return Target(args.bootstrap_server, args.zookeeper, security)
    state = read_state(default_data_dir())
    if state is None:
        raise ConfigError(
            "no --bootstrap-server or --zookeeper given and no local cluster found "
            f"(looked in {default_data_dir()}); start one with `pafka cluster up`"
        )
    endpoints = state["endpoints"]
    assert isinstance(endpoints, dict)
    return Target(str(endpoints["bootstrap_servers"]), str(state["zookeeper"]), security)


def zk_security() -> ZkSecurity:
    return read_zk_security(Env.of(PREFIX))


@contextmanager
def zookeeper(connect: str) -> Iterator[KazooClient]:
    client = kazoo_client(connect, zk_security())
    try:
        client.start(timeout=ZK_TIMEOUT_S)
    except Exception as exc:
        raise CoordinationError(f"cannot reach ZooKeeper at {connect}: {exc}") from exc
    try:
        yield client
    except NoAuthError:
        raise CoordinationError(
            f"ZooKeeper refused the change (NoAuth): its znodes are writable only by the "
            f"cluster's identity; give it in {PREFIX}ZK_AUTH or {PREFIX}ZK_AUTH_FILE"
        ) from None
    finally:
        client.stop()
        client.close()


def bootstrap_servers(target: Target) -> str:
    """Brokers to connect to; with only ZooKeeper, discovered from ``/brokers/ids``."""
    if target.bootstrap:
        return target.bootstrap
    from pafka.admin.topics import live_brokers

    assert target.zookeeper is not None
    with zookeeper(target.zookeeper) as zk:
        brokers = live_brokers(zk)
    endpoints = [e for b in brokers if (e := target.security.endpoint(b.listeners)) is not None]
    if not endpoints:
        raise CoordinationError(
            f"no registered broker has a {target.security.listener or target.security.protocol} "
            "listener"
        )
    return ",".join(f"{e.host}:{e.port}" for e in endpoints)


def kafka_python_options(target: Target) -> dict[str, Any]:
    """kafka-python's connection options for the target: its brokers and security."""
    security = target.security
    servers = bootstrap_servers(target)
    check_login(servers, security)
    options: dict[str, Any] = {
        "bootstrap_servers": servers,
        "security_protocol": security.protocol.value,
    }
    if security.protocol.uses_tls:
        options.update(
            ssl_cafile=security.tls.cafile,
            ssl_certfile=security.tls.certfile,
            ssl_keyfile=security.tls.keyfile,
            ssl_password=security.tls.key_password,
            ssl_check_hostname=security.check_hostname,
        )
    if security.protocol.uses_sasl:
        options.update(
            sasl_mechanism=security.sasl_mechanism,
            sasl_plain_username=security.sasl_username,
            sasl_plain_password=security.sasl_password,
        )
    return options


def admin_client(target: Target) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(**kafka_python_options(target), client_id="pafka-cli")
