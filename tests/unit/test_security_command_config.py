"""A Kafka tool's --command-config file read into pafka's client security (pure)."""

from __future__ import annotations

import pytest

from pafka.errors import ConfigError
from pafka.security.command_config import client_security, parse_properties
from pafka.security.listeners import SecurityProtocol


def test_properties_as_java_reads_them() -> None:
    text = (
        "# comment\n! also a comment\n\n"
        "security.protocol = SASL_SSL\n"
        "sasl.mechanism: PLAIN\n"
        "ssl.ca.location /etc/ca.pem\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '   username="bob" password="p=a\\"ss";\n'
    )
    props = parse_properties(text)
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "PLAIN"
    assert props["ssl.ca.location"] == "/etc/ca.pem"
    security = client_security(props)
    assert security.protocol is SecurityProtocol.SASL_SSL
    assert (security.sasl_username, security.sasl_password) == ("bob", 'p=a"ss')
    assert security.tls.cafile == "/etc/ca.pem"


def test_librdkafka_names_and_hostname_checks() -> None:
    security = client_security(
        {
            "security.protocol": "ssl",
            "ssl.certificate.location": "c.pem",
            "ssl.key.location": "k.pem",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert (security.tls.certfile, security.tls.keyfile) == ("c.pem", "k.pem")
    assert security.check_hostname is False


def test_java_keystores_are_refused_clearly() -> None:
    with pytest.raises(ConfigError, match="PEM"):
        client_security({"security.protocol": "SSL", "ssl.truststore.location": "t.jks"})


def test_sasl_without_credentials_is_refused() -> None:
    with pytest.raises(ConfigError, match="user name"):
        client_security({"security.protocol": "SASL_PLAINTEXT"})
