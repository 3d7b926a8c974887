"""The broker's authorizer settings and the parts of its notification handling that are pure."""

from __future__ import annotations

import pytest

from pafka.errors import ConfigError
from pafka.security.acl_authorizer import change_sequence, expired_notification
from pafka.security.principal import KafkaPrincipal
from services.broker.settings import BrokerSettings

BASE = {"PAFKA_BROKER_ID": "1"}


def test_no_authorizer_by_default() -> None:
    settings = BrokerSettings.from_env(BASE)
    assert settings.authorizer == ""
    assert settings.acl.super_users == frozenset()
    assert settings.acl.allow_everyone_if_no_acl_found is False


def test_acl_authorizer_with_super_users() -> None:
    settings = BrokerSettings.from_env(
        {
            **BASE,
            "PAFKA_BROKER_AUTHORIZER": "kafka.security.authorizer.AclAuthorizer",
            "PAFKA_BROKER_SUPER_USERS": "User:admin; User:CN=broker,O=pafka ;",
            "PAFKA_BROKER_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true",
        }
    )
    assert settings.authorizer == "acl"
    assert settings.acl.super_users == {
        KafkaPrincipal.user("admin"),
        KafkaPrincipal.user("CN=broker,O=pafka"),
    }
    assert settings.acl.allow_everyone_if_no_acl_found


@pytest.mark.parametrize(
    "env",
    [{"PAFKA_BROKER_AUTHORIZER": "simple"}, {"PAFKA_BROKER_SUPER_USERS": "admin"}],
)
def test_bad_authorizer_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        BrokerSettings.from_env({**BASE, **env})


def test_notifications_expire_after_fifteen_minutes_as_in_kafka() -> None:
    created_ms = 1_000_000
    assert not expired_notification(created_ms + 15 * 60 * 1000, created_ms)
    assert expired_notification(created_ms + 15 * 60 * 1000 + 1, created_ms)


def test_change_sequence() -> None:
    assert change_sequence("acl_changes_0000000042") == 42
    assert change_sequence("acl_changes_") is None
    assert change_sequence("something_else") is None
