"""kill -9 of a broker at every point of a clean the cleaner's test hook offers, the broker
leading the partition or following (the default suite runs the leader halfway through a swap:
tests/integration/test_compaction_crash.py)."""

from __future__ import annotations

import pytest

from tests.integration.conftest import ClusterHandle
from tests.integration.test_compaction_crash import crash_in_a_clean, crashing

__all__ = ["crashing"]  # the module's cluster fixture

pytestmark = pytest.mark.faults


@pytest.mark.parametrize(
    ("point", "leader"),
    [
        ("before-manifest", False),
        ("before-manifest", True),
        ("after-manifest", False),
        ("after-manifest", True),
        ("mid-swap", False),
        ("after-swap", False),
        ("after-swap", True),
    ],
)
def test_broker_killed_in_a_clean_recovers_whole(
    crashing: ClusterHandle, point: str, leader: bool
) -> None:
    crash_in_a_clean(crashing, point, leader=leader)
