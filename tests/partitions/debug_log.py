"""What a librdkafka producer's debug log (``debug=msg``) says about its failed attempts (pure).

``python -m tests.partitions.debug_log producer-debug.log`` prints, per partition, the most
failed attempts of one message, and for a fatal ``Unable to reconstruct MessageSet`` the
failed attempts and next backoff of the batch's first message, of the last one the rebuild
added and of the one it stopped before: the evidence that the backoff overflowed
(``librdkafka_backoff``).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.partitions.librdkafka_backoff import backoff_ms

FAILED = re.compile(
    r"\[(?P<partition>\d+)\]: MessageSet with (?P<count>\d+) message\(s\) "
    r"\(MsgId (?P<msgid>\d+), BaseSeq -?\d+\) encountered error: (?P<error>.*?) \(actions"
)
RECONSTRUCT = re.compile(
    r"Unable to reconstruct MessageSet \(currently with \d+ message\(s\)\) with msgid range "
    r"(?P<first>\d+)\.\.(?P<last>\d+): last message added has msgid (?P<added>\d+)"
)


@dataclass
class Attempts:
    """Failed attempts per message id, per partition, up to the first fatal error."""

    failed: dict[int, Counter[int]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    fatal: str | None = None
    # msgid range of the batch that could not be rebuilt, and the last message added
    unrebuilt: tuple[int, int, int] | None = None

    def most(self, partition: int) -> int:
        counts = self.failed.get(partition)
        return max(counts.values()) if counts else 0


def read(lines: Iterable[str]) -> Attempts:
    attempts = Attempts()
    for line in lines:
        if "|FATAL|" in line:
            attempts.fatal = line.strip()
            found = RECONSTRUCT.search(line)
            if found:
                first, last, added = (int(found.group(k)) for k in ("first", "last", "added"))
                attempts.unrebuilt = (first, last, added)
            break
        failed = FAILED.search(line)
        if failed is None:
            continue
        counts = attempts.failed.setdefault(int(failed.group("partition")), Counter())
        first_id = int(failed.group("msgid"))
        for msgid in range(first_id, first_id + int(failed.group("count"))):
            counts[msgid] += 1
        attempts.errors[failed.group("error")] += 1
    return attempts


def report(attempts: Attempts, retry_backoff_ms: int, retry_backoff_max_ms: int) -> list[str]:
    lines = [f"errors: {dict(attempts.errors)}"]
    for partition in sorted(attempts.failed):
        lines.append(
            f"partition {partition}: most failed attempts of a message {attempts.most(partition)}"
        )
    lines.append(f"fatal: {attempts.fatal or 'none'}")
    if attempts.unrebuilt is not None:
        first, _, added = attempts.unrebuilt
        # The fatal line does not name its partition: the message ids belong to the one that
        # failed them.
        counts = next((c for c in attempts.failed.values() if first in c), Counter())
        for what, msgid in (("first", first), ("last added", added), ("not added", added + 1)):
            n = counts[msgid]
            due = backoff_ms(n, retry_backoff_ms, retry_backoff_max_ms)
            lines.append(f"{what} msgid {msgid}: {n} failed attempts, next backoff {due:.0f} ms")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("log", type=Path)
    parser.add_argument("--retry-backoff-ms", type=int, default=100)
    parser.add_argument("--retry-backoff-max-ms", type=int, default=1000)
    args = parser.parse_args(argv)
    with open(args.log, errors="replace") as log:
        attempts = read(log)
    print("\n".join(report(attempts, args.retry_backoff_ms, args.retry_backoff_max_ms)))


if __name__ == "__main__":
    main()
