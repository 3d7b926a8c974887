"""When a partition leader stops acknowledging acks=all writes for lack of footing (pure).

A leader cut off from ZooKeeper cannot shrink its ISR (the write needs ZooKeeper), so while its
in-sync followers are unreachable too an acks=all write can only wait for a replication that
will not come, and is likely truncated later: the controller will have elected a follower once
this broker's session expires. Such a leader is *fenced*: it answers acks=all writes at once with
NOT_LEADER_OR_FOLLOWER, instead of appending them and holding them until the request times out.
That code, not NOT_ENOUGH_REPLICAS, because it is what a leader cut off from its footing can
honestly say (it cannot tell whether it is still the leader) and because clients act on it:
librdkafka and the Java producer refresh metadata and move to the new leader, while
NOT_ENOUGH_REPLICAS keeps them retrying this broker until their messages time out (measured by
the partition suite). Nothing was appended, so the retry is safe for idempotent producers.
Writes already waiting are answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.

Fenced means both: the ZooKeeper session is not connected (suspended or lost) AND the ISR has at
least one follower and none of them is caught up (``Followers.lagging``: not at the leader's log
end and not caught up within ``replica.lag.time.max.ms``). Either footing alone suffices: with
ZooKeeper the leader shrinks the ISR and min.insync.replicas decides; with a follower in sync the
writes replicate. A leader alone in its ISR has no follower to wait for and is never fenced.

acks=1 and acks=0 writes are taken as before, as Kafka takes them: the producer asked for the
leader's write only, and the leader does not know that it was replaced (a leader cut off only
from ZooKeeper may well still be the leader when the connection comes back).
"""

from __future__ import annotations

from collections.abc import Collection

ACKS_ALL = -1


def fenced(*, zk_connected: bool, isr_followers: Collection[int], lagging: Collection[int]) -> bool:
    """Whether a leader refuses acks=all writes: no ZooKeeper and no in-sync follower left.
    ``isr_followers`` is the ISR without the leader, ``lagging`` those of them not caught up."""
    if zk_connected or not isr_followers:
        return False
    return all(f in lagging for f in isr_followers)


def refuses(acks: int, is_fenced: bool) -> bool:
    """Whether a write with ``acks`` is refused by a leader in this state."""
    return is_fenced and acks == ACKS_ALL


def reason(lag_max_ms: int) -> str:
    return (
        "the leader cannot reach ZooKeeper and no in-sync follower has caught up within "
        f"replica.lag.time.max.ms ({lag_max_ms} ms)"
    )
