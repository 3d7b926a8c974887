"""ZooKeeper's multiRead request (opcode 22, ZooKeeper 3.6+), sans-I/O, in kazoo's request shape.

kazoo sends one request per read; a multiRead carries many getData operations in one request
and returns one response, so reading thousands of small znodes costs a handful of round trips
and far less per-request work in kazoo's connection thread. Unlike a transaction, each read
succeeds or fails on its own.

Request:  repeated (MultiHeader{type=4 getData, done=false, err=-1}, path string, watch byte),
          then MultiHeader{type=-1, done=true, err=-1}.
Response: repeated MultiHeader{type, done=false, err}; type 4 is followed by the data buffer
          (int32 length, -1 for null) and a Stat, type -1 by an int32 error code;
          then MultiHeader{done=true}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
)
from kazoo.protocol.states import ZnodeStat

MULTI_READ = 22
ERROR = -1


class MultiRead:
    """getData of every path (already prefixed with the client's chroot)."""

    # kazoo's connection reads these attributes of a request.
    type = MULTI_READ
    watcher = None

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = paths

    def serialize(self) -> bytearray:
        body = bytearray()
        header = MultiHeader(GetData.type, False, -1).serialize()
        for path in self.paths:
            body.extend(header)
            body.extend(GetData(path, None).serialize())
        return body + multiheader_struct.pack(ERROR, True, -1)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[tuple[bytes, ZnodeStat] | Exception]:
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == GetData.type:
                value, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((bytes(value or b""), stat))
            else:
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            header, offset = MultiHeader.deserialize(data, offset)
        return results
