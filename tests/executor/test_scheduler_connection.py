"""The executor's options for reaching the scheduler: TLS, credentials from files, and no plaintext off
this machine unless the admin says so."""

from __future__ import annotations

import base64

import pytest

from armada_flyte.admin.cli import main
from armada_flyte.errors import InvalidConfig
from armada_flyte.executor.scheduler_connection import scheduler_connection

pytestmark = pytest.mark.pure


def test_plaintext_to_a_scheduler_on_another_machine_is_refused_naming_the_fix():
    with pytest.raises(InvalidConfig, match="--tls") as info:
        scheduler_connection("armada.example.com:50052")
    assert "--insecure" in str(info.value)


@pytest.mark.parametrize("target", ["127.0.0.1:50052", "localhost:50052", "[::1]:50052"])
def test_plaintext_to_this_machine_needs_no_flag(target):
    assert not scheduler_connection(target).tls


def test_insecure_or_tls_reaches_another_machine():
    assert scheduler_connection("10.0.0.5:50052", insecure=True).target == "10.0.0.5:50052"
    assert scheduler_connection("armada.example.com:50052", tls=True).tls


def test_basic_auth_reads_the_password_from_its_file(tmp_path):
    password = tmp_path / "password"
    password.write_text("s3cret-pw\n")
    connection = scheduler_connection("127.0.0.1:1", username="bed", password_file=str(password))
    ((name, value),) = connection.metadata()
    assert name == "authorization" and value == "basic " + base64.b64encode(b"bed:s3cret-pw").decode()
    assert "s3cret-pw" not in repr(connection)


def test_a_token_file_gives_a_bearer_header(tmp_path):
    token = tmp_path / "token"
    token.write_text("tok-123")
    assert scheduler_connection("127.0.0.1:1", token_file=str(token)).metadata() == (
        ("authorization", "Bearer tok-123"),
    )


def test_without_credentials_no_metadata_is_sent():
    assert scheduler_connection("127.0.0.1:1").metadata() == ()


@pytest.mark.parametrize(
    "options, named",
    [
        ({"username": "bed"}, "--auth-password-file"),
        ({"password_file": "/nonexistent"}, "--auth-username"),
        ({"ca_cert": "/ca.pem"}, "--ca-cert"),
    ],
)
def test_incomplete_options_name_the_option(options, named):
    with pytest.raises(InvalidConfig, match=named):
        scheduler_connection("127.0.0.1:1", **options)


def test_an_unreadable_password_file_is_named_without_its_content(tmp_path):
    with pytest.raises(InvalidConfig, match="--auth-password-file") as info:
        scheduler_connection("127.0.0.1:1", username="bed", password_file=str(tmp_path / "missing"))
    assert "cannot be read" in str(info.value)


def test_the_command_refuses_a_remote_plaintext_scheduler_before_anything_starts(capsys):
    assert main(["executor", "--scheduler", "armada.example.com:50052"]) == 1
    assert "--scheduler='armada.example.com:50052' is invalid" in capsys.readouterr().err
