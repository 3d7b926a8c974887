"""The follower's half of a fetch session (KIP-227): what each Fetch request must carry.

A leader that keeps a session remembers, per partition, what the follower last asked for, so
an incremental request names only the partitions whose fetch position changed, plus the ones
to forget; an idle follower's request names none. The first request of a session (epoch 0) is
full; a session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH), a lost
connection or a leader that declines a session (session id 0 in its answer) start over with a
full request. Pure bookkeeping, no I/O: ``build`` says what to send, ``on_response`` takes
what the leader said.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF

TopicPartition = tuple[str, int]


class PartitionRequest(NamedTuple):
    """One partition of a Fetch request, as the leader caches it in the session."""

    fetch_offset: int
    log_start_offset: int
    current_leader_epoch: int
    max_bytes: int


@dataclass(frozen=True)
class SessionRequest:
    session_id: int
    session_epoch: int
    partitions: dict[TopicPartition, PartitionRequest]
    forgotten: tuple[TopicPartition, ...]

    @property
    def full(self) -> bool:
        return self.session_epoch == INITIAL_EPOCH


@dataclass
class FollowerSession:
    """The session with one leader; ``sent`` is what the leader holds for each partition."""

    session_id: int = 0
    next_epoch: int = INITIAL_EPOCH
    sent: dict[TopicPartition, PartitionRequest] = field(default_factory=dict)

    def build(
        self,
        wanted: Mapping[TopicPartition, PartitionRequest],
        touched: Collection[TopicPartition],
    ) -> SessionRequest:
        """The next request for ``wanted``; ``touched`` names every partition whose entry in
        ``wanted`` may differ from what the session holds (added, changed or removed since the
        last request), so an incremental request costs nothing per untouched partition."""
        if self.next_epoch == INITIAL_EPOCH:
            return SessionRequest(0, INITIAL_EPOCH, dict(wanted), ())
        changed = {
            tp: r for tp in touched if (r := wanted.get(tp)) is not None and self.sent.get(tp) != r
        }
        forgotten = tuple(sorted(tp for tp in touched if tp in self.sent and tp not in wanted))
        return SessionRequest(self.session_id, self.next_epoch, changed, forgotten)

    def on_response(self, request: SessionRequest, error_code: int, session_id: int) -> None:
        """Take the leader's answer to ``request``: a top-level error resets the session."""
        if error_code:
            self.reset()
            return
        if request.full:
            if session_id == 0:
                # The leader keeps no session for us (full cache, or an old version): every
                # request stays full.
                self.reset()
                return
            self.session_id = session_id
            self.sent = dict(request.partitions)
        else:
            for tp in request.forgotten:
                self.sent.pop(tp, None)
            self.sent.update(request.partitions)
        self.next_epoch = 1 if self.next_epoch >= MAX_EPOCH else self.next_epoch + 1

    def reset(self) -> None:
        self.session_id = 0
        self.next_epoch = INITIAL_EPOCH
        self.sent = {}
