"""The node agent reads where the API server is and how to log in from a kubeconfig's current context."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from armada_flyte.errors import InvalidConfig
from armada_flyte.node_agent.kubeconfig import read_kubeconfig

pytestmark = pytest.mark.pure


def kubeconfig(folder: pathlib.Path, user: dict, server: str = "https://127.0.0.1:6443") -> pathlib.Path:
    document = {
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_token_file_is_read_and_paths_are_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "agent.token").write_text("s3cret\n")
    login = read_kubeconfig(kubeconfig(tmp_path, {"tokenFile": "agent.token"}))
    assert (login.server, login.ca_file, login.token) == ("https://127.0.0.1:6443", tmp_path / "ca.crt", "s3cret")


def test_the_token_stays_out_of_the_logins_repr(tmp_path):
    login = read_kubeconfig(kubeconfig(tmp_path, {"token": "s3cret"}))
    assert "s3cret" not in repr(login)


def test_a_user_without_a_credential_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(InvalidConfig, match="give the user a token, a tokenFile, or a client certificate and key"):
        read_kubeconfig(kubeconfig(tmp_path, {}))


def test_a_plaintext_server_is_refused(tmp_path):
    with pytest.raises(InvalidConfig, match="cluster.server"):
        read_kubeconfig(kubeconfig(tmp_path, {"token": "t"}, server="http://127.0.0.1:8080"))
