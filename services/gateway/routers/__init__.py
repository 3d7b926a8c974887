"""One router per resource; the app includes every router listed here.

Routes are matched in this order, so the busiest (produce and range reads) come first.
"""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.routers import (
    acls,
    admin,
    admin_groups,
    consumers,
    groups,
    records,
    records_v3,
    scram_users,
    topics,
)

ROUTERS: list[APIRouter] = [
    records.router,
    records_v3.router,
    topics.router,
    groups.router,
    consumers.router,
    admin.router,
    admin_groups.router,
    acls.router,
    scram_users.router,
]
