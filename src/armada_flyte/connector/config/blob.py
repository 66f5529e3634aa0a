"""The blob store's settings as plain values: where the pods reach it and how they get their keys,
and the connector's own keys for reading error.pb."""

from __future__ import annotations

from dataclasses import dataclass, field

from armada_flyte.connector.config.settings_groups import BlobStore


@dataclass(frozen=True)
class BlobSettings:
    """The blob store as the pods reach it, and the connector's own keys for reading error.pb.

    The pods never get the keys as values: with `credentials_secret` their env takes the keys from
    that Kubernetes Secret (in the job's namespace) by `secretKeyRef`; with `workload_identity`
    they get no credentials at all and the pod's service account grants access. An empty endpoint
    injects nothing (`submit.pod.blob_env` writes that env).
    """

    endpoint: str = ""
    access_key: str = ""
    secret_key: str = field(default="", repr=False)
    region: str = "us-east-1"
    credentials_secret: str = ""
    access_key_key: str = "access_key_id"
    secret_key_key: str = "secret_access_key"
    workload_identity: bool = False

    @classmethod
    def from_settings(cls, store: BlobStore) -> BlobSettings:
        """The blob store the pods are told to use (and the connector reads error.pb with)."""
        return cls(
            store.blob_endpoint,
            store.blob_access_key,
            store.blob_secret_key.get_secret_value(),
            store.blob_region,
            store.blob_credentials_secret,
            store.blob_credentials_access_key_key,
            store.blob_credentials_secret_key_key,
            store.blob_workload_identity,
        )
