"""One router per resource; the app includes every router listed here."""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.routers import admin, admin_groups, consumers, groups, records, topics

ROUTERS: list[APIRouter] = [
    admin.router,
    admin_groups.router,
    consumers.router,
    groups.router,
    topics.router,
    records.router,
]
