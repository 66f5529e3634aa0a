import pathlib
import re
import subprocess

import pytest

import armada_flyte
from armada_flyte import InvalidConfig
from armada_flyte.connector.config.settings import check_env_names, resolve_settings


@pytest.mark.pure
def test_reference_design_env_names_still_work(monkeypatch):
    monkeypatch.setenv("ARMADA_URL", "127.0.0.1:6000")
    monkeypatch.setenv("FLYTE_BLOB_ENDPOINT", "http://127.0.0.1:9000")
    monkeypatch.setenv("FLYTE_BLOB_ACCESS_KEY", "ak")
    monkeypatch.setenv("FLYTE_BLOB_SECRET_KEY", "sk")
    monkeypatch.setenv("ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET", "blob-keys")
    settings = resolve_settings()
    assert settings.armada_url == "127.0.0.1:6000"
    assert settings.blob_endpoint == "http://127.0.0.1:9000"
    assert settings.blob_access_key == "ak"
    assert settings.blob_secret_key.get_secret_value() == "sk"


@pytest.mark.pure
def test_prefixed_env_names_work(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_PRESET", "gke")
    monkeypatch.setenv("ARMADA_FLYTE_POLL_INTERVAL_SECONDS", "0.5")
    settings = resolve_settings()
    assert settings.node_groups_preset == "gke"
    assert settings.poll_interval_seconds == 0.5
    assert settings.node_groups().platform == "gke"


@pytest.mark.pure
def test_configure_in_code_beats_environment(monkeypatch):
    monkeypatch.setenv("ARMADA_URL", "127.0.0.1:6000")
    armada_flyte.configure(armada_url="127.0.0.1:7000")
    assert resolve_settings().armada_url == "127.0.0.1:7000"


@pytest.mark.pure
def test_config_file_is_weakest(monkeypatch, tmp_path):
    config = tmp_path / "connector.yaml"
    config.write_text("armada_url: 127.0.0.1:8000\nnode_groups_preset: aks\n")
    monkeypatch.setenv("ARMADA_FLYTE_CONFIG_FILE", str(config))
    monkeypatch.delenv("ARMADA_URL", raising=False)
    assert resolve_settings().armada_url == "127.0.0.1:8000"
    monkeypatch.setenv("ARMADA_URL", "127.0.0.1:6000")
    assert resolve_settings().armada_url == "127.0.0.1:6000"


@pytest.mark.pure
def test_unknown_key_in_config_file_is_an_error(monkeypatch, tmp_path):
    config = tmp_path / "connector.yaml"
    config.write_text("armada_ulr: 127.0.0.1:8000\n")
    monkeypatch.setenv("ARMADA_FLYTE_CONFIG_FILE", str(config))
    with pytest.raises(InvalidConfig) as info:
        resolve_settings()
    assert "armada_ulr" in str(info.value)


@pytest.mark.pure
def test_configure_refuses_unknown_names_and_bad_values_without_keeping_them():
    with pytest.raises(InvalidConfig, match="unknown settings"):
        armada_flyte.configure(armada_ulr="x")
    with pytest.raises(InvalidConfig) as info:
        armada_flyte.configure(poll_interval_seconds=-1)
    assert info.value.field == "poll_interval_seconds"
    assert resolve_settings().poll_interval_seconds == 3.0


@pytest.mark.pure
def test_secrets_are_not_echoed_in_errors():
    with pytest.raises(InvalidConfig) as info:
        armada_flyte.configure(auth_username="me")  # password missing
    assert "auth_password" in str(info.value)


@pytest.mark.pure
def test_contradictory_settings_are_refused():
    with pytest.raises(InvalidConfig, match="not both"):
        armada_flyte.configure(node_groups_preset="gke", node_groups_file="/tmp/x.yaml")
    with pytest.raises(InvalidConfig, match="armada_tls"):
        armada_flyte.configure(armada_ca_cert="/tmp/ca.pem")


@pytest.mark.pure
def test_missing_config_file_is_named(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_CONFIG_FILE", "/nonexistent/connector.yaml")
    with pytest.raises(InvalidConfig, match="ARMADA_FLYTE_CONFIG_FILE"):
        resolve_settings()


@pytest.mark.pure
def test_a_mistyped_variable_is_an_error_with_a_suggestion(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUP_FILE", "/etc/groups.yaml")
    with pytest.raises(InvalidConfig) as info:
        resolve_settings()
    assert info.value.field == "ARMADA_FLYTE_NODE_GROUP_FILE"
    assert "did you mean ARMADA_FLYTE_NODE_GROUPS_FILE" in str(info.value)


@pytest.mark.pure
def test_project_default_variables_are_known_to_the_connector(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_ARCHITECTURE", "arm64")
    monkeypatch.setenv("ARMADA_FLYTE_QUEUE", "ml")
    assert resolve_settings().armada_url


@pytest.mark.pure
def test_errors_never_show_secret_values(monkeypatch):
    with pytest.raises(InvalidConfig) as info:
        armada_flyte.configure(auth_token="SUPERSECRET", auth_username="u", auth_password="PASSWORD123")
    assert "SUPERSECRET" not in str(info.value) and "PASSWORD123" not in str(info.value)
    assert "not both" in str(info.value)
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "tok-SECRET")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_USERNAME", "u")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_PASSWORD", "pw-SECRET")
    monkeypatch.setenv("FLYTE_BLOB_SECRET_KEY", "blob-SECRET")
    with pytest.raises(InvalidConfig) as info:
        resolve_settings()
    assert "SECRET" not in str(info.value)


@pytest.mark.pure
def test_doctor_never_prints_secret_values(monkeypatch, capsys):
    from armada_flyte.admin.cli import main

    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "tok-SECRET")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_USERNAME", "u")
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_PASSWORD", "pw-SECRET")
    monkeypatch.setenv("FLYTE_BLOB_SECRET_KEY", "blob-SECRET")
    main(["doctor", "--queue", "q"])
    out = capsys.readouterr()
    assert "SECRET" not in out.out + out.err


def test_what_the_image_scripts_export_is_no_unknown_setting():
    """`eval "$(scripts/image-builder.sh start)"` (or prepare-image-parts.sh) exports ARMADA_FLYTE_* names into
    the shell that then runs the connector and the tests."""
    scripts = pathlib.Path(__file__).parents[2] / "scripts"
    exported = subprocess.run(
        [str(scripts / "image-builder.sh"), "env"], capture_output=True, text=True, check=True
    ).stdout
    names = set(re.findall(r"(?m)^export (ARMADA_FLYTE_[A-Z_]+)=", exported))
    names |= set(re.findall(r"(?m)^export (ARMADA_FLYTE_[A-Z_]+)=", (scripts / "prepare-image-parts.sh").read_text()))
    names |= set(re.findall(r"\$\{?(ARMADA_FLYTE_[A-Z_]+)", (scripts / "build-runtime-image.sh").read_text()))
    assert {"ARMADA_FLYTE_REGISTRY", "ARMADA_FLYTE_BUILDER", "ARMADA_FLYTE_IMAGE_PARTS_STARTED"} <= names
    check_env_names({name: "x" for name in names})


def _float_settings() -> list[tuple[str, str]]:
    from armada_flyte.connector.config.settings import GROUPS

    return [
        (group, name)
        for group, model in GROUPS.items()
        for name, info in model.model_fields.items()
        if info.annotation is float
    ]


@pytest.mark.pure
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_every_float_setting_refuses_what_is_not_finite_naming_the_setting(monkeypatch, value):
    from armada_flyte.connector.config.settings_groups import ENV_PREFIX

    floats = _float_settings()
    assert len(floats) >= 20, floats  # every group's floats, found
    for _, name in floats:
        monkeypatch.setenv(f"{ENV_PREFIX}{name.upper()}", value)
        with pytest.raises(InvalidConfig, match=f"^{name}=") as refused:
            resolve_settings()
        assert refused.value.field == name
        monkeypatch.delenv(f"{ENV_PREFIX}{name.upper()}")


@pytest.mark.pure
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_node_groups_and_armada_config_refuse_what_is_not_finite(value):
    from pydantic import ValidationError

    from armada_flyte import ArmadaConfig
    from armada_flyte.connector.config.node_groups import NodeGroups

    with pytest.raises(ValidationError, match="spill_after_seconds"):
        NodeGroups(architectures={}, spill_after_seconds=value)
    with pytest.raises(InvalidConfig, match="ArmadaConfig.priority"):
        ArmadaConfig(priority=value)
    with pytest.raises(InvalidConfig, match="ArmadaConfig.spill_after"):
        ArmadaConfig(architecture=["arm64", "amd64"], spill_after=value)
