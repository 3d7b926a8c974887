"""``pafka cluster up|status|down|stop|start|restart``: a local cluster of real processes."""

from __future__ import annotations

import argparse
import json
import os
import secrets
from pathlib import Path
from typing import Any

from pafka.errors import ConfigError
from pafka.local.cluster import ZOOKEEPER, LocalCluster, attach, read_state


def default_data_dir() -> Path:
    return Path(os.environ.get("PAFKA_HOME", ".pafka"))


def register(sub: Any) -> None:
    parser = sub.add_parser("cluster", help="start, inspect or stop a local cluster")
    verbs = parser.add_subparsers(dest="verb", required=True)
    up = verbs.add_parser("up", help="start a local cluster in the background")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--controllers", type=int, default=2)
    up.add_argument("--gateways", type=int, default=1, help="REST gateways to start")
    up.add_argument("--data-dir", type=Path, default=None)
    up.add_argument("--zookeeper", help="use this ZooKeeper instead of starting one")
    up.add_argument(
        "--secure",
        action="store_true",
        help="ZooKeeper digest authentication with ACLs, and a control-API secret "
        "(both generated, kept in DATA_DIR/secrets)",
    )
    up.set_defaults(handler=cluster_up)
    status = verbs.add_parser("status", help="show the local cluster's processes")
    status.add_argument("--data-dir", type=Path, default=None)
    status.set_defaults(handler=cluster_status)
    down = verbs.add_parser("down", help="stop the local cluster")
    down.add_argument("--data-dir", type=Path, default=None)
    down.set_defaults(handler=cluster_down)
    for verb, handler, what in (
        ("stop", service_stop, "stop one service (SIGTERM, SIGKILL after --grace-s)"),
        ("start", service_start, "start a stopped service again on its ports"),
        ("restart", service_restart, "stop one service, start it and wait until it is ready"),
    ):
        one = verbs.add_parser(verb, help=what)
        one.add_argument("service", help="broker-N, controller-N, gateway-N or zookeeper")
        one.add_argument("--data-dir", type=Path, default=None)
        one.add_argument("--grace-s", type=float, default=20.0, help="SIGTERM to SIGKILL")
        one.add_argument("--timeout-s", type=float, default=60.0, help="wait for readiness")
        one.set_defaults(handler=handler)


def print_endpoints(endpoints: dict[str, Any]) -> None:
    print(f"bootstrap servers: {endpoints['bootstrap_servers']}")
    print(f"zookeeper:         {endpoints['zookeeper']}")
    for broker_id, urls in endpoints["brokers"].items():
        print(f"broker {broker_id}:          {urls['kafka']}  metrics {urls['metrics']}")
    for controller_id, urls in endpoints["controllers"].items():
        print(f"controller {controller_id}:      {urls['status']}  metrics {urls['metrics']}")
    for gateway_id, url in endpoints.get("gateways", {}).items():
        print(f"gateway {gateway_id}:         {url}  docs {url}/docs  metrics {url}/metrics")


def cluster_up(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or default_data_dir()
    if args.brokers < 1 or args.controllers < 1:
        raise ConfigError("a cluster needs at least one broker and one controller")
    existing = attach(data_dir)
    if existing is not None and (
        existing.zookeeper_alive() or any(s.alive() for s in existing.services.values())
    ):
        print(f"a cluster is already running from {data_dir}:")
        print_endpoints(existing.endpoints())
        return 0
    cluster = LocalCluster(
        data_dir,
        brokers=args.brokers,
        controllers=args.controllers,
        zookeeper=args.zookeeper,
        gateways=args.gateways,
        zk_auth=f"digest:pafka:{secrets.token_urlsafe(24)}" if args.secure else None,
        control_secret=secrets.token_urlsafe(32) if args.secure else None,
    )
    cluster.start(detach=True)
    print(f"pafka cluster is up (state in {data_dir / 'cluster.json'})")
    if args.secure:
        zk_auth = data_dir.resolve() / "secrets" / "zk-auth"
        print(f"ZooKeeper credentials for --zookeeper: export PAFKA_CLI_ZK_AUTH_FILE={zk_auth}")
    print_endpoints(cluster.endpoints())
    return 0


def cluster_status(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or default_data_dir()
    cluster = attach(data_dir)
    state = read_state(data_dir)
    if cluster is None or state is None:
        print(f"no cluster recorded in {data_dir}")
        return 1
    healthy = True
    if cluster.owns_zookeeper:
        alive = cluster.zookeeper_alive()
        healthy &= alive
        status = "ready" if alive else "stopped"
        print(
            f"{ZOOKEEPER:14s} pid {cluster.zookeeper_pid or 0:<8d} {status:20s} "
            f"{cluster.zookeeper_connect}"
        )
    for service in cluster.services.values():
        alive, ready = service.alive(), service.ready()
        healthy &= alive and ready
        status = "ready" if ready else ("running, not ready" if alive else "stopped")
        print(f"{service.name:14s} pid {service.pid:<8d} {status:20s} {service.http_url}")
    endpoints = state["endpoints"]
    assert isinstance(endpoints, dict)
    print(json.dumps({"bootstrap_servers": endpoints["bootstrap_servers"]}))
    return 0 if healthy else 1


def cluster_down(args: argparse.Namespace) -> int:
    data_dir = args.data_dir or default_data_dir()
    cluster = attach(data_dir)
    if cluster is None:
        print(f"no cluster recorded in {data_dir}")
        return 0
    cluster.stop()
    print("pafka cluster stopped")
    return 0


def _running(args: argparse.Namespace) -> LocalCluster:
    data_dir = args.data_dir or default_data_dir()
    cluster = attach(data_dir)
    if cluster is None:
        raise ConfigError(f"no cluster is running from {data_dir} (start one: pafka cluster up)")
    starts = args.handler is not service_stop and args.service != ZOOKEEPER
    if starts and cluster.owns_zookeeper and not cluster.zookeeper_alive():
        raise ConfigError(
            f"the cluster's ZooKeeper is stopped: pafka cluster start {ZOOKEEPER} first"
        )
    return cluster


def service_stop(args: argparse.Namespace) -> int:
    cluster = _running(args)
    cluster.stop_service(args.service, args.grace_s)
    print(f"{args.service} stopped")
    return 0


def service_start(args: argparse.Namespace) -> int:
    cluster = _running(args)
    cluster.start_service(args.service, args.timeout_s)
    print(f"{args.service} started")
    return 0


def service_restart(args: argparse.Namespace) -> int:
    cluster = _running(args)
    cluster.restart(args.service, args.timeout_s, grace_s=args.grace_s)
    print(f"{args.service} restarted and ready")
    return 0
