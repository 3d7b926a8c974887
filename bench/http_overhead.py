"""Server CPU per request of the services' HTTP stack, against a bare parser, side by side.

    python -m bench.http_overhead [--rate 2500] [--seconds 5] [--records 94] [--connections 8]

Three servers answer the same POST (a produce body of ``--records`` base64 records of 100
bytes) with the same bytes (a REST Proxy produce answer, one offset per record), one after the
other, each in a process of its own:

* ``service``: a trivial ASGI app served by :func:`pafka.httpserver.start_http`, the gateway's
  uvicorn server with its coalesced writes and parse refusals: every cost of a request but the
  gateway's own work on it;
* ``whole``: the same app and server with the request named to be served whole
  (:mod:`pafka.whole_requests`), as the gateway names its produce routes;
* ``bare``: an asyncio protocol feeding httptools and writing the answer itself: the floor of
  reading and answering a request on this machine.

The load is paced as the comparison's paced producers send (``--rate`` requests a second over
``--connections`` keep-alive connections, :class:`bench.gateway.HttpClient`), and each server's
CPU per request is printed with its ratio to the bare one's: what serving whole saves, and what
a leaner path still could at most.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, cast

import httptools
import orjson
import psutil

from bench.gateway import HttpClient
from pafka.eventloop import use_uvloop

MODES = ("service", "whole", "bare")
HOST = "127.0.0.1"
TICK_S = 0.001


def answer_body(records: int) -> bytes:
    offset = b'{"partition":0,"offset":1234567,"error_code":null,"error":null}'
    offsets = b",".join([offset] * records)
    return b'{"offsets":[' + offsets + b'],"key_schema_id":null,"value_schema_id":null}'


def produce_body(records: int) -> bytes:
    record = orjson.dumps({"value": base64.b64encode(bytes(100)).decode()})
    return b'{"records":[' + b",".join([record] * records) + b"]}"


# -- the servers (each runs in a process of its own) --------------------------------------------


class _Bare(asyncio.Protocol):
    """httptools and one write per answer; keep-alive, nothing else."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_message_complete(self) -> None:
        assert self.transport is not None
        self.transport.write(self.answer)


async def _serve(mode: str, port: int, records: int) -> None:
    body = answer_body(records)
    head = [(b"content-type", b"application/vnd.kafka.v2+json")]
    head.append((b"content-length", str(len(body)).encode()))
    if mode in ("service", "whole"):
        from pafka.httpserver import start_http

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            while (await receive()).get("more_body", False):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": head})
            await send({"type": "http.response.body", "body": body})

        whole = (lambda scope: app) if mode == "whole" else None
        _, serving = await start_http(app, HOST, port, whole_route=whole)
        print("serving", flush=True)
        await serving  # until the process is ended: the task is the server's only owner here
        return
    lines = [b"HTTP/1.1 200 OK"] + [name + b": " + value for name, value in head]
    answer = b"\r\n".join(lines) + b"\r\n\r\n" + body
    server = await asyncio.get_running_loop().create_server(lambda: _Bare(answer), HOST, port)
    print("serving", flush=True)
    await server.serve_forever()


# -- the load ------------------------------------------------------------------------------------


async def _drive(port: int, rate: float, seconds: float, records: int, connections: int) -> int:
    body = produce_body(records)
    head = (
        f"POST /topics/t/partitions/0 HTTP/1.1\r\nHost: {HOST}\r\n"
        "Content-Type: application/vnd.kafka.binary.v2+json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    expected = len(answer_body(records))
    due: asyncio.Queue[None] = asyncio.Queue()
    answered = 0

    async def send(client: HttpClient) -> None:
        nonlocal answered
        while True:
            await due.get()
            status, answer = await client.request(head, body)
            if status != 200 or len(answer) != expected:
                raise RuntimeError(f"unexpected answer {status}: {answer[:200]!r}")
            answered += 1

    clients = [await HttpClient.open(HOST, port) for _ in range(connections)]
    senders = [asyncio.create_task(send(c)) for c in clients]
    started, sent = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - started) < seconds:
        for _ in range(int(elapsed * rate) - sent):
            due.put_nowait(None)
            sent += 1
        await asyncio.sleep(TICK_S)
    while answered < sent and not any(s.done() for s in senders):
        await asyncio.sleep(TICK_S)
    for task in senders:
        task.cancel()
    failed = [s for s in senders if s.done() and not s.cancelled() and s.exception()]
    for client in clients:
        client.close()
    if failed:
        raise RuntimeError(f"a request failed: {failed[0].exception()}")
    return answered


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class Measured:
    requests: int  # answered, each with the expected bytes
    cpu_us_per_request: float


def measure(mode: str, *, rate: float, seconds: float, records: int, connections: int) -> Measured:
    """The ``mode`` server's CPU per request at the paced load."""
    port = _free_port()
    command = [sys.executable, "-m", "bench.http_overhead", "--serve", mode, "--port", str(port)]
    command += ["--records", str(records)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "serving":
            raise RuntimeError(f"the {mode} server did not start")
        process = psutil.Process(server.pid)
        before = process.cpu_times()
        answered = asyncio.run(_drive(port, rate, seconds, records, connections))
        after = process.cpu_times()
    finally:
        server.terminate()
        server.wait(timeout=10)
    used_s = (after.user + after.system) - (before.user + before.system)
    return Measured(answered, used_s / max(answered, 1) * 1e6)


def main(argv: list[str] | None = None) -> dict[str, Measured]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rate", type=float, default=2500.0, help="requests a second")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--records", type=int, default=94, help="records per request")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--serve", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    use_uvloop()  # as the services and the comparison's clients run
    if args.serve:
        asyncio.run(_serve(args.serve, args.port, args.records))
        return {}
    found = {
        mode: measure(
            mode,
            rate=args.rate,
            seconds=args.seconds,
            records=args.records,
            connections=args.connections,
        )
        for mode in MODES
    }
    for mode, measured in found.items():
        print(
            f"{mode:8} {measured.cpu_us_per_request:7.1f} us of server CPU per request "
            f"({measured.requests} requests)"
        )
    floor = max(found["bare"].cpu_us_per_request, 1e-9)
    for mode in ("service", "whole"):
        print(f"{mode} / bare: {found[mode].cpu_us_per_request / floor:.2f}x")
    return found


if __name__ == "__main__":
    main()
