"""``GET /v3/clusters/{id}/consumer-groups/{g}/lag-history``: a group's total lag over the last
while, as the active controller recorded it at each refresh of its cluster view, so the
console draws lag from before its page opened.

The gateway finds the active controller as it finds anything else, through ZooKeeper
(``/controller`` holds its URL), and asks its open ``/lag-history``. The history is in that
controller's memory only: after a failover it starts again, empty. No controller, none
reachable or a gateway without ZooKeeper answer an empty history with a ``note`` saying why
(the page then draws from its own readings), never an error. Rights: DESCRIBE on the group.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter
from pydantic import BaseModel, Field

from pafka.control.secret import LAG_HISTORY_PATH
from pafka.errors import PafkaError
from pafka.zk.znodes import ControllerZNode
from services.gateway.context import Ctx, GatewayContext
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

CONTROLLER_TIMEOUT_S = 5.0


class LagPoint(BaseModel):
    time_ms: int = Field(description="When the controller read it (its clock)")
    total_lag: int = Field(description="Summed over the partitions the group committed")


class LagHistory(BaseModel):
    group: str
    controller_id: int | None = Field(description="The active controller that recorded it")
    window_ms: int | None
    interval_ms: int | None
    points: list[LagPoint] = Field(description="Oldest first")
    note: str | None = Field(None, description="Why there is no history, if there is none")


@router.get(
    "/consumer-groups/{group_id}/lag-history",
    response_model=LagHistory,
    summary="A group's total lag over time, from the active controller's record",
)
async def lag_history(group_id: str, at: At, ctx: Ctx) -> LagHistory:
    controller = await _active_controller(ctx)
    if controller is None:
        return _none(group_id, "no active controller is known")
    try:
        async with httpx.AsyncClient(timeout=CONTROLLER_TIMEOUT_S) as http:
            answer = await http.get(controller.url + LAG_HISTORY_PATH, params={"group": group_id})
        answer.raise_for_status()
        found = answer.json()
        points = [LagPoint(time_ms=int(t), total_lag=int(lag)) for t, lag in found["points"]]
        window_ms, interval_ms = int(found["window_ms"]), int(found["interval_ms"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        return _none(group_id, f"the active controller did not answer: {exc}")
    return LagHistory(
        group=group_id,
        controller_id=controller.controller_id,
        window_ms=window_ms,
        interval_ms=interval_ms,
        points=points,
        note=None if found.get("active", True) else "the controller asked is no longer active",
    )


def _none(group: str, why: str) -> LagHistory:
    return LagHistory(
        group=group, controller_id=None, window_ms=None, interval_ms=None, points=[], note=why
    )


async def _active_controller(ctx: GatewayContext) -> ControllerZNode | None:
    if ctx.zk is None:
        return None
    try:
        found = await ctx.zk.get(ControllerZNode.path())
        return ControllerZNode.decode(found[0]) if found else None
    except (PafkaError, ValueError, KeyError, TypeError):
        return None
