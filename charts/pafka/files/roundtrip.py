"""`helm test` for pafka: through the gateway, create a topic, produce a record, read it back.

Run by the chart's test pod with GATEWAY_URL, TOPIC and REPLICATION_FACTOR set, TOKEN_FILE
when the gateway requires a bearer token, and for an https:// gateway CA_FILE (the CA its
certificate is checked against; the system's when unset) and, when it wants a client certificate,
CERT_FILE, KEY_FILE and KEY_PASSWORD; exits non-zero with the reason when any step fails.
Standard library only (it runs in the pafka image).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

JSON_V2 = "application/vnd.kafka.json.v2+json"
DEADLINE_S = 120.0


def read_token() -> str | None:
    path = os.environ.get("TOKEN_FILE")
    if not path:
        return None
    with open(path) as f:
        return f.read().strip()


def tls_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=os.environ.get("CA_FILE") or None)
    if os.environ.get("CERT_FILE"):
        ctx.load_cert_chain(
            os.environ["CERT_FILE"], os.environ.get("KEY_FILE"), os.environ.get("KEY_PASSWORD")
        )
    return ctx


TOKEN = read_token()
TLS = tls_context()


def call(method: str, url: str, body: Any = None, content_type: str = "application/json") -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", f"{JSON_V2}, application/json")
    if TOKEN:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    if data is not None:
        request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, timeout=30, context=TLS) as response:
        return json.loads(response.read() or b"null")


def retrying(what: str, step: Any) -> Any:
    """Retry a step until it succeeds or the deadline passes (leaders are still being elected)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            return step()
        except (urllib.error.URLError, OSError, KeyError, ValueError) as exc:
            if time.monotonic() > deadline:
                sys.exit(f"{what} failed: {exc}")
            print(f"{what}: {exc}; retrying", flush=True)
            time.sleep(2)


def create_topic(gateway: str, topic: str, replication_factor: int) -> None:
    cluster = call("GET", f"{gateway}/v3/clusters")["data"][0]["cluster_id"]
    body = {"topic_name": topic, "partitions_count": 1, "replication_factor": replication_factor}
    try:
        call("POST", f"{gateway}/v3/clusters/{cluster}/topics", body)
    except urllib.error.HTTPError as exc:
        if exc.code != 409:  # 409: it exists from an earlier test run
            raise


def main() -> None:
    gateway, topic = os.environ["GATEWAY_URL"], os.environ["TOPIC"]
    replication_factor = int(os.environ.get("REPLICATION_FACTOR", "1"))
    marker = uuid.uuid4().hex
    retrying("create topic", lambda: create_topic(gateway, topic, replication_factor))
    produced = retrying(
        "produce",
        lambda: call(
            "POST", f"{gateway}/topics/{topic}", {"records": [{"value": {"m": marker}}]}, JSON_V2
        ),
    )
    where = produced["offsets"][0]
    partition, offset = where["partition"], where["offset"]
    url = f"{gateway}/topics/{topic}/partitions/{partition}/records"
    page = retrying(
        "consume", lambda: call("GET", f"{url}?offset={offset}&max_records=1&timeout_ms=5000")
    )
    if marker not in json.dumps(page):
        sys.exit(f"record {marker} not read back at {partition}:{offset}: {page}")
    print(f"ok: produced and read back {topic}-{partition}@{offset} through {gateway}")


if __name__ == "__main__":
    main()
