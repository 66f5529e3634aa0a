"""What every local HTTP server of ours answers: requests whose Host names this machine (or a name the user
allowed), then, with credentials, only those carrying one; and that no credential shows in a repr."""

from __future__ import annotations

import pytest

from armada_flyte.http_guard import HttpGuard, host_name
from armada_flyte.server_credentials import ClientCredential, Credentials

from support.http_access import basic

pytestmark = pytest.mark.pure

ACCEPTED = Credentials.parse(["basic:ann:pw-1", "bearer:tok-1"])


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8080",
        "127.0.0.1",
        "127.1.2.3:80",
        "localhost:41235",
        "LOCALHOST:41235",
        "localhost.:9",
        "[::1]:8080",
        "flyte.localhost:41235",  # *.localhost never leaves the machine (RFC 6761)
        "localhost:1",  # any port: an ssh -L forward to another port still works
    ],
)
def test_a_host_naming_this_machine_is_answered(host):
    assert HttpGuard().refusal(host, None) is None


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8080",  # a name its owner rebinds to 127.0.0.1
        "evil.example",
        "127.0.0.1.evil.example",
        "localhost.evil.example",
        "10.0.0.5:8080",
        "",
        None,
    ],
)
def test_any_other_host_is_misdirected(host):
    refusal = HttpGuard().refusal(host, None)
    assert refusal is not None and (refusal.status, refusal.reason) == (421, "Misdirected Request")
    assert "--allow-host" in refusal.message


def test_a_name_the_user_allowed_is_answered_with_any_port():
    guard = HttpGuard.of(None, ["DevBox"])
    assert guard.refusal("devbox:8080", None) is None
    assert guard.refusal("other:8080", None).status == 421
    assert "devbox" in guard.refusal("other:8080", None).message


@pytest.mark.parametrize(
    "header",
    [basic("ann", "pw-1"), "Bearer tok-1", "bearer tok-1", basic("anyone", "tok-1")],
    ids=["basic", "bearer", "bearer-lowercase", "token-as-basic-password"],
)
def test_with_credentials_a_request_carrying_one_is_answered(header):
    assert HttpGuard(ACCEPTED).refusal("127.0.0.1:1", header) is None


@pytest.mark.parametrize(
    "header",
    [None, "", basic("ann", "wrong"), basic("bob", "pw-1"), "Bearer nope", "Basic !!!", "token tok-1"],
)
def test_with_credentials_anything_else_is_unauthorized_with_a_basic_challenge(header):
    refusal = HttpGuard(ACCEPTED).refusal("127.0.0.1:1", header)
    assert refusal is not None and (refusal.status, refusal.reason) == (401, "Unauthorized")
    assert refusal.challenge == 'Basic realm="armada-flyte", charset="UTF-8"'


def test_the_host_is_checked_before_the_credentials_so_a_rebound_page_gets_no_login_prompt():
    refusal = HttpGuard(ACCEPTED).refusal("evil.example:1", None)
    assert refusal.status == 421 and refusal.challenge is None


def test_a_token_is_a_password_only_for_the_browser_facing_check():
    assert ACCEPTED.user_of(basic("anyone", "tok-1")) is None  # Armada's gRPC check: as Armada does
    assert ACCEPTED.user_of(basic("anyone", "tok-1"), token_as_password=True) == "bearer"


@pytest.mark.parametrize(
    ("header", "name"),
    [("a.example:80", "a.example"), ("[::1]:8080", "::1"), ("::1", "::1"), ("Example.", "example")],
)
def test_a_host_headers_name_is_read_without_its_port(header, name):
    assert host_name(header) == name


def test_no_credential_shows_in_a_repr():
    shown = repr(ACCEPTED) + repr(ACCEPTED.one()) + repr(ClientCredential(user="ann", password="pw-1"))
    shown += repr(HttpGuard(ACCEPTED))
    assert "pw-1" not in shown and "tok-1" not in shown


def test_one_credential_for_our_own_clients_is_a_token_when_there_is_one():
    assert ACCEPTED.one() == ClientCredential(token="tok-1")
    assert Credentials.parse(["basic:ann:pw-1"]).one() == ClientCredential(user="ann", password="pw-1")
