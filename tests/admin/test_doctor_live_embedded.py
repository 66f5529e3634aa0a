"""Live checks against the embedded Armada server over a real socket: reachable, queue present or missing.

Credentials are covered in test_doctor_live_auth.py: the embedded server has no authentication.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig


@pytest.fixture(scope="module")
def armada() -> Iterator[EmbeddedArmada]:
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        yield server


def _by_check(report):
    return {f["check"]: f for f in report["findings"]}


def test_reachable_server_with_the_queue_passes(doctor_json, armada):
    code, report = doctor_json("--preset", "embedded", "--armada-url", armada.url, "--queue", "flyte")
    assert code == 0, report
    found = _by_check(report)
    assert found["armada.reachable"]["message"] == f"Armada at {armada.url} (plaintext) answered: SERVING"
    assert found["armada.auth"]["message"] == "Armada accepted no credentials"
    assert found["armada.queue"]["message"] == "queue 'flyte' exists"


def test_queue_defaults_to_flyte(doctor_json, armada):
    code, report = doctor_json("--preset", "embedded", "--armada-url", armada.url)
    assert code == 0, report
    assert _by_check(report)["armada.queue"]["message"] == "queue 'flyte' exists"


def test_missing_queue_is_a_problem_with_the_command_to_create_it(doctor_json, armada):
    code, report = doctor_json("--preset", "embedded", "--armada-url", armada.url, "--queue", "ml")
    assert code == 1
    queue = _by_check(report)["armada.queue"]
    assert not queue["ok"]
    assert queue["message"] == (
        f"queue 'ml' does not exist on Armada at {armada.url}: every submission to it fails with PERMISSION_DENIED"
    )
    assert queue["fix"].startswith("create it (armadactl create queue ml)")
    assert _by_check(report)["armada.auth"]["ok"]


def test_queue_alone_checks_the_armada_the_connector_settings_name(doctor_json, armada, monkeypatch):
    monkeypatch.setenv("ARMADA_URL", armada.url)
    code, report = doctor_json("--preset", "embedded", "--queue", "flyte")
    assert code == 0, report
    assert _by_check(report)["armada.reachable"]["message"].startswith(f"Armada at {armada.url} ")


def test_bearer_token_is_sent_without_harm_to_a_server_without_auth(doctor_json, armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "any-token")
    code, report = doctor_json("--preset", "embedded", "--armada-url", armada.url)
    assert code == 0, report
    assert _by_check(report)["armada.auth"]["message"] == "Armada accepted a bearer token (ARMADA_FLYTE_AUTH_TOKEN)"


def test_nothing_listening_is_unreachable_and_stops_the_other_live_checks(doctor_json, closed_port):
    url = f"127.0.0.1:{closed_port}"
    code, report = doctor_json("--preset", "embedded", "--armada-url", url, "--queue", "flyte")
    assert code == 1
    found = _by_check(report)
    reachable = found["armada.reachable"]
    assert not reachable["ok"]
    assert reachable["message"].startswith(f"Armada at {url} (plaintext) did not answer: UNAVAILABLE")
    assert "ARMADA_FLYTE_ARMADA_TLS matches the server" in reachable["fix"]
    assert "armada.auth" not in found and "armada.queue" not in found


def test_table_output_shows_the_live_rows(doctor, armada):
    code, out = doctor("--preset", "embedded", "--armada-url", armada.url, "--queue", "ml")
    assert code == 1
    assert "ok       armada.reachable" in out
    assert "PROBLEM  armada.queue" in out
    assert "fix: create it (armadactl create queue ml)" in out


@pytest.fixture
def refusing(tmp_path):
    from support.full_disk import refusing_server

    with refusing_server(tmp_path) as server:
        yield server


def test_a_server_whose_state_cannot_be_written_is_a_problem_with_the_fix(doctor_json, refusing):
    code, report = doctor_json("--preset", "embedded", "--armada-url", refusing.url, "--queue", "cli")
    assert code == 1
    found = _by_check(report)
    assert found["armada.reachable"]["message"] == f"Armada at {refusing.url} (plaintext) answered: NOT_SERVING"
    serving = found["armada.serving"]
    assert not serving["ok"]
    assert serving["message"].startswith(
        f"Armada at {refusing.url} reports NOT_SERVING: the embedded server cannot write its state folder "
    )
    assert serving["fix"].startswith("free space on that disk")
    assert found["armada.queue"]["ok"]  # reads go on, so the later checks still run
