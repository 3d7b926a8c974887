"""``/v3/clusters/{id}/user-scram-credentials``: users' SCRAM credentials, in the v3 style
(Kafka's REST Proxy has no such resource; these names follow its shape and KIP-554's).

Listing answers each user's mechanisms and iteration counts, never a salt, key or password;
setting a password (PUT, create or change) salts it on the gateway as Kafka's admin client
does and sends AlterUserScramCredentials; deleting removes one mechanism's credential. Rights
are Kafka's: DESCRIBE on the cluster to list, ALTER on the cluster to change
(``rest_acls.py``). Kafka's errors keep their meaning: an unknown user is 404, too few or too
many iterations 400 (UNACCEPTABLE_CREDENTIAL), an unknown mechanism is refused before sending.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from pafka.client import scram_users as kafka_scram
from pafka.security.scram_credentials import DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS
from services.gateway.context import Ctx
from services.gateway.models.admin import ListMetadata, Resource
from services.gateway.v3 import At, Links

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["SCRAM users (v3)"])

USERS = "user-scram-credentials"
Mechanism = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
MAX_PASSWORD = 1024


class ScramCredentialInfo(BaseModel):
    mechanism: str
    iterations: int


class UserScramCredentials(Resource):
    cluster_id: str
    user_name: str
    credentials: list[ScramCredentialInfo]


class UserScramCredentialsList(BaseModel):
    kind: str = "KafkaUserScramCredentialList"
    metadata: ListMetadata
    data: list[UserScramCredentials]


class SetPassword(BaseModel):
    mechanism: Mechanism = "SCRAM-SHA-512"
    iterations: int = Field(DEFAULT_ITERATIONS, ge=MIN_ITERATIONS, le=MAX_ITERATIONS)
    password: str = Field(
        min_length=1,
        max_length=MAX_PASSWORD,
        description="Salted on the gateway; never stored or answered",
        json_schema_extra={"format": "password", "writeOnly": True},
    )


def _user(at: Links, described: kafka_scram.UserCredentials) -> UserScramCredentials:
    return UserScramCredentials(
        kind="KafkaUserScramCredential",
        metadata=at.meta(USERS, described.user, crn=f"/user={described.user}"),
        cluster_id=at.cluster_id,
        user_name=described.user,
        credentials=[
            ScramCredentialInfo(mechanism=c.mechanism, iterations=c.iterations)
            for c in described.credentials
        ],
    )


@router.get(
    f"/{USERS}",
    response_model=UserScramCredentialsList,
    summary="Users with SCRAM credentials: mechanisms and iterations",
)
async def list_users(at: At, ctx: Ctx) -> UserScramCredentialsList:
    described = await kafka_scram.describe(ctx.cluster)
    return UserScramCredentialsList(
        metadata=at.listing(USERS), data=[_user(at, d) for d in described]
    )


@router.get(
    f"/{USERS}/{{user_name}}",
    response_model=UserScramCredentials,
    summary="One user's SCRAM mechanisms and iterations",
)
async def get_user(user_name: str, at: At, ctx: Ctx) -> UserScramCredentials:
    (described,) = await kafka_scram.describe(ctx.cluster, [user_name])
    return _user(at, described)


@router.put(
    f"/{USERS}/{{user_name}}",
    status_code=204,
    response_class=Response,
    summary="Set a user's password for one mechanism (creating the user if new)",
)
async def set_password(user_name: str, at: At, ctx: Ctx, body: SetPassword) -> Response:
    await kafka_scram.upsert(ctx.cluster, user_name, body.mechanism, body.password, body.iterations)
    return Response(status_code=204)


@router.delete(
    f"/{USERS}/{{user_name}}",
    status_code=204,
    response_class=Response,
    summary="Delete a user's credential of one mechanism",
)
async def delete_credential(
    user_name: str, at: At, ctx: Ctx, mechanism: Mechanism = Query(...)
) -> Response:
    await kafka_scram.delete(ctx.cluster, user_name, mechanism)
    return Response(status_code=204)
