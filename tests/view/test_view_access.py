"""Who the local view answers. It reads Armada with credentials of its own (beside `armada-flyte dev --auth`,
the server's), so it must not hand what it reads to anyone else: a request whose Host doesn't name this
machine (a web page reaching it through a DNS name rebound to 127.0.0.1) is misdirected, and with
credentials every page needs one (the browser's login prompt). An idle client can't hold it."""

from __future__ import annotations

import contextlib
from typing import Iterator

import pytest

from armada_flyte.connector.config.settings import settings_from
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.http_guard import HttpGuard
from armada_flyte.view.http_server import ViewServer, serving

from support.http_access import assert_idle_client_dropped, basic, request

AUTH = ("basic:ann:pw-1", "bearer:tok-1")
IDLE_SECONDS = 1.0
QUEUE_ROW = 'data-queue="viewed"'


@pytest.fixture(scope="module")
def armada() -> Iterator[EmbeddedArmada]:
    with EmbeddedArmada(EmbeddedConfig(queues=("viewed",), auth=AUTH)) as server:
        yield server


@contextlib.contextmanager
def _view(armada: EmbeddedArmada, guard: HttpGuard) -> Iterator[ViewServer]:
    settings = settings_from(armada_url=armada.url, auth_token="tok-1")
    with serving(settings, lambda: [], port=0, guard=guard) as view:
        yield view


@pytest.fixture(scope="module")
def guarded(armada: EmbeddedArmada) -> Iterator[ViewServer]:
    """The view as `dev --auth` serves it: the server's credentials, a short idle timeout, one extra name."""
    guard = HttpGuard.of(armada.config.credentials, ["devbox"], IDLE_SECONDS)
    with _view(armada, guard) as view:
        yield view


@pytest.mark.parametrize(
    "header",
    [basic("ann", "pw-1"), "Bearer tok-1", basic("ann", "tok-1")],
    ids=["basic", "bearer", "token-typed-into-the-login-prompt"],
)
def test_with_a_credential_the_page_shows_what_armada_told_the_view(guarded, header) -> None:
    status, _, page = request(guarded.url, authorization=header)
    assert status == 200 and QUEUE_ROW in page


@pytest.mark.parametrize("header", [None, basic("ann", "wrong"), "Bearer nope"], ids=["none", "wrong", "unknown"])
@pytest.mark.parametrize("path", ["/", "/jobs/01hzzzzzzzzzzzzzzzzzzzzzzz", "/nosuch"])
def test_without_one_every_page_asks_the_browser_for_credentials_and_shows_nothing(guarded, header, path) -> None:
    status, headers, body = request(guarded.url, path, authorization=header)
    assert status == 401
    assert headers["www-authenticate"] == 'Basic realm="armada-flyte", charset="UTF-8"'
    assert QUEUE_ROW not in body and "viewed" not in body


def test_a_rebound_host_is_misdirected_even_with_a_credential_and_gets_no_login_prompt(guarded) -> None:
    port = guarded.url.rsplit(":", 1)[1].strip("/")
    status, headers, body = request(guarded.url, host=f"attacker.example:{port}", authorization="Bearer tok-1")
    assert status == 421 and "www-authenticate" not in headers and QUEUE_ROW not in body


def test_a_name_the_user_allowed_is_served(guarded) -> None:
    assert request(guarded.url, host="devbox:8080", authorization="Bearer tok-1")[0] == 200


def test_without_credentials_the_view_still_refuses_a_rebound_host(armada) -> None:
    with _view(armada, HttpGuard()) as view:
        assert request(view.url, host="attacker.example")[0] == 421
        status, _, page = request(view.url)
        assert status == 200 and QUEUE_ROW in page


def test_an_idle_client_is_dropped_while_others_are_served(guarded) -> None:
    def served() -> None:
        assert request(guarded.url, authorization="Bearer tok-1")[0] == 200

    assert_idle_client_dropped(guarded.url, IDLE_SECONDS, served)
