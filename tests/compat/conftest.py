"""One real pafka cluster per compatibility module (its own ZooKeeper, 1 controller, 2 brokers),
so a client that leaves a group or topic behind cannot disturb another client's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster


@pytest.fixture(scope="module")
def compat_cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ClusterHandle]:
    name = request.module.__name__.rsplit(".", 1)[-1]
    with own_cluster(
        tmp_path_factory, name, brokers=2, controllers=1, broker_env=TEST_BROKER_ENV
    ) as handle:
        yield handle


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        handle = item.funcargs.get("compat_cluster") if hasattr(item, "funcargs") else None
        if isinstance(handle, ClusterHandle):
            report.sections.append(("pafka process logs", handle.local.dump_logs()))
    return report
