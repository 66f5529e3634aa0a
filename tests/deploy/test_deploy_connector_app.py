"""deploy/connector_app.py builds a real `flyte.app.ConnectorEnvironment` running the armada connector."""

from __future__ import annotations

import pathlib

import flyte
import flyte.app
import pytest
from flyte.models import SerializationContext

import armada_flyte


def _sctx() -> SerializationContext:
    return SerializationContext(version="v1", root_dir=pathlib.Path.cwd())


def test_app_is_a_connector_environment_running_c0(connector_app):
    app = connector_app.connector_environment("armada.example.com:50051", preset="gke")
    assert isinstance(app, flyte.app.ConnectorEnvironment)
    args = app.container_args(_sctx())
    assert args[0] == "c0"
    assert "--modules" not in args, "c0 loads the connector through the flyte.connectors entry point"


def test_app_settings_are_connector_settings_names(connector_app, settings_env_names):
    app = connector_app.connector_environment(
        "armada:50051", armada_tls=True, preset="gke", blob_endpoint="https://s3.example.com", auth="basic"
    )
    assert set(app.env_vars) <= settings_env_names
    assert app.env_vars["ARMADA_URL"] == "armada:50051"
    assert app.env_vars["ARMADA_FLYTE_ARMADA_TLS"] == "true"
    assert app.env_vars["ARMADA_FLYTE_NODE_GROUPS_PRESET"] == "gke"
    secret_envs = {secret.as_env_var for secret in app.secrets}
    assert secret_envs == {
        "ARMADA_FLYTE_AUTH_USERNAME",
        "ARMADA_FLYTE_AUTH_PASSWORD",
        "FLYTE_BLOB_ACCESS_KEY",
        "FLYTE_BLOB_SECRET_KEY",
    }
    assert secret_envs <= settings_env_names


def test_the_settings_the_app_sets_resolve(connector_app, monkeypatch):
    from armada_flyte.connector.config.settings import resolve_settings

    app = connector_app.connector_environment("armada:50051", armada_tls=True, preset="eks-karpenter", auth="none")
    for name, value in app.env_vars.items():
        monkeypatch.setenv(name, value)
    settings = resolve_settings()
    assert settings.armada_url == "armada:50051" and settings.armada_tls
    assert settings.node_groups().platform == "eks-karpenter"
    assert {s.as_env_var for s in app.secrets} == {"FLYTE_BLOB_ACCESS_KEY", "FLYTE_BLOB_SECRET_KEY"}


def test_built_image_installs_this_versions_connector_extra_for_both_architectures(connector_app):
    image = connector_app.connector_environment("armada:50051").image
    assert isinstance(image, flyte.Image)
    assert set(image.platform) == {"linux/amd64", "linux/arm64"}
    packages = [p for layer in image._layers for p in getattr(layer, "packages", ()) or ()]
    assert f"armada-flyte[connector]=={armada_flyte.__version__}" in packages


def test_own_node_group_file_is_baked_in_and_named_by_the_setting(connector_app, tmp_path):
    groups = tmp_path / "ours.yaml"
    groups.write_text("architectures: {arm64: {}}\n")
    app = connector_app.connector_environment("armada:50051", node_groups=groups)
    assert app.env_vars["ARMADA_FLYTE_NODE_GROUPS_FILE"] == "/etc/armada-flyte/ours.yaml"
    copied = [layer for layer in app.image._layers if getattr(layer, "src", None) == groups]
    assert copied and copied[0].dst == "/etc/armada-flyte"


@pytest.mark.pure
def test_prebuilt_image_is_used_as_given(connector_app):
    app = connector_app.connector_environment("armada:50051", image="registry.example.com/armada-flyte-connector:0.1.0")
    assert app.image == "registry.example.com/armada-flyte-connector:0.1.0"


@pytest.mark.pure
def test_prebuilt_image_cannot_take_a_node_group_file(connector_app, tmp_path):
    with pytest.raises(SystemExit, match="--node-groups needs an image Flyte builds"):
        connector_app.connector_environment("armada:50051", image="x:1", node_groups=tmp_path / "g.yaml")
