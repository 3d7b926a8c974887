"""One router per resource; the app includes every router listed here."""

from __future__ import annotations

from fastapi import APIRouter

from services.gateway.routers import groups, records, topics

ROUTERS: list[APIRouter] = [groups.router, topics.router, records.router]
