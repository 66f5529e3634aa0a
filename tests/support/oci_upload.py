"""Push test images to a registry over its HTTP API: no base images, no Docker, no network.

Each image is one small random layer and a config naming its OS and architecture; indexes
point at such images. That is all a registry stores, so inspection sees real images.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from typing import Any, Optional

import httpx

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
IN_TOTO = "application/vnd.in-toto+json"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def random_layer() -> tuple[bytes, str]:
    """A gzipped tar with one file of random bytes, and the digest of the uncompressed tar (its diff id)."""
    payload = os.urandom(512)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        info = tarfile.TarInfo("hello.bin")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    tar = raw.getvalue()
    return gzip.compress(tar, mtime=0), digest_of(tar)


class RegistryUploader:
    """Pushes blobs and manifests to one registry, as `authorization` (a header value) if given."""

    def __init__(self, base_url: str, authorization: Optional[str] = None):
        headers = {"Authorization": authorization} if authorization else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=30.0)

    def close(self) -> None:
        self._http.close()

    def push_blob(self, repository: str, data: bytes) -> str:
        digest = digest_of(data)
        started = self._http.post(f"/v2/{repository}/blobs/uploads/")
        started.raise_for_status()
        # The upload URL carries the registry's own state in its query; the digest is added to it.
        location = httpx.URL(started.headers["Location"]).copy_merge_params({"digest": digest})
        finished = self._http.put(
            location,
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        finished.raise_for_status()
        return digest

    def push_manifest(self, repository: str, reference: str, manifest: dict[str, Any]) -> tuple[str, int]:
        """Push under a tag (or its digest); returns the manifest's digest and size."""
        body = json.dumps(manifest, separators=(",", ":")).encode()
        answer = self._http.put(
            f"/v2/{repository}/manifests/{reference}",
            content=body,
            headers={"Content-Type": manifest["mediaType"]},
        )
        answer.raise_for_status()
        return digest_of(body), len(body)

    def push_image(
        self,
        repository: str,
        tag: Optional[str],
        architecture: str,
        os_name: str = "linux",
        variant: Optional[str] = None,
        docker_types: bool = False,
    ) -> dict[str, Any]:
        """Push a one-layer image; returns its descriptor (for an index) with the platform filled in."""
        layer, diff_id = random_layer()
        config: dict[str, Any] = {
            "architecture": architecture,
            "os": os_name,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "config": {},
        }
        if variant:
            config["variant"] = variant
        manifest_type, config_type, layer_type = (
            (DOCKER_MANIFEST, DOCKER_CONFIG, DOCKER_LAYER) if docker_types else (OCI_MANIFEST, OCI_CONFIG, OCI_LAYER)
        )
        platform = {"architecture": architecture, "os": os_name}
        if variant:
            platform["variant"] = variant
        descriptor = self._push_manifest_over(
            repository, tag, (manifest_type, config_type), json.dumps(config).encode(), (layer_type, layer)
        )
        return {**descriptor, "platform": platform}

    def push_attestation(self, repository: str, subject: dict[str, Any]) -> dict[str, Any]:
        """An attestation manifest as BuildKit writes them: an unknown/unknown index entry about `subject`."""
        statement = json.dumps({"_type": "https://in-toto.io/Statement/v0.1", "subject": []}).encode()
        rootfs = {"type": "layers", "diff_ids": [digest_of(statement)]}
        config = json.dumps({"architecture": "unknown", "os": "unknown", "config": {}, "rootfs": rootfs}).encode()
        descriptor = self._push_manifest_over(
            repository, None, (OCI_MANIFEST, OCI_CONFIG), config, (IN_TOTO, statement)
        )
        return {
            **descriptor,
            "platform": {"architecture": "unknown", "os": "unknown"},
            "annotations": {
                "vnd.docker.reference.digest": subject["digest"],
                "vnd.docker.reference.type": "attestation-manifest",
            },
        }

    def _push_manifest_over(
        self,
        repository: str,
        tag: Optional[str],
        types: tuple[str, str],
        config: bytes,
        layer: tuple[str, bytes],
    ) -> dict[str, Any]:
        """Push a config and one layer, then the manifest naming them (under `tag`, else its digest)."""
        manifest_type, config_type = types
        layer_type, layer_bytes = layer
        manifest = {
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": {"mediaType": config_type, "digest": self.push_blob(repository, config), "size": len(config)},
            "layers": [
                {"mediaType": layer_type, "digest": self.push_blob(repository, layer_bytes), "size": len(layer_bytes)}
            ],
        }
        body = json.dumps(manifest, separators=(",", ":")).encode()
        digest, size = self.push_manifest(repository, tag or digest_of(body), manifest)
        return {"mediaType": manifest_type, "digest": digest, "size": size}

    def push_index(self, repository: str, tag: str, entries: list[dict[str, Any]], docker_types: bool = False) -> str:
        """Push an image index (or a Docker manifest list) over `entries`; returns its digest."""
        index = {"schemaVersion": 2, "mediaType": DOCKER_LIST if docker_types else OCI_INDEX, "manifests": entries}
        digest, _ = self.push_manifest(repository, tag, index)
        return digest
