"""The cleaner's worker process: one clean per process, plan in on stdin, outcome out on stdout.

``python -m pafka.storage.clean_worker <broker pid>`` reads a pickled
:class:`~pafka.storage.clean_pass.CleanPlan`, runs it and writes back a pickled
``(outcome, None)`` or ``(None, error)``, the outcome carrying the process's peak memory. A
process of its own, not a thread: cleaning is Python work, and in the broker it would contend
for the event loop's GIL. It asks the kernel to kill it when the broker dies, so a killed broker
never leaves a clean running behind it.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys

from pafka.errors import KafkaApiError
from pafka.storage.clean_pass import run

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the broker died before the call above took effect
        os._exit(1)


def peak_memory_bytes() -> int:
    """This process's peak resident memory (VmHWM), 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main() -> None:
    die_with_parent(int(sys.argv[1]))
    plan = pickle.loads(sys.stdin.buffer.read())
    try:
        outcome = run(plan)
    except (KafkaApiError, OSError) as exc:
        result: tuple[object, object] = (None, exc)
    else:
        outcome.peak_memory_bytes = peak_memory_bytes()
        result = (outcome, None)
    sys.stdout.buffer.write(pickle.dumps(result))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
