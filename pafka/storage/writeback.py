"""Appended log bytes handed to the kernel to write as they accumulate, not all at the fsync.

The broker fsyncs every log at its checkpoint, every 5 s. Left until then, seconds of appends
are written back in one burst, and on ext4 (delayed allocation) an append to the same file
waits in ``pwrite`` while that burst's blocks are allocated: at 50 MB/s into one partition the
broker's event loop stalled 5-30 ms several times at each checkpoint, which set the Kafka
protocol's p99. :class:`Writeback` starts the writeback of every ``step_bytes`` appended to an
active segment (``sync_file_range`` with ``SYNC_FILE_RANGE_WRITE``, what RocksDB's
``bytes_per_sync`` and PostgreSQL's ``*_flush_after`` settings do), on a thread of its own: the
allocation comes in small steps, off the event loop, and the checkpoint's fsync finds little
left to write.

It promises nothing: an acknowledged write is as durable as before, no more (the fsync alone
makes anything durable). Where ``sync_file_range`` is missing (not Linux) it does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

DEFAULT_STEP_BYTES = 1024 * 1024
# Requests waiting for the thread at most: past this (a disk slower than the appends) a step is
# put off to a later append rather than holding more duplicated descriptors.
MAX_PENDING = 64
SYNC_FILE_RANGE_WRITE = 2  # <fcntl.h>: start writing the range's dirty pages, do not wait

# (fd, offset, length, flags) -> 0, or -1 with errno set
SyncFileRange = Callable[[int, int, int, int], int]


def kernel_sync_file_range() -> SyncFileRange | None:
    """libc's ``sync_file_range``, or None where there is none."""
    try:
        function = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    function.restype = ctypes.c_int
    # ctypes releases the GIL for the call: a slow one holds up no Python thread.
    return function


class Writeback:
    """Starts the writeback of appended ranges on one daemon thread, shared by all logs.

    ``step_bytes`` of 0 turns it off; ``sync_file_range`` replaces the system call (tests)."""

    def __init__(
        self, step_bytes: int = DEFAULT_STEP_BYTES, sync_file_range: SyncFileRange | None = None
    ) -> None:
        self.step_bytes = step_bytes
        self._call = sync_file_range or (kernel_sync_file_range() if step_bytes > 0 else None)
        self._requests: queue.SimpleQueue[tuple[int, int, int] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self.step_bytes > 0 and self._call is not None

    def advance(self, fd: int, start: int, end: int) -> int:
        """The file ``fd`` now holds ``end`` bytes, of which writeback was last started up to
        ``start``: starts it for ``[start, end)`` once that is a step, and returns where the next
        step begins. A file cut below ``start`` (truncated) starts again from its end."""
        if end < start:
            return end
        if not self.enabled or end - start < self.step_bytes:
            return start
        if self._requests.qsize() >= MAX_PENDING:
            return start
        # A descriptor of its own: the segment may roll, and close its own, before the thread
        # gets to the request.
        try:
            own = os.dup(fd)
        except OSError:
            # Out of descriptors: the append itself went through, and the fsync writes it.
            return start
        self._requests.put((own, start, end - start))
        self._ensure_thread()
        return end

    def close(self) -> None:
        """Finish the requests already made and stop the thread."""
        thread = self._thread
        if thread is not None:
            self._requests.put(None)
            thread.join()
            self._thread = None

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="log-writeback", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        assert self._call is not None
        while (request := self._requests.get()) is not None:
            fd, offset, length = request
            try:
                if self._call(fd, offset, length, SYNC_FILE_RANGE_WRITE) != 0:
                    self._failed(ctypes.get_errno())
            finally:
                os.close(fd)

    def _failed(self, errno: int) -> None:
        # Nothing is lost: the checkpoint's fsync writes the range and reports real I/O errors.
        if not self._warned:
            self._warned = True
            log.warning(
                "starting log writeback failed (%s); the periodic fsync still writes everything",
                os.strerror(errno),
            )
