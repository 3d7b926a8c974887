"""One router per resource; the app includes every router listed here."""

from __future__ import annotations

from fastapi import APIRouter

ROUTERS: list[APIRouter] = []
