"""Every environment variable users already set still lands in the same setting, now that the settings
are grouped. The table is the contract, written down from the flat settings class it replaced."""

from __future__ import annotations

import pathlib
import re

import pytest

from armada_flyte.connector.config.settings import (
    ENV_NAMES,
    GROUP_OF,
    check_env_names,
    given_settings,
    resolve_settings,
)
from armada_flyte.connector.config.settings_groups import ENV_PREFIX

ROOT = pathlib.Path(__file__).parents[2]
SETTING_OF_ENV = {
    "ARMADA_URL": ("connection", "armada_url"),
    "ARMADA_FLYTE_ARMADA_URL": ("connection", "armada_url"),
    "ARMADA_FLYTE_ARMADA_TLS": ("connection", "armada_tls"),
    "ARMADA_FLYTE_ARMADA_CA_CERT": ("connection", "armada_ca_cert"),
    "ARMADA_FLYTE_ARMADA_ALLOW_PLAINTEXT_AUTH": ("connection", "armada_allow_plaintext_auth"),
    "ARMADA_FLYTE_AUTH_TOKEN": ("connection", "auth_token"),
    "ARMADA_FLYTE_AUTH_USERNAME": ("connection", "auth_username"),
    "ARMADA_FLYTE_AUTH_PASSWORD": ("connection", "auth_password"),
    "ARMADA_FLYTE_AUTH_PASSWORD_FILE": ("connection", "auth_password_file"),
    "ARMADA_FLYTE_OIDC_TOKEN_URL": ("connection", "oidc_token_url"),
    "ARMADA_FLYTE_OIDC_PROVIDER_URL": ("connection", "oidc_provider_url"),
    "ARMADA_FLYTE_OIDC_CLIENT_ID": ("connection", "oidc_client_id"),
    "ARMADA_FLYTE_OIDC_CLIENT_SECRET": ("connection", "oidc_client_secret"),
    "ARMADA_FLYTE_OIDC_CLIENT_SECRET_FILE": ("connection", "oidc_client_secret_file"),
    "ARMADA_FLYTE_OIDC_SCOPES": ("connection", "oidc_scopes"),
    "ARMADA_FLYTE_AUTH_EXEC_CMD": ("connection", "auth_exec_cmd"),
    "ARMADA_FLYTE_AUTH_EXEC_ARGS": ("connection", "auth_exec_args"),
    "ARMADA_FLYTE_AUTH_EXEC_CACHE_SECONDS": ("connection", "auth_exec_cache_seconds"),
    "ARMADA_FLYTE_GRPC_RETRIES": ("connection", "grpc_retries"),
    "ARMADA_FLYTE_GRPC_KEEPALIVE_SECONDS": ("connection", "grpc_keepalive_seconds"),
    "ARMADA_FLYTE_GRPC_TIMEOUT_SECONDS": ("connection", "grpc_timeout_seconds"),
    "ARMADA_FLYTE_BINOCULARS_URL": ("connection", "binoculars_url"),
    "ARMADA_FLYTE_LOOKOUT_URL_TEMPLATE": ("connection", "lookout_url_template"),
    "FLYTE_BLOB_ENDPOINT": ("blob", "blob_endpoint"),
    "ARMADA_FLYTE_BLOB_ENDPOINT": ("blob", "blob_endpoint"),
    "FLYTE_BLOB_ACCESS_KEY": ("blob", "blob_access_key"),
    "ARMADA_FLYTE_BLOB_ACCESS_KEY": ("blob", "blob_access_key"),
    "FLYTE_BLOB_SECRET_KEY": ("blob", "blob_secret_key"),
    "ARMADA_FLYTE_BLOB_SECRET_KEY": ("blob", "blob_secret_key"),
    "ARMADA_FLYTE_BLOB_REGION": ("blob", "blob_region"),
    "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": ("blob", "blob_credentials_secret"),
    "ARMADA_FLYTE_BLOB_CREDENTIALS_ACCESS_KEY_KEY": ("blob", "blob_credentials_access_key_key"),
    "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET_KEY_KEY": ("blob", "blob_credentials_secret_key_key"),
    "ARMADA_FLYTE_BLOB_WORKLOAD_IDENTITY": ("blob", "blob_workload_identity"),
    "ARMADA_FLYTE_NODE_GROUPS_FILE": ("targets", "node_groups_file"),
    "ARMADA_FLYTE_NODE_GROUPS_PRESET": ("targets", "node_groups_preset"),
    "ARMADA_FLYTE_FALLBACK_ARCHITECTURE": ("targets", "fallback_architecture"),
    "ARMADA_FLYTE_NAMESPACE_TEMPLATE": ("targets", "namespace_template"),
    "ARMADA_FLYTE_SECRET_ENV_VAR_PREFIX": ("targets", "secret_env_var_prefix"),
    "ARMADA_FLYTE_PLATFORM_MISMATCH_CATEGORIES": ("targets", "platform_mismatch_categories"),
    "ARMADA_FLYTE_ALLOWED_NAMESPACES": ("tenancy", "allowed_namespaces"),
    "ARMADA_FLYTE_ALLOWED_QUEUES": ("tenancy", "allowed_queues"),
    "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES": ("tenancy", "allow_privileged_pod_templates"),
    "ARMADA_FLYTE_POLL_INTERVAL_SECONDS": ("timeouts", "poll_interval_seconds"),
    "ARMADA_FLYTE_FIRST_POLL_SECONDS": ("timeouts", "first_poll_seconds"),
    "ARMADA_FLYTE_STREAM_TASK_LOGS": ("timeouts", "stream_task_logs"),
    "ARMADA_FLYTE_ACK_TIMEOUT_SECONDS": ("timeouts", "ack_timeout_seconds"),
    "ARMADA_FLYTE_ERROR_READ_TIMEOUT_SECONDS": ("timeouts", "error_read_timeout_seconds"),
    "ARMADA_FLYTE_ERROR_READ_GRACE_SECONDS": ("timeouts", "error_read_grace_seconds"),
    "ARMADA_FLYTE_QUEUED_REPORT_AFTER_SECONDS": ("timeouts", "queued_report_after_seconds"),
    "ARMADA_FLYTE_QUEUED_REPORT_REFRESH_SECONDS": ("timeouts", "queued_report_refresh_seconds"),
    "ARMADA_FLYTE_STATUS_EVENT_STREAMS": ("limits", "status_event_streams"),
    "ARMADA_FLYTE_STATUS_STREAMS_MAX": ("limits", "status_streams_max"),
    "ARMADA_FLYTE_STATUS_BATCH_WINDOW_SECONDS": ("limits", "status_batch_window_seconds"),
    "ARMADA_FLYTE_STATUS_REFRESH_SECONDS": ("limits", "status_refresh_seconds"),
    "ARMADA_FLYTE_STATUS_IDLE_SECONDS": ("limits", "status_idle_seconds"),
    "ARMADA_FLYTE_STATUS_STREAM_MAX_AGE_SECONDS": ("limits", "status_stream_max_age_seconds"),
    "ARMADA_FLYTE_STATUS_LIVE_CHECK_SECONDS": ("limits", "status_live_check_seconds"),
    "ARMADA_FLYTE_STATUS_ENDED_KEEP_SECONDS": ("limits", "status_ended_keep_seconds"),
    "ARMADA_FLYTE_SUBMIT_BATCH_WINDOW_SECONDS": ("limits", "submit_batch_window_seconds"),
    "ARMADA_FLYTE_SUBMIT_BATCH_MAX_ITEMS": ("limits", "submit_batch_max_items"),
    "ARMADA_FLYTE_SUBMIT_BATCH_MAX_WAIT_SECONDS": ("limits", "submit_batch_max_wait_seconds"),
    "ARMADA_FLYTE_SUBMIT_BATCH_MAX_IN_FLIGHT": ("limits", "submit_batch_max_in_flight"),
    "ARMADA_FLYTE_CANCEL_BATCH_WINDOW_SECONDS": ("limits", "cancel_batch_window_seconds"),
    "ARMADA_FLYTE_CANCEL_BATCH_MAX_WAIT_SECONDS": ("limits", "cancel_batch_max_wait_seconds"),
    "ARMADA_FLYTE_CHECK_IMAGE_PLATFORMS": ("images", "check_image_platforms"),
    "ARMADA_FLYTE_IMAGE_CHECK_BLOCKS_WHEN_UNREACHABLE": ("images", "image_check_blocks_when_unreachable"),
    "ARMADA_FLYTE_IMAGE_PLATFORM_CACHE_SECONDS": ("images", "image_platform_cache_seconds"),
    "ARMADA_FLYTE_REGISTRY_INSECURE_HOSTS": ("images", "registry_insecure_hosts"),
}
_NAME = re.compile(r"\b(ARMADA_FLYTE_[A-Z0-9_]*[A-Z0-9]|ARMADA_URL|FLYTE_BLOB_[A-Z_]*[A-Z])\b")


def _documented() -> set[str]:
    pages = [ROOT / "README.md", ROOT / "deploy" / "README.md", *(ROOT / "docs").glob("*.md")]
    return {name for page in pages for name in _NAME.findall(page.read_text())}


def test_the_code_reads_each_variable_into_the_same_setting_as_before():
    read = {env: (GROUP_OF[name], name) for name, envs in ENV_NAMES.items() for env in envs}
    assert read == SETTING_OF_ENV


def test_every_documented_connector_variable_is_one_of_them():
    connector_names = {name for name in _documented() if name.startswith(("ARMADA_URL", "FLYTE_BLOB_"))}
    connector_names |= {name for name in _documented() if name.removeprefix(ENV_PREFIX).lower() in GROUP_OF}
    assert connector_names, "the docs name no connector setting: the pattern is wrong"
    assert connector_names <= set(SETTING_OF_ENV)


@pytest.mark.parametrize("env, setting", sorted(SETTING_OF_ENV.items()))
def test_a_value_set_in_the_variable_is_read_as_the_setting(monkeypatch, env, setting):
    for other in SETTING_OF_ENV:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(env, "7")
    assert given_settings() == {setting[1]: "7"}


def test_resolved_values_sit_in_their_group(monkeypatch):
    monkeypatch.setenv("ARMADA_URL", "127.0.0.1:6000")
    monkeypatch.setenv("ARMADA_FLYTE_STATUS_STREAMS_MAX", "5")
    monkeypatch.setenv("ARMADA_FLYTE_ACK_TIMEOUT_SECONDS", "12.5")
    monkeypatch.setenv("ARMADA_FLYTE_REGISTRY_INSECURE_HOSTS", "a:1,b:2")
    settings = resolve_settings()
    assert settings.connection.armada_url == "127.0.0.1:6000"
    assert settings.limits.status_streams_max == 5
    assert settings.timeouts.ack_timeout_seconds == 12.5
    assert settings.images.registry_insecure_hosts == ("a:1", "b:2")


def test_every_armada_flyte_variable_the_scripts_and_docs_name_is_known_to_the_connector():
    """The connector refuses an unknown ARMADA_FLYTE_* variable as a typo; one that a script or a doc tells users
    to set (ARMADA_FLYTE_REAL_ARMADA=1 for the real tier, say) must not make every task fail."""
    scripts = [path for path in (ROOT / "scripts").rglob("*") if path.is_file() and path.suffix in ("", ".sh", ".py")]
    named = {name for path in scripts for name in _NAME.findall(path.read_text(errors="replace"))} | _documented()
    check_env_names({name: "1" for name in named if name.startswith(ENV_PREFIX)})  # raises on the first unknown
