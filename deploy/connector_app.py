"""Deploy the Armada connector as a Flyte app, for Flyte backends that run connectors themselves.

The backend runs the app's `c0`, which loads the `armada` connector through the package's
`flyte.connectors` entry point; no `include` is needed. Credentials come from Flyte secrets
(create them first with `flyte create secret`), everything else from the flags below:

    python deploy/connector_app.py --armada-url armada.example.com:50051 --armada-tls \
        --preset gke --blob-endpoint https://s3.example.com --auth token

`--dry-run` prints what would be deployed without deploying.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Optional, Sequence

import flyte
import flyte.app

import armada_flyte

NAME = "armada-flyte-connector"
NODE_GROUPS_DIR = "/etc/armada-flyte"

SECRETS = {
    "token": {"ARMADA_FLYTE_AUTH_TOKEN": "armada-flyte-auth-token"},
    "basic": {
        "ARMADA_FLYTE_AUTH_USERNAME": "armada-flyte-auth-username",
        "ARMADA_FLYTE_AUTH_PASSWORD": "armada-flyte-auth-password",
    },
    "none": {},
}
"""Connector setting (environment variable) -> Flyte secret name, per way of authenticating to Armada."""

JOB_BLOB_SECRET = "armada-flyte-blob-credentials"
"""The Kubernetes Secret, in every job namespace of every executor cluster, the job pods read their blob keys from."""
BLOB_SECRETS = {
    "FLYTE_BLOB_ACCESS_KEY": "armada-flyte-blob-access-key",
    "FLYTE_BLOB_SECRET_KEY": "armada-flyte-blob-secret-key",
}


def connector_image(node_groups: Optional[pathlib.Path] = None, image: Optional[str] = None) -> flyte.Image | str:
    """The connector's image: a prebuilt one (deploy/connector/Dockerfile), or one Flyte builds for amd64 and arm64."""
    if image is not None:
        if node_groups is not None:
            raise SystemExit(
                "--node-groups needs an image Flyte builds; with --image, use a --preset or bake the "
                "file into your image"
            )
        return image
    built = flyte.Image.from_debian_base(python_version=(3, 11), name=NAME).with_pip_packages(
        f"armada-flyte[connector]=={armada_flyte.__version__}"
    )
    if node_groups is not None:
        built = built.with_source_file(node_groups, dst=NODE_GROUPS_DIR)
    return built


def connector_environment(
    armada_url: str,
    *,
    armada_tls: bool = False,
    preset: Optional[str] = None,
    node_groups: Optional[pathlib.Path] = None,
    blob_endpoint: str = "",
    blob_credentials_secret: str = JOB_BLOB_SECRET,
    auth: str = "token",
    image: Optional[str] = None,
) -> flyte.app.ConnectorEnvironment:
    """The app running the connector, configured through the connector's own settings names."""
    env_vars = {"ARMADA_URL": armada_url, "ARMADA_FLYTE_ARMADA_TLS": str(armada_tls).lower()}
    if node_groups is not None:
        env_vars["ARMADA_FLYTE_NODE_GROUPS_FILE"] = f"{NODE_GROUPS_DIR}/{node_groups.name}"
    elif preset is not None:
        env_vars["ARMADA_FLYTE_NODE_GROUPS_PRESET"] = preset
    if blob_endpoint:
        env_vars["FLYTE_BLOB_ENDPOINT"] = blob_endpoint
        # The job pods take their keys from this Kubernetes Secret; empty: their service account.
        if blob_credentials_secret:
            env_vars["ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET"] = blob_credentials_secret
        else:
            env_vars["ARMADA_FLYTE_BLOB_WORKLOAD_IDENTITY"] = "true"
    secrets = [flyte.Secret(key=key, as_env_var=env) for env, key in {**SECRETS[auth], **BLOB_SECRETS}.items()]
    return flyte.app.ConnectorEnvironment(
        name=NAME,
        image=connector_image(node_groups, image),
        resources=flyte.Resources(cpu=1, memory="1Gi"),
        env_vars=env_vars,
        secrets=secrets,
        # Always on: the backend polls every running task through it.
        scaling=flyte.app.Scaling(replicas=(1, 2)),
    )


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--armada-url", required=True, metavar="HOST:PORT", help="Armada's gRPC API")
    parser.add_argument("--armada-tls", action="store_true", help="reach Armada over TLS")
    groups = parser.add_mutually_exclusive_group()
    groups.add_argument("--preset", help="node-group preset (gke, eks-karpenter, aks, generic)")
    groups.add_argument(
        "--node-groups", type=pathlib.Path, metavar="FILE", help="your node-group file, baked into the image"
    )
    parser.add_argument("--blob-endpoint", default="", help="S3 endpoint the job pods reach")
    parser.add_argument(
        "--blob-credentials-secret",
        default=JOB_BLOB_SECRET,
        metavar="NAME",
        help="Kubernetes Secret in the job namespaces holding the pods' blob keys (deploy/armada/"
        f"job-blob-credentials.yaml; default {JOB_BLOB_SECRET}); '' for workload identity (no keys in pods)",
    )
    parser.add_argument(
        "--auth", choices=sorted(SECRETS), default="token", help="how the connector authenticates to Armada"
    )
    parser.add_argument("--image", help="use this prebuilt connector image instead of building one")
    parser.add_argument("--dry-run", action="store_true", help="show what would be deployed")
    args = parser.parse_args(argv)
    app = connector_environment(
        args.armada_url,
        armada_tls=args.armada_tls,
        preset=args.preset,
        node_groups=args.node_groups,
        blob_endpoint=args.blob_endpoint,
        blob_credentials_secret=args.blob_credentials_secret,
        auth=args.auth,
        image=args.image,
    )
    flyte.init_from_config()
    for deployment in flyte.deploy(app, dry_run=args.dry_run):
        print(deployment.summary_repr())


if __name__ == "__main__":
    main()
