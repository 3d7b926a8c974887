"""The one bridge between kazoo's threads and asyncio.

kazoo runs its own threads: its connection thread calls session-state listeners and its
event thread runs watch callbacks. Neither may block, so here they only hand typed events to
the event loop with ``call_soon_threadsafe``; all pafka logic then runs on the loop. Blocking
kazoo calls run in worker threads through :meth:`ZkClient.run`, which also maps kazoo's
exceptions into pafka's tree, once.

Session semantics: ``SUSPENDED`` (connection lost, session may survive) and ``LOST`` (session
expired: our ephemerals are gone) are delivered to listeners, who decide what to stop doing.
Ephemerals registered through :meth:`register_ephemeral` are re-created when a new session
connects after ``LOST``.

Deadlines: kazoo notices a silent server by its own read timeout (two thirds of the negotiated
session timeout, pinged at half that), failing the requests in flight with ConnectionLoss. But
a request made while it reconnects is queued and sent once connected, however long that takes,
so :meth:`ZkClient.run` gives up (``CoordinationError``) once the connection has been down for
a session timeout during the call. A write given up on this way may still be applied later,
as with any ZooKeeper ConnectionLoss: callers already treat its outcome as unknown. The
blocking calls run on this client's own threads, so ones left waiting for a reconnect never
starve the loop's default executor.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import enum
import functools
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from kazoo.client import KazooClient, KazooState, _prefix_root
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.retry import KazooRetry

from pafka.errors import (
    BrokerIdTakenError,
    CoordinationError,
    PafkaError,
    ZkBadVersionError,
    ZkNodeExistsError,
    ZkNoNodeError,
)
from pafka.zk import znodes
from pafka.zk.acl_kazoo import kazoo_client
from pafka.zk.multi_read import MultiRead
from pafka.zk.security import ZkSecurity, describe_acls, may_write

log = logging.getLogger(__name__)

T = TypeVar("T")

# Requests in flight at once in a pipelined read: enough to hide the round trip, few enough
# that kazoo's pending-reply bookkeeping stays small however many znodes are read.
PIPELINE_WINDOW = 2000
# Blocking kazoo calls at once per client; more wait for a thread (within their deadline).
ZK_THREADS = 16


class SessionEvent(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"


SessionListener = Callable[[SessionEvent], Awaitable[None]]


def map_kazoo_error(exc: BaseException) -> PafkaError:
    if isinstance(exc, PafkaError):
        return exc
    if isinstance(exc, NoNodeError):
        return ZkNoNodeError(str(exc) or "no such znode")
    if isinstance(exc, NodeExistsError):
        return ZkNodeExistsError(str(exc) or "znode exists")
    if isinstance(exc, BadVersionError):
        return ZkBadVersionError(str(exc) or "znode version changed")
    if isinstance(exc, NoAuthError):
        return CoordinationError(
            "ZooKeeper refused the operation (NoAuth): the znode's ACL does not allow this "
            "client's identity; check the ZooKeeper credentials (PAFKA_<SERVICE>_ZK_AUTH, "
            "PAFKA_CLI_ZK_AUTH for the command line)"
        )
    return CoordinationError(f"ZooKeeper error: {type(exc).__name__}: {exc}")


def check_transaction(results: list[Any]) -> None:
    """kazoo reports failed transaction operations as exception objects in the result list."""
    for result in results:
        if isinstance(result, BaseException) and type(result).__name__ != "RolledBackError":
            raise map_kazoo_error(result)


class ZkClient:
    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int,
        name: str,
        security: ZkSecurity | None = None,
    ) -> None:
        self.connect = connect
        self.name = name
        self.session_timeout_ms = session_timeout_ms
        self.security = security or ZkSecurity()
        self.retry = KazooRetry(max_tries=5, delay=0.1, backoff=2, max_delay=2)
        self.kazoo: KazooClient = kazoo_client(
            connect,
            self.security,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[SessionListener] = []
        self._ephemerals: dict[str, bytes] = {}
        self._session_lost = False
        self._tasks: set[asyncio.Task[None]] = set()
        # Monotonic time the connection went down (written by kazoo's thread), None while up.
        self._down_since: float | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=ZK_THREADS, thread_name_prefix=f"zk-{name}"
        )

    # -- life cycle ------------------------------------------------------------------------------

    async def start(self, timeout_s: float = 30.0) -> None:
        self._loop = asyncio.get_running_loop()
        self.kazoo.add_listener(self._on_state)
        try:
            await asyncio.to_thread(self.kazoo.start, timeout_s)
        except KazooTimeoutError:
            raise CoordinationError(
                f"{self.name}: cannot reach ZooKeeper at {self.connect} within {timeout_s:.0f}s"
            ) from None
        await self.run(check_write_access, self.kazoo, self.security, self.name)
        await self.run(ensure_roots, self.kazoo)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.to_thread(self._stop)
        # Stopping kazoo failed every queued request, so no thread is left waiting.
        self._executor.shutdown(wait=False)

    def _stop(self) -> None:
        try:
            self.kazoo.stop()
            self.kazoo.close()
        except KazooException:
            pass

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    @property
    def session_id(self) -> int | None:
        sid = self.kazoo.client_id
        return sid[0] if sid else None

    # -- kazoo thread → loop ---------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        event = {
            KazooState.CONNECTED: SessionEvent.CONNECTED,
            KazooState.SUSPENDED: SessionEvent.SUSPENDED,
            KazooState.LOST: SessionEvent.LOST,
        }[state]
        if event is SessionEvent.CONNECTED:
            self._down_since = None
        elif self._down_since is None:
            self._down_since = time.monotonic()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._dispatch_session, event)

    def _dispatch_session(self, event: SessionEvent) -> None:
        log.info("%s: ZooKeeper session %s", self.name, event.value)
        if event is SessionEvent.LOST:
            self._session_lost = True
        elif event is SessionEvent.CONNECTED and self._session_lost:
            self._session_lost = False
            self._spawn(self._reregister())
        for listener in self._listeners:
            self._spawn(listener(event))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: ZooKeeper callback failed", self.name, exc_info=task.exception())

    def _to_loop(self, calls: WatchCalls, call: Callable[[], Awaitable[None]]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(calls.offer, call)

    def watch_children(self, path: str, callback: Callable[[list[str]], Awaitable[None]]) -> None:
        """Call ``callback(children)`` on the loop now and whenever the children change; one
        call at a time, the latest children last (see :class:`WatchCalls`)."""
        calls = WatchCalls(self.name, path, self._spawn)

        def on_change(children: list[str] | None) -> None:
            current = sorted(children or [])
            self._to_loop(calls, lambda: callback(current))

        self.kazoo.ChildrenWatch(path, on_change, send_event=False)

    def watch_data(self, path: str, callback: Callable[[bytes | None], Awaitable[None]]) -> None:
        """Call ``callback(data)`` on the loop now and on every change, None when deleted; one
        call at a time, the latest data last (see :class:`WatchCalls`)."""
        calls = WatchCalls(self.name, path, self._spawn)

        def on_change(data: bytes | None, _stat: ZnodeStat | None) -> None:
            self._to_loop(calls, lambda: callback(data))

        self.kazoo.DataWatch(path, on_change)

    # -- blocking calls in threads ---------------------------------------------------------------

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, kazoo's errors mapped; :class:`CoordinationError`
        once the connection has been down for a session timeout during the call."""
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self._executor, functools.partial(fn, *args))
        except RuntimeError:  # the executor is shut down
            raise CoordinationError(f"{self.name}: the ZooKeeper client is closed") from None
        future.add_done_callback(_retrieve)  # given up on, its outcome must not be logged
        started = time.monotonic()
        limit_s = self.session_timeout_ms / 1000
        try:
            while True:
                give_up = give_up_at(started, self._down_since, limit_s)
                # While connected, no give-up can come sooner than a limit from now.
                wait_s = limit_s if give_up is None else give_up - time.monotonic()
                if wait_s > 0:
                    done, _ = await asyncio.wait({future}, timeout=wait_s)
                    if done:
                        return future.result()
                    continue
                raise CoordinationError(
                    f"{self.name}: ZooKeeper at {self.connect} unreachable for "
                    f"{limit_s:g}s (the session timeout)"
                )
        except (KazooException, KazooTimeoutError) as exc:
            raise map_kazoo_error(exc) from exc

    async def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        def read() -> tuple[bytes, ZnodeStat] | None:
            try:
                data, stat = self.retry(self.kazoo.get, path)
                return bytes(data), stat
            except NoNodeError:
                return None

        return await self.run(read)

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """Read many znodes pipelined (see :func:`get_many`)."""
        return await self.run(get_many, self.kazoo, paths)

    async def get_children(self, path: str) -> list[str]:
        def read() -> list[str]:
            try:
                return sorted(self.retry(self.kazoo.get_children, path))
            except NoNodeError:
                return []

        return await self.run(read)

    # -- ephemeral registrations -----------------------------------------------------------------

    async def register_ephemeral(self, path: str, data: bytes) -> None:
        """Create an ephemeral node that outlives session expiry (it is re-created).

        A node left by a previous session of the same owner (a crashed predecessor) disappears
        when that session expires, so we wait for that; a node held by a live, different
        owner fails fast with :class:`BrokerIdTakenError`.
        """
        await self.run(self._create_ephemeral, path, data)
        self._ephemerals[path] = data

    def _create_ephemeral(self, path: str, data: bytes) -> None:
        deadline = time.monotonic() + self.session_timeout_ms / 1000 * 1.5
        while True:
            try:
                self.kazoo.create(path, data, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                try:
                    existing, stat = self.kazoo.get(path)
                except NoNodeError:
                    continue
                if stat.ephemeralOwner == self.session_id:
                    return
                if not _same_endpoint(existing, data) or time.monotonic() > deadline:
                    raise BrokerIdTakenError(
                        f"{path} is already registered by a live process "
                        f"({_describe(existing)}); ids must be unique in the cluster"
                    ) from None
                time.sleep(0.2)

    async def _reregister(self) -> None:
        for path, data in list(self._ephemerals.items()):
            log.warning("%s: session expired; re-registering %s", self.name, path)
            try:
                await self.run(self._create_ephemeral, path, data)
            except PafkaError as exc:
                log.error("%s: could not re-register %s: %s", self.name, path, exc)


class WatchCalls:
    """One watch's callbacks, run on the loop one at a time.

    A callback that awaits (reading the znodes a change names) would otherwise overlap the
    next change's, and the slower, older one could finish last and apply a stale state. So a
    change that arrives while a callback runs waits, and a later change replaces it: the
    newest state is always applied last and intermediate ones may be skipped, just as a
    ZooKeeper watch itself skips changes made before it is re-armed. Every callback reads
    the full state it acts on, so skipping loses nothing. Used on the loop only.
    """

    def __init__(
        self, client_name: str, path: str, spawn: Callable[[Awaitable[None]], None]
    ) -> None:
        self._client_name = client_name
        self._path = path
        self._spawn = spawn
        self._waiting: Callable[[], Awaitable[None]] | None = None
        self._running = False

    def offer(self, call: Callable[[], Awaitable[None]]) -> None:
        self._waiting = call
        if not self._running:
            self._running = True
            self._spawn(self._drain())

    async def _drain(self) -> None:
        try:
            while self._waiting is not None:
                call, self._waiting = self._waiting, None
                try:
                    await call()
                except Exception:  # one failed change must not stop the watch's later ones
                    log.exception(
                        "%s: ZooKeeper watch callback on %s failed", self._client_name, self._path
                    )
        finally:
            self._running = False


def give_up_at(started: float, down_since: float | None, limit_s: float) -> float | None:
    """When a call begun at ``started`` stops waiting: a limit after the later of its start
    and the connection going down; None while the connection is up."""
    if down_since is None:
        return None
    return max(started, down_since) + limit_s


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _endpoint(data: bytes) -> tuple[Any, Any] | None:
    try:
        payload = json.loads(data)
        return payload.get("host"), payload.get("port")
    except (ValueError, AttributeError):
        return None


def _same_endpoint(a: bytes, b: bytes) -> bool:
    return _endpoint(a) == _endpoint(b)


def _describe(data: bytes) -> str:
    endpoint = _endpoint(data)
    return f"{endpoint[0]}:{endpoint[1]}" if endpoint and endpoint[0] else "unknown endpoint"


def _pipelined(
    start: Callable[[str], Any], paths: Sequence[str], window: int = PIPELINE_WINDOW
) -> list[Any]:
    """Issue one asynchronous request per path, at most ``window`` outstanding, and wait for
    them in order; a missing znode gives None, any other failure is raised (mapped by the
    caller's :meth:`ZkClient.run`)."""
    results: list[Any] = []
    for begin in range(0, len(paths), window):
        pending = [start(path) for path in paths[begin : begin + window]]
        for request in pending:
            try:
                results.append(request.get())
            except NoNodeError:
                results.append(None)
    return results


def get_many(zk: KazooClient, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
    """Data and stat of each path, in order, None where the znode does not exist: every read
    is sent before the first answer is awaited, so N reads cost about one round trip plus
    N times the per-request work, not N round trips. Blocking: call it in a worker thread."""
    return [None if r is None else (bytes(r[0]), r[1]) for r in _pipelined(zk.get_async, paths)]


# Reads per multiRead request: with znodes of at most ~1 KB (partition states are ~100 bytes
# plus an 80-byte stat) the answer stays well under ZooKeeper's 1 MB jute.maxbuffer.
MULTI_READ_SIZE = 500


def get_small_many(zk: KazooClient, paths: Sequence[str]) -> list[tuple[bytes, ZnodeStat] | None]:
    """Like :func:`get_many` for znodes of bounded, small size (partition states): the reads
    go in multiRead requests of :data:`MULTI_READ_SIZE`, all in flight at once (ZooKeeper
    3.6+; an older server's refusal falls back to one request per read). Blocking."""
    pending = []
    for begin in range(0, len(paths), MULTI_READ_SIZE):
        chunk = [_prefix_root(zk.chroot, p) for p in paths[begin : begin + MULTI_READ_SIZE]]
        request = zk.handler.async_result()
        zk._call(MultiRead(chunk), request)
        pending.append(request)
    results: list[tuple[bytes, ZnodeStat] | None] = []
    try:
        for request in pending:
            for result in request.get():
                if isinstance(result, NoNodeError):
                    results.append(None)
                elif isinstance(result, BaseException):
                    raise result
                else:
                    results.append(result)
    except UnimplementedError:
        log.warning("ZooKeeper does not serve multiRead (3.6+); reading one znode at a time")
        return get_many(zk, paths)
    return results


def exists_many(zk: KazooClient, paths: Sequence[str]) -> list[ZnodeStat | None]:
    """The stat of each path, in order, None where it does not exist; pipelined."""
    return _pipelined(zk.exists_async, paths)


def children_many(zk: KazooClient, paths: Sequence[str]) -> list[list[str] | None]:
    """The children of each path, in order, None where it does not exist; pipelined."""
    return _pipelined(zk.get_children_async, paths)


def children_or_empty(zk: KazooClient, path: str) -> list[str]:
    """The children of ``path``, sorted; none when it does not exist. Blocking."""
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def check_write_access(zk: KazooClient, security: ZkSecurity, name: str) -> None:
    """Fail at start, naming the node and its ACL, when the cluster's existing persistent roots
    refuse this identity's writes (wrong or missing ZooKeeper credentials): digest
    authentication itself never fails, so without this the first refused write would come
    later and further from its cause. A ZooKeeper super user (``superDigest``) is not
    recognized here. Blocking."""
    for path in znodes.PERSISTENT_ROOTS:
        try:
            acls, _stat = zk.get_acls(path)
        except NoNodeError:
            continue
        if not may_write(acls, security.auth):
            who = (
                f"digest user {security.auth.user!r}"
                if security.auth
                else "no identity (ZooKeeper authentication not configured)"
            )
            raise CoordinationError(
                f"{name}: ZooKeeper refuses writes to {path} by {who}; "
                f"its ACL is [{describe_acls(acls)}]. "
                "Give the credentials the cluster's znodes were created with (ZK_AUTH)"
            )


def ensure_roots(zk: KazooClient) -> None:
    """Create the persistent parents and the cluster id, race-safe (first process wins)."""
    for path in znodes.PERSISTENT_ROOTS:
        zk.ensure_path(path)
    if zk.exists(znodes.CLUSTER_ID) is None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        with contextlib.suppress(NodeExistsError):
            zk.create(znodes.CLUSTER_ID, znodes.ClusterIdZNode(cluster_id).encode())
