"""Failed attempts per message read from librdkafka's debug log lines (as 2.16 writes them)."""

from __future__ import annotations

from tests.partitions.debug_log import read, report

PREFIX = "%7|1795697233.1|MSGSET|rdkafka#producer-2| [thrd:10.0.0.4:9092/1]: 10.0.0.4:9092/1: "


def failed(
    partition: int, msgid: int, count: int, error: str = "Broker: Not enough in-sync replicas"
) -> str:
    return (
        f"{PREFIX}t [{partition}]: MessageSet with {count} message(s) (MsgId {msgid}, BaseSeq 0) "
        f"encountered error: {error} (actions Retry,MsgNotPersisted)\n"
    )


FATAL = (
    "%0|1795697233.300|FATAL|rdkafka#producer-2| [thrd:10.0.0.4:9092/1]: Fatal error: Local: "
    "Inconsistent state: Unable to reconstruct MessageSet (currently with 2 message(s)) with "
    "msgid range 10..13: last message added has msgid 11: unable to guarantee consistency\n"
)


def test_attempts_are_counted_per_message_until_the_fatal_error() -> None:
    lines = [failed(0, 10, 2)] * 26 + [failed(0, 12, 2)] * 22 + [failed(1, 5, 1)]
    lines += [FATAL, failed(0, 10, 4)]  # after the fatal error: not counted
    attempts = read(lines)
    assert attempts.most(0) == 26 and attempts.most(1) == 1 and attempts.most(2) == 0
    assert attempts.failed[0][11] == 26 and attempts.failed[0][12] == 22
    assert attempts.unrebuilt == (10, 13, 11)
    assert attempts.errors["Broker: Not enough in-sync replicas"] == 49
    lines_out = report(attempts, 100, 1000)
    assert "first msgid 10: 26 failed attempts, next backoff -939524096 ms" in lines_out
    assert "not added msgid 12: 22 failed attempts, next backoff 1000 ms" in lines_out


def test_a_log_without_failures() -> None:
    attempts = read(["%7|1.0|SEND|rdkafka#producer-1| [thrd:x]: Sent ProduceRequest\n"])
    assert attempts.failed == {} and attempts.fatal is None and attempts.unrebuilt is None
    assert report(attempts, 100, 1000)[-1] == "fatal: none"
