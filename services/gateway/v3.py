"""What every Confluent v3 route shares: where resources are, the cluster-id check, the admin
client.

There is one cluster, whose id is the one Metadata reports; a path naming any other id is 404.
:class:`Links` spells each resource's URL, from the base URL the request came in on, and its
Confluent resource name (CRN).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from pafka.client.admin import AdminClient
from pafka.errors import RestError
from services.gateway.context import Ctx, GatewayContext
from services.gateway.models.admin import ListMetadata, Relationship, ResourceMetadata

UNKNOWN_CLUSTER = 40400


class Links:
    """URLs and resource names of one cluster's resources, from the request's base URL."""

    def __init__(self, request: Request, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.base = f"{str(request.base_url).rstrip('/')}/v3/clusters/{cluster_id}"
        self.crn = f"crn:///kafka={cluster_id}"

    def url(self, *parts: object) -> str:
        return "/".join([self.base, *(str(p) for p in parts)])

    def meta(self, *parts: object, crn: str = "") -> ResourceMetadata:
        return ResourceMetadata(self=self.url(*parts), resource_name=self.crn + crn)

    def rel(self, *parts: object) -> Relationship:
        return Relationship(related=self.url(*parts))

    def listing(self, *parts: object) -> ListMetadata:
        return ListMetadata(self=self.url(*parts))


async def current_cluster_id(ctx: GatewayContext) -> str:
    """The id Metadata reports (the one cluster there is)."""
    if ctx.cluster.cluster_id is None:
        await ctx.cluster.refresh()
    return ctx.cluster.cluster_id or "pafka"


async def links(cluster_id: str, request: Request, ctx: Ctx) -> Links:
    """The dependency of every route under one cluster: 404 unless it is this one."""
    if cluster_id != await current_cluster_id(ctx):
        raise RestError(UNKNOWN_CLUSTER, f"cluster {cluster_id!r} not found")
    return Links(request, cluster_id)


def admin(ctx: Ctx) -> AdminClient:
    return AdminClient(ctx.cluster, timeout_ms=ctx.settings.request_timeout_ms, groups=ctx.groups)


At = Annotated[Links, Depends(links)]
Admin = Annotated[AdminClient, Depends(admin)]
