"""The web console at ``/ui``: pages drawn in the browser from the gateway's REST API.

``pages.py`` serves the page and its files from ``static/`` (vanilla ES modules, no build
step), ``api.py`` the few read-only REST views the pages need that the v3 API lacks,
``group_admin.py`` deleting a group and resetting its offsets (with a dry run),
``topic_configs.py`` v3's configs:alter (the v3 API had no config write),
``throughput.py`` the brokers' traffic counters from their own metrics, ``summaries.py`` the
views' pure arithmetic, ``offsets_for_times.py`` where a time falls in a topic's partitions,
``record_search.py`` a bounded server-side search of a partition (its walk, pure, in
``record_scan.py``), ``log_sizes.py`` topics' and partitions' size on disk (DescribeLogDirs),
``group_search.py`` the groups a page at a time (``group_paging.py`` its pure part),
``zk_groups.py`` ZooKeeper-era groups (``zk_group_view.py`` their znodes read),
``lag_history.py`` a group's lag over time from the active controller's record.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from services.gateway.console import (
    api,
    group_admin,
    group_search,
    lag_history,
    log_sizes,
    offsets_for_times,
    pages,
    record_search,
    throughput,
    topic_configs,
    zk_groups,
)

ROUTERS: list[APIRouter] = [
    api.router,
    throughput.router,
    topic_configs.router,
    group_admin.router,
    offsets_for_times.router,
    record_search.router,
    log_sizes.router,
    group_search.router,
    zk_groups.router,
    lag_history.router,
]


def install(app: FastAPI) -> None:
    """Mount the console's page, files and REST views on ``app``."""
    pages.install(app)
    for router in ROUTERS:
        app.include_router(router)
