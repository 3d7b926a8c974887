"""The console's ACL and users pages and its refusals, in a real headless Chromium.

Two clusters: the session's shared one (no authorizer), whose ACL page must say that the
brokers run without ACLs; and a small one of this module's own (one broker, one controller)
whose broker has Kafka's ACL authorizer, with a gateway beside it that takes HTTP Basic logins
(SCRAM passwords) and decides each call by the same ACLs. The gateway reaches the broker over
PLAINTEXT as ``User:ANONYMOUS``, made a super user of the broker here so the module needs no
SASL listener; the REST callers' rights are the gateway's to check (``rest_acls.py``).

With Basic auth the console asks for a user and password, refuses a wrong password clearly,
and then works; ``carol``, allowed on topics ``open-*`` only, sees that topic and a refusal on
another, and refusals on the ACL and users pages; ``admin`` (a super user of the gateway) lists,
creates, filters and deletes ACLs and sets (typed twice) and deletes a user's password, with
which that user then signs in. One browser for the module, the small cluster and its gateway
started once: the module took 34 s here beside the shared cluster, on 2 cores under a load
average of 8 (less on an idle machine). Screenshots go to the run's temporary folder.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from pafka.admin.acls import add_acls
from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from pafka.security.acls import (
    AccessControlEntry,
    AclBinding,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal
from tests.integration.chromium import browser_fixture, screenshots_fixture
from tests.integration.console_page import WAIT_MS, console, row
from tests.integration.gateway_process import gateway_process
from tests.integration.secure_cluster import add_scram_user

MECHANISM = "SCRAM-SHA-512"
PASSWORDS = {"admin": "admin-secret", "carol": "carol-secret"}
OPEN_TOPIC, CLOSED_TOPIC = "open-orders", "closed-ledger"


@dataclass(frozen=True)
class Secured:
    gateway: str
    cluster_id: str
    zk_connect: str = ""

    def headers(self, user: str, password: str | None = None) -> dict[str, str]:
        basic = f"{user}:{password or PASSWORDS[user]}".encode()
        return {"Authorization": f"Basic {base64.b64encode(basic).decode()}"}

    def v3(self, path: str = "") -> str:
        return f"{self.gateway}/v3/clusters/{self.cluster_id}{path}"


def _allow(principal: str, operation: Operation, name: str, pattern: PatternType) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, pattern),
        AccessControlEntry(KafkaPrincipal.parse(principal), "*", operation, PermissionType.ALLOW),
    )


# carol may see, read and see the configs of topics open-*, nothing else.
CAROL_ACLS = [
    _allow("User:carol", Operation.DESCRIBE, "open-", PatternType.PREFIXED),
    _allow("User:carol", Operation.READ, "open-", PatternType.PREFIXED),
    _allow("User:carol", Operation.DESCRIBE_CONFIGS, "open-", PatternType.PREFIXED),
]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("console-sec-zk")))
    zk.start()
    try:
        for user, password in PASSWORDS.items():
            add_scram_user(zk.connect_string, user, MECHANISM, password)
        client = KazooClient(hosts=zk.connect_string)
        client.start(timeout=15)
        add_acls(client, CAROL_ACLS)
        client.stop()
        client.close()
        local = LocalCluster(
            Path(tmp_path_factory.mktemp("console-sec")),
            brokers=1,
            controllers=1,
            zookeeper=zk.connect_string,
            broker_env={
                "PAFKA_BROKER_AUTHORIZER": "acl",
                "PAFKA_BROKER_SUPER_USERS": "User:ANONYMOUS",
            },
        )
        local.start()
        try:
            env = {
                "PAFKA_GATEWAY_BASIC_AUTH": "true",
                "PAFKA_GATEWAY_AUTHORIZER": "acl",
                "PAFKA_GATEWAY_SUPER_USERS": "User:admin",
            }
            logs = tmp_path_factory.mktemp("console-sec-gw")
            with gateway_process(zk.connect_string, logs, env) as url:
                admin = Secured(url, "", zk.connect_string)
                listing = httpx.get(f"{url}/v3/clusters", headers=admin.headers("admin"))
                cluster_id = listing.json()["data"][0]["cluster_id"]
                secured = Secured(url, cluster_id, zk.connect_string)
                for topic in (OPEN_TOPIC, CLOSED_TOPIC):
                    body = {"topic_name": topic, "partitions_count": 1, "replication_factor": 1}
                    made = httpx.post(
                        secured.v3("/topics"), json=body, headers=secured.headers("admin")
                    )
                    assert made.status_code == 201, made.text
                yield secured
        finally:
            local.stop()
    finally:
        zk.stop()


chromium = browser_fixture()
shots = screenshots_fixture("console-security-screenshots")


def sign_in_basic(page: Any, user: str, password: str) -> None:
    dialog = page.get_by_role("dialog", name="Credentials needed")
    dialog.wait_for(timeout=WAIT_MS)
    dialog.get_by_label("User and password").check()
    assert not dialog.get_by_label("Token", exact=True).is_visible()
    dialog.get_by_label("User", exact=True).fill(user)
    dialog.get_by_label("Password", exact=True).fill(password)
    dialog.get_by_role("button", name="Sign in").click()


def test_the_acl_rest_api_speaks_rest_proxy_v3(secured: Secured) -> None:
    admin, carol = secured.headers("admin"), secured.headers("carol")
    search = {"resource_type": "TOPIC", "pattern_type": "ANY", "operation": "ANY"}
    search["permission"] = "ANY"
    found = httpx.get(secured.v3("/acls"), params=search, headers=admin, timeout=30)
    assert found.status_code == 200, found.text
    assert found.json()["kind"] == "KafkaAclList"
    mine = [a for a in found.json()["data"] if a["principal"] == "User:carol"]
    assert {(a["resource_name"], a["pattern_type"], a["operation"]) for a in mine} == {
        ("open-", "PREFIXED", "DESCRIBE"),
        ("open-", "PREFIXED", "READ"),
        ("open-", "PREFIXED", "DESCRIBE_CONFIGS"),
    }
    assert mine[0]["kind"] == "KafkaAcl" and mine[0]["permission"] == "ALLOW"
    # REST Proxy's required filter fields and its refusals.
    unspecified = httpx.get(secured.v3("/acls"), headers=admin, timeout=30)
    assert (unspecified.status_code, unspecified.json()["error_code"]) == (400, 40000)
    assert "resource_type" in unspecified.json()["message"]
    refused = httpx.get(secured.v3("/acls"), params=search, headers=carol, timeout=30)
    assert (refused.status_code, refused.json()["error_code"]) == (403, 40301)
    assert "DESCRIBE Cluster" in refused.json()["message"]
    acl = {
        "resource_type": "GROUP",
        "resource_name": f"g-{uuid.uuid4().hex[:6]}",
        "pattern_type": "LITERAL",
        "principal": "User:erin",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    assert httpx.post(secured.v3("/acls"), json=acl, headers=carol).status_code == 403
    made = httpx.post(secured.v3("/acls"), json=acl, headers=admin, timeout=30)
    assert made.status_code == 201, made.text
    any_filter = {**acl, "operation": "ANY", "permission": "ANY", "pattern_type": "MATCH"}
    deleted = httpx.delete(secured.v3("/acls"), params=any_filter, headers=admin, timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert [{k: d[k] for k in acl} for d in deleted.json()["data"]] == [acl]
    # The users' credentials: mechanisms and iterations, never a secret.
    users = httpx.get(secured.v3("/user-scram-credentials"), headers=admin, timeout=30).json()
    carols = next(u for u in users["data"] if u["user_name"] == "carol")
    assert carols["credentials"] == [{"mechanism": MECHANISM, "iterations": 4096}]
    assert "salt" not in str(users) and PASSWORDS["carol"] not in str(users)
    assert httpx.get(secured.v3("/user-scram-credentials"), headers=carol).status_code == 403
    erin = secured.v3("/user-scram-credentials/erin")
    assert httpx.get(erin, headers=admin, timeout=30).status_code == 404
    body = {"mechanism": "SCRAM-SHA-256", "iterations": 8192, "password": "erin-secret"}
    assert httpx.put(erin, json=body, headers=admin, timeout=30).status_code == 204
    assert httpx.get(
        secured.v3("/topics"), headers=secured.headers("erin", "erin-secret")
    ).is_success
    described = httpx.get(erin, headers=admin, timeout=30).json()
    assert described["credentials"] == [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}]
    gone = httpx.delete(erin, params={"mechanism": "SCRAM-SHA-256"}, headers=admin, timeout=30)
    assert gone.status_code == 204
    assert httpx.get(erin, headers=admin, timeout=30).status_code == 404


def test_without_an_authorizer_only_a_token_for_every_topic_manages_users_and_acls(
    secured: Secured, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Topic globs name no right on the cluster: a narrow token could otherwise set admin's
    # password and log in as admin.
    env = {"PAFKA_GATEWAY_TOKENS": "every-topic *; narrow open-*"}
    logs = tmp_path_factory.mktemp("console-sec-tokens")
    with gateway_process(secured.zk_connect, logs, env) as url:
        users = f"{url}/v3/clusters/{secured.cluster_id}/user-scram-credentials"
        narrow, every = {"Authorization": "Bearer narrow"}, {"Authorization": "Bearer every-topic"}
        body = {"mechanism": MECHANISM, "password": "taken-over"}
        for method, target, json in (
            ("GET", users, None),
            ("PUT", f"{users}/admin", body),
            ("DELETE", f"{users}/admin?mechanism={MECHANISM}", None),
            ("GET", f"{users.rsplit('/', 1)[0]}/acls", None),
        ):
            refused = httpx.request(method, target, json=json, headers=narrow, timeout=30)
            assert (refused.status_code, refused.json()["error_code"]) == (403, 40301), target
        listed = httpx.get(users, headers=every, timeout=30)
        assert listed.status_code == 200, listed.text
    assert httpx.get(secured.v3("/topics"), headers=secured.headers("admin")).status_code == 200


def test_without_an_authorizer_the_acl_page_says_so(
    cluster: Any, chromium: Any, shots: Path
) -> None:
    # The shared cluster's brokers answer SECURITY_DISABLED (the gateway's 400).
    with console(chromium, cluster.gateways[0], failing=(400,)) as browser:
        page = browser.open("/acls")
        said = page.locator("#no-authorizer")
        said.wait_for(timeout=WAIT_MS)
        assert "No authorizer is configured" in said.inner_text()
        assert page.get_by_role("button", name="Create ACL").count() == 0
        page.screenshot(path=shots / "acls-no-authorizer.png", full_page=True)


def test_basic_auth_a_wrong_password_and_a_user_allowed_on_one_topic(
    secured: Secured, chromium: Any, shots: Path
) -> None:
    # 401s: the first call unsigned, then the wrong password; 403s: the closed topic's
    # partitions and configs, the open topic's sizes and the list's (DescribeLogDirs needs
    # DESCRIBE on the cluster), the ACL page and the users page.
    failing = (401, 401, 403, 403, 403, 403, 403, 403)
    with console(chromium, secured.gateway, failing=failing) as browser:
        page = browser.open(f"/topic/{CLOSED_TOPIC}")
        sign_in_basic(page, "carol", "not-her-password")
        wrong = page.get_by_text("did not accept these credentials")
        wrong.wait_for(timeout=WAIT_MS)
        assert "user name or password is wrong" in page.locator("#login-reason").inner_text()
        page.screenshot(path=shots / "basic-wrong-password.png")
        sign_in_basic(page, "carol", PASSWORDS["carol"])
        refusal = page.locator(".refusal").first
        refusal.wait_for(timeout=WAIT_MS)
        assert "Refused" in refusal.inner_text() and CLOSED_TOPIC in refusal.inner_text()
        assert page.locator("#who").inner_text() == "Signed in as carol"
        page.screenshot(path=shots / "basic-refused-topic.png", full_page=True)

        browser.open(f"/topic/{OPEN_TOPIC}")
        page.locator("#partitions-title ~ .scroll tbody tr").first.wait_for(timeout=WAIT_MS)
        page.locator("#topic-size", has_text="not permitted").wait_for(timeout=WAIT_MS)
        assert page.locator(".refusal").count() == 0
        browser.open("/topics")
        row(page, OPEN_TOPIC).filter(has_text="not permitted").wait_for(timeout=WAIT_MS)
        assert row(page, CLOSED_TOPIC).count() == 0  # the list shows what carol may describe

        for hash_route in ("/acls", "/users"):
            browser.open(hash_route)
            refusal = page.locator(".refusal")
            refusal.wait_for(timeout=WAIT_MS)
            assert "This needs DESCRIBE on the cluster" in refusal.inner_text()
        page.screenshot(path=shots / "users-refused.png", full_page=True)


def test_an_admin_manages_acls_and_passwords_through_the_ui(
    secured: Secured, chromium: Any, shots: Path
) -> None:
    dave = f"dave-{uuid.uuid4().hex[:6]}"
    password = f"pw-{uuid.uuid4().hex}"
    # 401s: the first call unsigned and one after each sign-out; 403s: dave's on the users and
    # ACL pages.
    with console(chromium, secured.gateway, failing=(401, 401, 401, 403, 403)) as browser:
        page = browser.open("/acls")
        sign_in_basic(page, "admin", PASSWORDS["admin"])
        carols = row(page, "User:carol")
        carols.nth(2).wait_for(timeout=WAIT_MS)

        create = page.locator("#acl-create-title + form")
        create.get_by_label("Resource type", exact=True).select_option("TOPIC")
        create.get_by_label("Resource name", exact=True).fill(OPEN_TOPIC)
        create.get_by_label("Principal", exact=True).fill(f"User:{dave}")
        create.get_by_label("Operation", exact=True).select_option("WRITE")
        create.get_by_role("button", name="Create ACL").click()
        page.get_by_text(f"ACL created: ALLOW User:{dave} to WRITE").wait_for(timeout=WAIT_MS)
        row(page, f"User:{dave}").wait_for(timeout=WAIT_MS)

        search = page.get_by_role("search", name="Filter ACLs")
        search.get_by_label("Filter by principal").fill(f"User:{dave}")
        search.get_by_role("button", name="Search ACLs").click()
        page.get_by_text("ACLs matching the filter").wait_for(timeout=WAIT_MS)
        page.locator("#acls-found ~ .scroll").get_by_text("1 ACLs").wait_for(timeout=WAIT_MS)
        assert page.locator("tbody tr").count() == 1
        page.screenshot(path=shots / "acls.png", full_page=True)

        delete = f"Delete the ACL: ALLOW User:{dave} from * to WRITE TOPIC {OPEN_TOPIC}"
        page.get_by_role("button", name=delete).click()
        page.get_by_label(f"Type User:{dave} to confirm").fill(f"User:{dave}")
        page.screenshot(path=shots / "acl-delete-confirmation.png")
        page.locator("#confirm-ok").click()
        page.get_by_text(f"Deleted 1 ACL: ALLOW User:{dave}").wait_for(timeout=WAIT_MS)
        page.get_by_text("0 ACLs").wait_for(timeout=WAIT_MS)

        browser.open("/users")
        row(page, "carol").wait_for(timeout=WAIT_MS)
        form = page.locator("#password-title ~ form")
        form.get_by_label("User name").fill(dave)
        form.get_by_label("New password", exact=True).fill(password)
        form.get_by_label("New password again").fill(password + "x")
        form.get_by_role("button", name="Set password", exact=True).click()
        page.get_by_text("the two passwords differ").wait_for(timeout=WAIT_MS)
        assert form.get_by_label("New password", exact=True).input_value() == ""
        form.get_by_label("New password", exact=True).fill(password)
        form.get_by_label("New password again").fill(password)
        form.get_by_role("button", name="Set password", exact=True).click()
        page.get_by_text(f"Password of {dave} set (SCRAM-SHA-512, 4096").wait_for(timeout=WAIT_MS)
        daves = row(page, dave)
        assert daves.locator("td").all_inner_texts()[:3] == [dave, MECHANISM, "4096"]
        assert password not in page.content()
        page.screenshot(path=shots / "users.png", full_page=True)

        # dave signs in with the password set above: the gateway knows him, the ACLs don't.
        page.get_by_role("button", name="Sign out").click()
        sign_in_basic(page, dave, password)
        page.locator(".refusal").wait_for(timeout=WAIT_MS)
        assert page.locator("#who").inner_text() == f"Signed in as {dave}"
        browser.open("/acls")
        page.locator("#acls-found, .refusal").first.wait_for(timeout=WAIT_MS)
        assert page.locator(".refusal").count() == 1

        page.get_by_role("button", name="Sign out").click()
        sign_in_basic(page, "admin", PASSWORDS["admin"])
        row(page, "User:carol").first.wait_for(timeout=WAIT_MS)
        browser.open("/users")
        row(page, dave).get_by_role("button", name=f"Delete {MECHANISM} of {dave}…").click()
        page.get_by_label(f"Type {dave} to confirm").fill(dave)
        page.locator("#confirm-ok").click()
        page.get_by_text(f"{dave}'s {MECHANISM} credential deleted.").wait_for(timeout=WAIT_MS)
        assert row(page, dave).count() == 0
