"""ZooKeeper ACL choice per path (Kafka's ZkData.defaultAcls) and the credentials' parsing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.zk import znodes
from pafka.zk.security import (
    ZkAuth,
    ZkSecurity,
    acl_for,
    describe_acls,
    may_write,
    parse_zk_auth,
    read_zk_security,
    sensitive,
)

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
WORLD_ALL = ACL(Permissions.ALL, Id("world", "anyone"))


@pytest.mark.parametrize(
    "path",
    [
        "/brokers/ids",
        "/brokers/ids/1",
        "/brokers/topics/t/partitions/0/state",
        "/config/topics/t",
        "/config/changes/config_change_0000000001",
        "/controller",
        "/cluster/id",
        "/consumers/g/offsets/t/0",
        "/kafka-acl/Topic/t",
        "/config/usersx",
    ],
)
def test_ordinary_paths_are_creator_all_and_world_read(path: str) -> None:
    assert acl_for(path, secure=True) == [CREATOR_ALL, WORLD_READ]


@pytest.mark.parametrize(
    "path",
    [
        "/config/users",
        "/config/users/alice",
        "/config/users/alice/clients/c",
        "/config/brokers",
        "/config/brokers/<default>",
        "/delegation_token/tokens/x",
    ],
)
def test_sensitive_paths_are_not_world_readable(path: str) -> None:
    assert sensitive(path)
    assert acl_for(path, secure=True) == [CREATOR_ALL]


def test_the_old_consumers_root_stays_open_but_not_its_children() -> None:
    assert acl_for(znodes.CONSUMERS, secure=True) == [WORLD_ALL]
    assert acl_for(znodes.CONSUMERS + "/g", secure=True) == [CREATOR_ALL, WORLD_READ]


@given(st.text(alphabet="abc/_-0123456789", min_size=1).map(lambda s: "/" + s))
def test_without_acls_every_path_is_open(path: str) -> None:
    assert acl_for(path, secure=False) == [WORLD_ALL]


def test_digest_credentials_parse() -> None:
    auth = parse_zk_auth("digest:pafka:s3:cr:et\n", "X")
    assert (auth.scheme, auth.user, auth.password) == ("digest", "pafka", "s3:cr:et")
    assert auth.credential == "pafka:s3:cr:et"
    assert auth.identity == make_digest_acl_credential("pafka", "s3:cr:et")
    assert "s3:cr:et" not in repr(auth)


@pytest.mark.parametrize(
    "text", ["pafka:secret", "sasl:pafka:secret", "digest:pafka", "digest::secret", "digest:u:"]
)
def test_bad_credentials_are_refused_naming_the_setting(text: str) -> None:
    with pytest.raises(ConfigError, match="PAFKA_BROKER_ZK_AUTH"):
        parse_zk_auth(text, "PAFKA_BROKER_ZK_AUTH")


def test_settings_default_acls_on_with_auth_and_off_without() -> None:
    env = Env.of("PAFKA_BROKER_", {"PAFKA_BROKER_ZK_AUTH": "digest:u:p"})
    assert read_zk_security(env) == ZkSecurity(ZkAuth("digest", "u", "p"), set_acl=True)
    assert read_zk_security(Env.of("PAFKA_BROKER_", {})) == ZkSecurity(None, set_acl=False)
    off = Env.of(
        "PAFKA_BROKER_", {"PAFKA_BROKER_ZK_AUTH": "digest:u:p", "PAFKA_BROKER_ZK_SET_ACL": "false"}
    )
    assert read_zk_security(off).set_acl is False


def test_acls_without_an_identity_are_refused() -> None:
    with pytest.raises(ConfigError, match="ZK_AUTH"):
        read_zk_security(Env.of("P_", {"P_ZK_SET_ACL": "true"}))


def test_credentials_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "zk-auth"
    secret.write_text("digest:u:from-file\n")
    env = Env.of("P_", {"P_ZK_AUTH_FILE": str(secret)})
    assert read_zk_security(env).auth == ZkAuth("digest", "u", "from-file")
    with pytest.raises(ConfigError, match="not both"):
        read_zk_security(Env.of("P_", {"P_ZK_AUTH_FILE": str(secret), "P_ZK_AUTH": "digest:u:p"}))
    with pytest.raises(ConfigError, match="cannot read"):
        read_zk_security(Env.of("P_", {"P_ZK_AUTH_FILE": str(tmp_path / "missing")}))


def test_who_may_write_a_stored_acl() -> None:
    owner = ZkAuth("digest", "pafka", "right")
    stored = [ACL(Permissions.ALL, Id("digest", owner.identity)), WORLD_READ]
    assert may_write(stored, owner)
    assert not may_write(stored, ZkAuth("digest", "pafka", "wrong"))
    assert not may_write(stored, None)
    assert may_write([WORLD_ALL], None)
    assert describe_acls(stored) == f"digest:{owner.identity}:cdrwa, world:anyone:r"
