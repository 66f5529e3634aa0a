"""`flyte.Secret`s, serialised by the real SDK, become the env and volumes Flyte's Kubernetes secret
injector would give a stock pod (flyteorg/flyte flyteplugins/go/tasks/pluginmachinery/secret/
k8s_secrets.go, utils.go); what Kubernetes Secrets can't express is refused at plan time."""

from __future__ import annotations

import hashlib
import pathlib

import flyte
import pytest
from flyteidl2.core import security_pb2

from armada_flyte import ArmadaConfig, InvalidConfig
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.connector.submit.pod import blob_env

pytestmark = pytest.mark.pure

SECRETS_DIR = pathlib.Path("/etc/flyte/secrets")


def template_with(serialize, secrets, env_vars=None):
    env = flyte.TaskEnvironment(
        "secrets",
        image="python:3.11",
        resources=flyte.Resources(cpu=1, memory="1Gi"),
        plugin_config=ArmadaConfig(),
        secrets=secrets,
        env_vars=env_vars,
    )

    @env.task
    async def uses_secrets() -> int:
        return 1

    return serialize(uses_secrets)


def plan(template, blob=BlobSettings(), prefix="_UNION_"):
    context = ExecutionContext(RunIdentity(run="r1", action="a1"), "s3://b/raw")
    job = plan_job(template, SubmitSettings(NodeGroups.preset("gke"), blob, prefix), context).job
    [container] = job.pod_spec["containers"]
    return job.pod_spec, container, {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def ref(name, key):
    return {"secretKeyRef": {"localObjectReference": {"name": name}, "key": key}}


def test_an_env_secret_is_read_from_its_group_secret_under_flytes_names(serialize):
    template = template_with(serialize, [flyte.Secret(key="api-key", group="openai", as_env_var="OPENAI_API_KEY")])
    _, _, env = plan(template)
    assert env["OPENAI_API_KEY"] == ref("openai", "api-key")
    assert env["_UNION_OPENAI_API-KEY"] == ref("openai", "api-key")
    assert env["FLYTE_SECRETS_ENV_PREFIX"] == "_UNION_"


def test_the_env_prefix_is_the_admins_setting(serialize):
    _, _, env = plan(template_with(serialize, [flyte.Secret(key="k", group="g")]), prefix="_FSEC_")
    assert env["_FSEC_G_K"] == ref("g", "k") and env["G_K"] == ref("g", "k")


def test_a_secret_without_group_lives_in_the_secret_named_by_the_md5_of_its_key(serialize):
    _, _, env = plan(template_with(serialize, "my-token"))
    digest = hashlib.md5(b"my-token").hexdigest()
    assert env["MY_TOKEN"] == ref(digest, "my-token")


def test_a_file_secret_is_a_read_only_secret_volume_under_etc_flyte_secrets(serialize):
    secrets = [
        flyte.Secret(key="Cert", group="tls", mount=SECRETS_DIR),
        flyte.Secret(key="key", group="tls", mount=SECRETS_DIR),
    ]
    pod_spec, container, env = plan(template_with(serialize, secrets))
    [volume] = pod_spec["volumes"]
    assert volume["volumeSource"]["secret"] == {
        "secretName": "tls",
        "items": [{"key": "Cert", "path": "cert"}, {"key": "key", "path": "key"}],
    }
    assert container["volumeMounts"] == [
        {"name": volume["name"], "mountPath": "/etc/flyte/secrets/tls", "readOnly": True}
    ]
    assert env["FLYTE_SECRETS_DEFAULT_DIR"] == "/etc/flyte/secrets"
    assert env["FLYTE_SECRETS_FILE_PREFIX"] == ""


def test_a_file_secret_with_an_env_var_name_gets_its_path_in_that_variable():
    from armada_flyte.connector.submit.secrets import secret_mounts

    context = security_pb2.SecurityContext(
        secrets=[security_pb2.Secret(group="g", key="K", mount_requirement=security_pb2.Secret.FILE, env_var="K_PATH")]
    )
    env = {e["name"]: e["value"] for e in secret_mounts(context).env}
    assert env["K_PATH"] == "/etc/flyte/secrets/g/k"


def test_a_secret_replaces_a_same_named_env_var_of_the_task(serialize):
    template = template_with(serialize, [flyte.Secret(key="k", group="g", as_env_var="TOKEN")], {"TOKEN": "plain"})
    _, container, env = plan(template)
    assert env["TOKEN"] == ref("g", "k")
    assert [e["name"] for e in container["env"]].count("TOKEN") == 1


@pytest.mark.parametrize(
    "secret, field, fix",
    [
        (security_pb2.Secret(group="My_Group", key="k"), "group", "valid Secret name"),
        (security_pb2.Secret(group="g", key="a/b"), "key", "allow only"),
        (security_pb2.Secret(group="g", key="k", group_version="v2"), "group_version", "no versions"),
        (security_pb2.Secret(group="g", key=""), "key", "needs a key"),
    ],
)
def test_what_kubernetes_secrets_cant_express_is_refused_naming_the_secret(secret, field, fix):
    from armada_flyte.connector.submit.secrets import secret_mounts

    with pytest.raises(InvalidConfig, match=fix) as caught:
        secret_mounts(security_pb2.SecurityContext(secrets=[secret]))
    assert field in caught.value.field


def test_oauth_token_requests_are_refused_not_dropped():
    from armada_flyte.connector.submit.secrets import secret_mounts

    context = security_pb2.SecurityContext(tokens=[security_pb2.OAuth2TokenRequest(name="tok")])
    with pytest.raises(InvalidConfig, match="OAuth2"):
        secret_mounts(context)


def test_a_secret_may_not_take_over_the_blob_stores_variables(serialize):
    template = template_with(serialize, [flyte.Secret(key="k", group="g", as_env_var="FLYTE_AWS_ENDPOINT")])
    with pytest.raises(InvalidConfig, match="blob store"):
        plan(template, BlobSettings("http://s3:9000", credentials_secret="blob"))


def test_the_connector_refuses_literal_pod_blob_keys():
    from armada_flyte.connector.config.settings import resolve_settings

    with pytest.raises(InvalidConfig, match="blob_credentials_secret=.*blob_workload_identity") as caught:
        resolve_settings(blob_endpoint="http://s3:9000", blob_access_key="ak", blob_secret_key="the-secret-key")
    assert "the-secret-key" not in str(caught.value)
    with pytest.raises(InvalidConfig, match="not both"):
        resolve_settings(blob_credentials_secret="blob", blob_workload_identity=True)
    with pytest.raises(InvalidConfig, match="Kubernetes Secret"):
        resolve_settings(blob_credentials_secret="Blob_Keys")
    settings = resolve_settings(blob_endpoint="http://s3:9000", blob_access_key="ak", blob_workload_identity=True)
    assert blob_env(BlobSettings.from_settings(settings.blob)) == [
        {"name": "FLYTE_AWS_ENDPOINT", "value": "http://s3:9000"}
    ]
    assert "the-secret-key" not in repr(BlobSettings("e", "ak", "the-secret-key"))
