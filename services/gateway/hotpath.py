"""The busiest routes (produce and range reads) served without FastAPI's per-request machinery.

FastAPI's middleware stack, router, dependency solving and parameter validation cost more than
a one-record produce itself. :class:`HotPath` sits in front of the app and answers the three
record routes when a request is plainly valid: the path matches, the partition and the query
parameters are plain decimal numbers in range. It calls the very route functions FastAPI would
(``routers/records.py``), with the app's guard (credentials, ACLs, audit lines), its error
mapping, its bug handler and its metrics, so what a client observes is the same. Anything else
(a parameter FastAPI would refuse, a method or path it routes elsewhere, an app not yet opened)
goes through FastAPI unchanged, so validation messages stay FastAPI's own.

The routes stay declared on the app, so /docs and the OpenAPI document are unchanged. The
produce routes are also named to the HTTP server as served whole (:meth:`HotPath.whole_route`),
which then skips its own per-request machinery for them too; their answer, always one body, is
then handed over in one call (:data:`pafka.whole_requests.WHOLE_ANSWER`) and measured here, not
passed as ASGI messages through the metrics and bug-answering middlewares.
"""

from __future__ import annotations

import inspect
import time
import typing
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from annotated_types import Ge, Le
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic.fields import FieldInfo
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pafka.errors import PafkaError
from pafka.whole_requests import WHOLE_ANSWER
from services.gateway import errors
from services.gateway.metrics import GatewayMetrics
from services.gateway.routers import records

Guard = Callable[..., Awaitable[None]]

PRODUCE_TOPIC = "/topics/{topic}"
PRODUCE_PARTITION = "/topics/{topic}/partitions/{partition}"
READ_RANGE = "/topics/{topic}/partitions/{partition}/records"
_PREFIX = "/topics/"


class _Declared(NamedTuple):
    ints: dict[str, tuple[int, int | None]]  # name: (lowest, highest or None)
    flags: frozenset[str]  # booleans
    defaults: dict[str, Any]
    isolations: frozenset[str]


def _declared_query() -> _Declared:
    """The range read's query parameters as its route declares them (integer bounds, flags,
    defaults, isolation names), so this path and FastAPI's can never disagree about them."""
    hints = typing.get_type_hints(records.read_records)
    bounds: dict[str, tuple[int, int | None]] = {}
    flags: set[str] = set()
    defaults: dict[str, Any] = {}
    isolations: frozenset[str] = frozenset()
    for name, parameter in inspect.signature(records.read_records).parameters.items():
        field = parameter.default
        if not isinstance(field, FieldInfo):
            continue  # a path parameter or the request
        if not field.is_required():
            defaults[name] = field.default
        if name == "isolation":
            isolations = frozenset(typing.get_args(hints[name]))
            continue
        if hints[name] is bool:
            flags.add(name)
            continue
        lowest = next(typing.cast(int, m.ge) for m in field.metadata if isinstance(m, Ge))
        highest = next((typing.cast(int, m.le) for m in field.metadata if isinstance(m, Le)), None)
        bounds[name] = (lowest, highest)
    return _Declared(bounds, frozenset(flags), defaults, isolations)


# Beyond 18 digits FastAPI decides (and refuses or accepts exactly as it always did).
_READ_INTS, _READ_FLAGS, _READ_DEFAULTS, _ISOLATIONS = _declared_query()
# The spellings of a flag taken here; FastAPI reads others (1, yes, on, ...) as it always did.
_FLAG_TEXTS = {"true": True, "false": False}
QUERY_KEY = "pafka.read_query"  # the read's parsed parameters, in the request's scope
_MAX_DIGITS = 18


def _number(text: str) -> int | None:
    """A plain decimal (what FastAPI surely reads the same way), else None."""
    if 0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit():
        return int(text)
    return None


def read_params(query_string: bytes) -> dict[str, Any] | None:
    """The range read's query parameters when all are plainly valid, else None (FastAPI then
    validates them and words any refusal). Parsed as Starlette parses them: the last of a
    repeated name wins."""
    query = dict(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True))
    params: dict[str, Any] = {}
    for name, (lowest, highest) in _READ_INTS.items():
        text = query.get(name)
        if text is None:
            continue
        value = _number(text)
        if value is None or value < lowest or (highest is not None and value > highest):
            return None
        params[name] = value
    if "offset" not in params:
        return None
    for name in _READ_FLAGS:
        text = query.get(name)
        if text is None:
            continue
        flag = _FLAG_TEXTS.get(text)
        if flag is None:
            return None
        params[name] = flag
    isolation = query.get("isolation")
    if isolation is not None:
        if isolation not in _ISOLATIONS:
            return None
        params["isolation"] = isolation
    return params


def match(method: str, path: str) -> tuple[str, dict[str, Any]] | None:
    """The route template and path parameters of a hot request, or None."""
    if not path.startswith(_PREFIX):
        return None
    parts = path[len(_PREFIX) :].split("/")
    if not parts[0]:
        return None
    if len(parts) == 1:
        return (PRODUCE_TOPIC, {"topic": parts[0]}) if method == "POST" else None
    if len(parts) < 3 or parts[1] != "partitions":
        return None
    partition = _number(parts[2])
    if partition is None:
        return None
    params = {"topic": parts[0], "partition": partition}
    if len(parts) == 3 and method == "POST":
        return PRODUCE_PARTITION, params
    if len(parts) == 4 and parts[3] == "records" and method == "GET":
        return READ_RANGE, params
    return None


class HotPath:
    """Answers the record routes of ``app`` directly, measured in the app's ``metrics``;
    ``guard`` is the app's dependency (None when nothing is guarded)."""

    def __init__(self, app: FastAPI, guard: Guard | None, metrics: GatewayMetrics) -> None:
        self.app = app
        self.guard = guard
        self.metrics = metrics
        self.routes = {
            (method, route.path): route
            # The router's own routes: the app holds them wrapped, with the same templates.
            for route in records.router.routes
            if isinstance(route, APIRoute)
            for method in route.methods or ()
        }
        self._streamed: ASGIApp = metrics.measured(errors.AnswerBugs(self._serve))

    def wants(self, scope: Scope) -> bool:
        """Whether this request is served here (and then :meth:`serve` answers it)."""
        if scope["type"] != "http" or scope.get("root_path"):
            return False
        found = match(scope["method"], scope["path"])
        if found is None or getattr(self.app.state, "ctx", None) is None:
            return False
        template, path_params = found
        if template == READ_RANGE:
            query = read_params(scope["query_string"])
            if query is None:
                return False
            scope[QUERY_KEY] = {**_READ_DEFAULTS, **query}
        route = self.routes.get((scope["method"], template))
        if route is None:
            return False
        # What Starlette and its router leave in the scope: routes find the context through
        # the app, the metrics label and the guard read the route.
        scope["app"] = self.app
        scope["route"] = route
        scope["path_params"] = path_params
        return True

    def whole_route(self, scope: Scope) -> ASGIApp | None:
        """:meth:`serve` for the produce routes, which the HTTP server may serve whole
        (:mod:`pafka.whole_requests`: each answer is one body); None for anything else."""
        if scope["method"] == "POST" and self.wants(scope):
            return self.serve
        return None

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request :meth:`wants`, measured as the app's middleware measures."""
        whole = (scope.get("extensions") or {}).get(WHOLE_ANSWER)
        if whole is None:
            await self._streamed(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if answering fails
        try:
            response = await self._respond(scope, receive)
            status = response.status_code
            if type(response).__call__ is Response.__call__ and response.background is None:
                await whole["answer"](status, response.raw_headers, response.body)
            else:
                await response(scope, receive, send)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.observe(scope["route"].path, scope["method"], status, elapsed)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self._respond(scope, receive)
        await response(scope, receive, send)

    async def _respond(self, scope: Scope, receive: Receive) -> Response:
        """The route's response, its error's, or (a bug) a logged 500."""
        request = Request(scope, receive)
        params = scope["path_params"]
        try:
            if self.guard is not None:
                await self.guard(request, None, None)
            return await self._answer(scope["route"].path, request, params, scope.get(QUERY_KEY))
        except PafkaError as exc:
            status, code = errors.rest_code(exc)
            return errors.error_response(status, code, exc.message)
        except Exception:
            return errors.bug_response(scope)

    @staticmethod
    async def _answer(
        template: str, request: Request, params: dict[str, Any], query: dict[str, Any] | None
    ) -> Response:
        if template == PRODUCE_TOPIC:
            return await records.produce_to_topic(params["topic"], request)
        if template == PRODUCE_PARTITION:
            return await records.produce_to_partition(params["topic"], params["partition"], request)
        assert query is not None
        return await records.read_records(params["topic"], params["partition"], request, **query)
