"""Hostile connector settings: environment variables, the YAML settings file, the node-group file.

Whatever is set, resolving the settings gives settings or an `InvalidConfig` with a short message,
and a value typed under a misspelt secret's name is never echoed.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import FIELDS, resolve_settings
from armada_flyte.errors import InvalidConfig

from support.hostile_values import MAX_MESSAGE, alias_bomb, awkward_text, dumpable_values, yaml_documents

pytestmark = pytest.mark.pure

ENV_NAMES = [f"ARMADA_FLYTE_{name.upper()}" for name in FIELDS] + ["ARMADA_URL", "FLYTE_BLOB_ENDPOINT"]
_env_text = st.one_of(
    awkward_text.filter(lambda t: "\x00" not in t),
    st.sampled_from(["true", "false", "1", "0", "-1", "[1, 2]", '["a"]', "[", "{}", "a,b", "1e400", "nan"]),
)
_LENIENT = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("ARMADA_FLYTE_", "ARMADA_URL", "FLYTE_BLOB_")):
            monkeypatch.delenv(name)
    return monkeypatch


@_LENIENT
@given(st.dictionaries(st.sampled_from(ENV_NAMES), _env_text, max_size=4))
def test_settings_from_any_environment_resolve_or_raise_invalid_config(clean_env, env):
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        try:
            resolve_settings()
        except InvalidConfig as exc:
            assert len(str(exc)) < MAX_MESSAGE


@settings(_LENIENT, max_examples=30)
@given(
    st.one_of(yaml_documents, st.dictionaries(st.sampled_from([*FIELDS, "auth_tokne"]), dumpable_values, max_size=4))
)
def test_any_settings_file_resolves_or_raises_invalid_config(clean_env, tmp_path_factory, document):
    path = tmp_path_factory.mktemp("settings") / "connector.yaml"
    text = document if isinstance(document, str) else yaml.safe_dump(document, allow_unicode=True)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARMADA_FLYTE_CONFIG_FILE", str(path))
        try:
            resolve_settings()
        except InvalidConfig as exc:
            assert len(str(exc)) < MAX_MESSAGE


@_LENIENT
@given(
    st.one_of(
        yaml_documents,
        st.dictionaries(
            st.sampled_from(["platform", "default_architecture", "architectures", "x"]), dumpable_values, max_size=3
        ),
        st.builds(
            lambda groups: {"architectures": groups},
            st.dictionaries(
                st.sampled_from(["amd64", "arm64", "x86_64", "risc"]),
                st.dictionaries(
                    st.sampled_from(["node_group", "node_selector", "tolerations", "required_node_affinity", "taints"]),
                    dumpable_values,
                    max_size=3,
                ),
                max_size=2,
            ),
        ),
    )
)
def test_any_node_group_file_loads_or_raises_invalid_config(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("groups") / "groups.yaml"
    text = document if isinstance(document, str) else yaml.safe_dump(document, allow_unicode=True)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        NodeGroups.from_yaml(path)
    except InvalidConfig as exc:
        assert len(str(exc)) < MAX_MESSAGE


def test_the_documented_comma_separated_insecure_hosts_are_accepted(clean_env):
    clean_env.setenv("ARMADA_FLYTE_REGISTRY_INSECURE_HOSTS", "127.0.0.1:5000")
    assert resolve_settings().registry_insecure_hosts == ("127.0.0.1:5000",)
    clean_env.setenv("ARMADA_FLYTE_REGISTRY_INSECURE_HOSTS", "127.0.0.1:5000, registry.lan:443")
    assert resolve_settings().registry_insecure_hosts == ("127.0.0.1:5000", "registry.lan:443")
    clean_env.setenv("ARMADA_FLYTE_REGISTRY_INSECURE_HOSTS", json.dumps(["a:1", "b:2"]))
    assert resolve_settings().registry_insecure_hosts == ("a:1", "b:2")
    clean_env.setenv("ARMADA_FLYTE_AUTH_EXEC_ARGS", "auth print-access-token --format 'a b'")
    clean_env.setenv("ARMADA_FLYTE_AUTH_EXEC_CMD", "gcloud")
    assert resolve_settings().auth_exec_args == ("auth", "print-access-token", "--format", "a b")


def test_a_misspelt_secret_in_the_settings_file_is_named_but_its_value_never_shown(clean_env, tmp_path, capsys):
    from armada_flyte.admin.cli import main

    path = tmp_path / "connector.yaml"
    path.write_text("armada_url: 127.0.0.1:1\nauth_tokne: VALUE-SENTINEL-93\n")
    clean_env.setenv("ARMADA_FLYTE_CONFIG_FILE", str(path))
    with pytest.raises(InvalidConfig, match="auth_tokne") as info:
        resolve_settings()
    assert "VALUE-SENTINEL-93" not in str(info.value)
    main(["doctor", "--queue", "q"])
    main(["doctor", "--queue", "q", "--json"])
    out = capsys.readouterr()
    assert "auth_tokne" in out.out and "VALUE-SENTINEL-93" not in out.out + out.err


@pytest.mark.parametrize(
    "content, problem",
    [
        (alias_bomb(), "values"),
        ("- armada_url\n", "the document is a list"),
        ("armada_url: [" * 200, "nests more than"),
    ],
)
def test_an_unusable_settings_file_is_named(clean_env, tmp_path, content, problem):
    path = tmp_path / "connector.yaml"
    path.write_text(content)
    clean_env.setenv("ARMADA_FLYTE_CONFIG_FILE", str(path))
    with pytest.raises(InvalidConfig, match=problem) as info:
        resolve_settings()
    assert "ARMADA_FLYTE_CONFIG_FILE" in str(info.value) and len(str(info.value)) < 1500


def test_a_directory_as_the_settings_file_is_named(clean_env, tmp_path):
    clean_env.setenv("ARMADA_FLYTE_CONFIG_FILE", str(tmp_path))
    with pytest.raises(InvalidConfig, match="directory"):
        resolve_settings()
