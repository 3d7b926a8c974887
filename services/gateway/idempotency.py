"""Produce requests carrying an ``Idempotency-Key``: written once, however often retried.

The outcome of such a request is kept in ZooKeeper under
``GatewayZNodes.idempotency_path(key)``, so a retry reaching any gateway replica finds it::

    {"version": 1, "state": "pending" | "partial" | "done", "request": sha256 of the request,
     "created_ms": first attempt, "updated_ms": last change, "response": produce response}

* The first request *creates* the node as ``pending`` before writing anything; ZooKeeper lets
  one creator win, so of two concurrent duplicates only one writes, the other is told 409.
* ``done``: every record was acknowledged; a retry gets the stored response again (200).
* ``partial``: some records failed; a retry takes the node back to ``pending`` (a conditional
  write, again one winner) and writes only the records not yet acknowledged.
* A ``pending`` node older than :func:`stale_after_ms` belongs to a gateway that died
  mid-request; a retry may take it over. What that gateway wrote but never recorded may then be
  written again: the only case where a key does not prevent a duplicate.
* The same key with a different request (body, path, format or acks) is refused (409).

Keys expire ``RETENTION_MS`` after their first use. Each gateway sweeps at most every
``SWEEP_INTERVAL_S``, examining at most ``SWEEP_BATCH`` keys from where its last sweep stopped,
so the cost per sweep stays bounded however many keys are kept. (The listing itself is one
``get_children`` of the root, which ZooKeeper's default 1 MiB packet limit caps at roughly
15,000 live keys of 64 characters; keys live a day, so that is the sustained rate it allows.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from pafka.errors import (
    PafkaError,
    RestError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
)
from pafka.zk.client import ZkClient
from pafka.zk.znodes import GatewayZNodes

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
VERSION = 1
RETENTION_MS = 24 * 3600 * 1000
SWEEP_INTERVAL_S = 60.0
SWEEP_BATCH = 500
KEY_PATTERN = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")

INVALID_KEY = 40002
KEY_REUSED = 40904
IN_PROGRESS = 40905
UNAVAILABLE = 50101

PENDING, PARTIAL, DONE = "pending", "partial", "done"


@dataclass(frozen=True)
class Outcome:
    """What a request with a key left behind (``response`` is a produce response body)."""

    state: str
    request: str
    created_ms: int
    updated_ms: int
    response: dict[str, Any] | None = None

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": VERSION,
                "state": self.state,
                "request": self.request,
                "created_ms": self.created_ms,
                "updated_ms": self.updated_ms,
                "response": self.response,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> Outcome:
        payload = json.loads(data)
        if payload.get("version") != VERSION or payload.get("state") not in (
            PENDING,
            PARTIAL,
            DONE,
        ):
            raise ValueError(f"unknown idempotency record {payload!r:.200}")
        return cls(
            state=payload["state"],
            request=str(payload["request"]),
            created_ms=int(payload["created_ms"]),
            updated_ms=int(payload["updated_ms"]),
            response=payload.get("response"),
        )


def check_key(key: str) -> str:
    if not KEY_PATTERN.fullmatch(key) or key in (".", ".."):
        raise RestError(
            INVALID_KEY,
            f"{HEADER} must be 1 to 128 characters of letters, digits, '_', '-', '.' or ':'",
        )
    return key


def fingerprint(*parts: str | bytes) -> str:
    """A digest of everything that makes two requests the same request."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def stale_after_ms(request_timeout_ms: int) -> int:
    """How long a pending request may take before its gateway is presumed dead."""
    return 2 * request_timeout_ms + 10_000


@dataclass(frozen=True)
class Claim:
    """The right to write for a key: ``previous`` is the response of an earlier, partial try."""

    key: str
    request: str
    created_ms: int
    version: int
    previous: dict[str, Any] | None


RECREATE, TAKE_OVER = "recreate", "take over"


def decide(
    existing: Outcome | None, request: str, now_ms: int, stale_ms: int
) -> dict[str, Any] | str:
    """What to do about a key's stored outcome (pure): the response to replay (a dict),
    ``RECREATE`` (nothing usable is stored: expired or unreadable), ``TAKE_OVER`` (a partial or
    abandoned attempt), or a refusal raised as :class:`RestError`."""
    if existing is None or now_ms - existing.created_ms > RETENTION_MS:
        return RECREATE
    if existing.request != request:
        raise RestError(KEY_REUSED, f"this {HEADER} was used for a different request")
    if existing.state == DONE and existing.response is not None:
        return existing.response
    if existing.state == PENDING and now_ms - existing.updated_ms <= stale_ms:
        raise RestError(IN_PROGRESS, f"a request with this {HEADER} is still in progress")
    return TAKE_OVER


class IdempotencyStore:
    def __init__(self, zk: ZkClient | None, request_timeout_ms: int) -> None:
        self.zk = zk
        self.stale_ms = stale_after_ms(request_timeout_ms)

    def _zk(self) -> ZkClient:
        if self.zk is None:
            raise RestError(UNAVAILABLE, f"{HEADER} needs a gateway connected to ZooKeeper")
        return self.zk

    async def claim(self, key: str, request: str) -> Claim | dict[str, Any]:
        """Claim ``key`` for ``request``, or the stored response when it is already done."""
        zk = self._zk()
        path = GatewayZNodes.idempotency_path(key)
        for _ in range(5):
            now = _now_ms()
            pending = Outcome(PENDING, request, now, now).encode()
            try:
                await zk.run(partial(zk.kazoo.create, path, pending, makepath=True))
                return Claim(key, request, now, 0, None)
            except ZkNodeExistsError:
                pass
            got = await zk.get(path)
            if got is None:
                continue  # swept between our two calls
            data, stat = got
            existing = _decode(data)
            verdict = decide(existing, request, now, self.stale_ms)
            if isinstance(verdict, dict):
                return verdict
            try:
                if verdict == RECREATE or existing is None:
                    # Deleted, not overwritten: the sweep goes by the node's creation time.
                    await zk.run(zk.kazoo.delete, path, stat.version)
                    continue
                taken = Outcome(PENDING, request, existing.created_ms, now, existing.response)
                stat = await zk.run(zk.kazoo.set, path, taken.encode(), stat.version)
            except (ZkBadVersionError, ZkNoNodeError):
                continue  # another request got there first; look again
            return Claim(key, request, existing.created_ms, stat.version, existing.response)
        raise RestError(IN_PROGRESS, f"a request with this {HEADER} is still in progress")

    async def finish(self, claim: Claim, response: dict[str, Any], complete: bool) -> None:
        """Record the outcome; a record that failed stays claimable by the next retry."""
        zk = self._zk()
        outcome = Outcome(
            DONE if complete else PARTIAL, claim.request, claim.created_ms, _now_ms(), response
        )
        try:
            path = GatewayZNodes.idempotency_path(claim.key)
            await zk.run(zk.kazoo.set, path, outcome.encode(), claim.version)
        except PafkaError as exc:
            # The records are written; only the replay is lost, and the caller still gets them.
            log.warning("could not record the outcome of %s %s: %s", HEADER, claim.key, exc)


@dataclass
class Sweeper:
    """Deletes expired keys a bounded batch at a time, at most once per interval."""

    last_s: float = 0.0
    cursor: str = ""
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def maybe_start(self, zk: ZkClient | None) -> None:
        now = time.monotonic()
        if zk is None or now - self.last_s < SWEEP_INTERVAL_S:
            return
        if self.task is not None and not self.task.done():
            return
        self.last_s = now
        self.task = asyncio.create_task(self._run(zk))

    async def _run(self, zk: ZkClient) -> None:
        try:
            self.cursor = await zk.run(sweep_expired, zk, self.cursor, _now_ms())
        except PafkaError as exc:
            log.info("idempotency key sweep failed: %s", exc)


def sweep_expired(zk: ZkClient, cursor: str, now_ms: int) -> str:
    """Delete expired keys among the next ``SWEEP_BATCH`` after ``cursor`` (runs in a thread);
    returns where the next sweep starts."""
    try:
        names = sorted(zk.kazoo.get_children(GatewayZNodes.idempotency_root()))
    except NoNodeError:
        return ""
    batch = [n for n in names if n > cursor][:SWEEP_BATCH]
    for name in batch:
        path = GatewayZNodes.idempotency_path(name)
        stat = zk.kazoo.exists(path)
        if stat is not None and now_ms - stat.ctime > RETENTION_MS:
            with contextlib.suppress(NoNodeError, BadVersionError):  # used or deleted meanwhile
                zk.kazoo.delete(path, version=stat.version)
    return batch[-1] if len(batch) == SWEEP_BATCH else ""


def _decode(data: bytes) -> Outcome | None:
    try:
        return Outcome.decode(data)
    except (ValueError, KeyError, TypeError):
        return None  # unreadable (another version wrote it?): treated as absent


def _now_ms() -> int:
    return int(time.time() * 1000)
