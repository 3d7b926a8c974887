"""``/v3/clusters/{id}/acls``: searching, creating and deleting ACLs, as Confluent REST Proxy v3
spells them (``acl_filters.py``), through the brokers' DescribeAcls, CreateAcls and DeleteAcls.

Rights are Kafka's: DESCRIBE on the cluster to search, ALTER on the cluster to create or delete
(``rest_acls.py`` for the REST caller; the broker checks the gateway's own principal too). A
cluster whose brokers have no authorizer answers Kafka's SECURITY_DISABLED as 400 (40001),
its message saying so.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, Field

from pafka.client import acls as kafka_acls
from pafka.security.acls import AclBinding
from services.gateway.acl_filters import (
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    AclTerms,
    binding,
    binding_filter,
    rest_fields,
)
from services.gateway.context import Ctx
from services.gateway.models.admin import ListMetadata, Resource, ResourceMetadata
from services.gateway.v3 import At, Links

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["ACLs (v3)"])


def _enum(values: list[str]) -> Any:
    # Checked by acl_filters (400 naming the field, as REST Proxy), shown as enums in OpenAPI.
    enum: list[Any] = list(values)
    return Field(json_schema_extra={"enum": enum})


class AclData(Resource):
    cluster_id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


class AclDataList(BaseModel):
    kind: str = "KafkaAclList"
    metadata: ListMetadata
    data: list[AclData]


class DeleteAclsResponse(BaseModel):
    data: list[AclData] = Field(description="The ACLs deleted")


class CreateAclRequest(BaseModel):
    resource_type: str = _enum(RESOURCE_TYPES)
    resource_name: str
    pattern_type: str = _enum(PATTERN_TYPES)
    principal: str = Field(description="TYPE:name, e.g. User:alice")
    host: str = Field(description="* for every host")
    operation: str = _enum(OPERATIONS)
    permission: str = _enum(PERMISSIONS)


def _data(at: Links, acl: AclBinding) -> AclData:
    fields = rest_fields(acl)
    return AclData(
        kind="KafkaAcl",
        metadata=ResourceMetadata(self=f"{at.url('acls')}?{urlencode(fields)}"),
        cluster_id=at.cluster_id,
        **fields,
    )


def acl_terms(
    resource_type: str | None = Query(
        None, description="Required: " + ", ".join(RESOURCE_TYPES[1:])
    ),
    resource_name: str | None = Query(None, description="Empty: any name"),
    pattern_type: str | None = Query(None, description="Required: " + ", ".join(PATTERN_TYPES[1:])),
    principal: str | None = Query(None, description="TYPE:name; empty: any principal"),
    host: str | None = Query(None, description="Empty: any host"),
    operation: str | None = Query(None, description="Required: " + ", ".join(OPERATIONS[1:])),
    permission: str | None = Query(None, description="Required: " + ", ".join(PERMISSIONS[1:])),
) -> AclTerms:
    """A search's or deletion's query parameters (checked by ``acl_filters``: 400 as REST Proxy)."""
    return AclTerms(
        resource_type, resource_name, pattern_type, principal, host, operation, permission
    )


Terms = Annotated[AclTerms, Depends(acl_terms)]


@router.get("/acls", response_model=AclDataList, summary="Search ACLs")
async def search_acls(at: At, ctx: Ctx, terms: Terms) -> AclDataList:
    found = await kafka_acls.describe_acls(ctx.cluster, binding_filter(terms))
    return AclDataList(metadata=at.listing("acls"), data=[_data(at, acl) for acl in found])


@router.post(
    "/acls", status_code=201, response_class=Response, summary="Create an ACL", responses={201: {}}
)
async def create_acl(at: At, ctx: Ctx, body: CreateAclRequest) -> Response:
    acl = binding(AclTerms(**body.model_dump()))
    await kafka_acls.create_acls(ctx.cluster, [acl])
    fields = rest_fields(acl)
    return Response(status_code=201, headers={"Location": f"{at.url('acls')}?{urlencode(fields)}"})


@router.delete("/acls", response_model=DeleteAclsResponse, summary="Delete the matching ACLs")
async def delete_acls(at: At, ctx: Ctx, terms: Terms) -> DeleteAclsResponse:
    deleted = await kafka_acls.delete_acls(ctx.cluster, binding_filter(terms))
    return DeleteAclsResponse(data=[_data(at, acl) for acl in deleted])
