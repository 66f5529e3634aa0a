"""Live credential checks, against an Armada API that requires them (the embedded server has no auth).

The doctor sends what the connector's settings say (ARMADA_FLYTE_AUTH_TOKEN, or
ARMADA_FLYTE_AUTH_USERNAME/PASSWORD) and tells UNAUTHENTICATED from PERMISSION_DENIED.
"""

from __future__ import annotations

import pytest


def _by_check(report):
    return {f["check"]: f for f in report["findings"]}


def test_valid_bearer_token_is_accepted(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "good-token")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada, "--queue", "flyte")
    assert code == 0, report
    found = _by_check(report)
    assert found["armada.auth"]["message"] == "Armada accepted a bearer token (ARMADA_FLYTE_AUTH_TOKEN)"
    assert found["armada.queue"]["ok"]


def test_valid_basic_auth_is_accepted(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_USERNAME", "bob")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_PASSWORD", "s3cret")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada)
    assert code == 0, report
    assert (
        _by_check(report)["armada.auth"]["message"]
        == "Armada accepted basic auth as 'bob' (ARMADA_FLYTE_AUTH_USERNAME)"
    )


def test_bad_token_is_reported_as_rejected_credentials(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "expired-token")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada)
    assert code == 1
    found = _by_check(report)
    assert found["armada.reachable"]["ok"], "Armada answered, even if only to refuse"
    assert "UNAUTHENTICATED to a health check" in found["armada.reachable"]["message"]
    auth = found["armada.auth"]
    assert not auth["ok"]
    assert auth["message"].startswith(
        f"Armada at {auth_armada} rejected the credentials (a bearer token (ARMADA_FLYTE_AUTH_TOKEN)): UNAUTHENTICATED"
    )
    assert "a token may have expired" in auth["fix"]
    assert "armada.queue" not in found, "the queue can't be checked without accepted credentials"


def test_bad_password_is_reported_as_rejected_credentials(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_USERNAME", "bob")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_PASSWORD", "wrong")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada)
    assert code == 1
    assert "rejected the credentials (basic auth as 'bob'" in _by_check(report)["armada.auth"]["message"]


def test_missing_credentials_say_which_settings_to_set(doctor_json, auth_armada):
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada)
    assert code == 1
    auth = _by_check(report)["armada.auth"]
    assert auth["message"].startswith(
        f"Armada at {auth_armada} requires credentials and none are configured: UNAUTHENTICATED"
    )
    assert "ARMADA_FLYTE_AUTH_TOKEN" in auth["fix"] and "ARMADA_FLYTE_AUTH_USERNAME" in auth["fix"]


def test_identity_without_rights_is_told_apart_from_bad_credentials(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "viewer-token")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada, "--queue", "flyte")
    assert code == 1
    auth = _by_check(report)["armada.auth"]
    assert auth["message"].startswith(
        f"Armada at {auth_armada} accepted a bearer token (ARMADA_FLYTE_AUTH_TOKEN) but refused access to queue 'flyte'"
    )
    assert "lacks permission to view queue" in auth["message"]
    assert auth["fix"].startswith("grant this identity permission on queue 'flyte'")


def test_missing_queue_behind_auth_is_a_queue_problem_not_an_auth_one(doctor_json, auth_armada, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "good-token")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada, "--queue", "ml")
    assert code == 1
    found = _by_check(report)
    assert found["armada.auth"]["ok"]
    assert found["armada.queue"]["message"].startswith("queue 'ml' does not exist")
    assert found["armada.queue"]["fix"].startswith("create it (armadactl create queue ml)")


def test_server_serving_queues_only_on_submit_is_still_checked(
    doctor_json, auth_armada_without_queue_service, monkeypatch
):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "good-token")
    code, report = doctor_json("--preset", "gke", "--armada-url", auth_armada_without_queue_service, "--queue", "flyte")
    assert code == 0, report
    assert _by_check(report)["armada.queue"]["message"] == "queue 'flyte' exists"


@pytest.mark.pure
def test_unreadable_ca_bundle_is_a_problem_before_any_call(doctor_json, tmp_path, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_ARMADA_TLS", "true")
    monkeypatch.setenv("ARMADA_FLYTE_ARMADA_CA_CERT", str(tmp_path / "absent.pem"))
    code, report = doctor_json("--preset", "gke", "--armada-url", "127.0.0.1:1")
    assert code == 1
    [live] = [f for f in report["findings"] if f["check"].startswith("armada.")]
    assert live["check"] == "armada.reachable"
    assert live["message"].startswith("can't read the CA bundle")


@pytest.mark.pure
def test_invalid_connector_settings_stop_the_live_checks(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_USERNAME", "bob")
    code, report = doctor_json("--preset", "gke", "--armada-url", "127.0.0.1:1")
    assert code == 1
    [live] = [f for f in report["findings"] if f["check"].startswith("armada.")]
    assert live["check"] == "armada.settings"
    assert "auth_username and auth_password (or auth_password_file) go together" in live["message"]
