"""A real-Armada bed on a real Kubernetes API server (`scripts/real-armada.sh up --kubernetes`), for tests.

The bed's pods meet Kubernetes: Armada's own executor creates them, kube-scheduler binds them, and our
node agent runs them as the kubelet. A session with KUBECONFIG and ARMADA_URL from such a bed in its
environment (scripts/test.sh starts one per group) uses it; otherwise, with `--armada real`, a module
starts one of its own (`kubernetes_bed`), and without it the tests skip (the first build takes minutes).
`kubectl` runs as the bed's admin (its KUBECONFIG, never the user's own).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any, Iterator

import pytest
from armada_client.client import ArmadaClient

from support.armada_channels import armada_channel, logged_in_to
from support.real_armada import bed_of_its_own, uses_real_armada
from support.real_parts import missing_part

KUBE_VARIABLES = ("KUBECONFIG", "ARMADA_FLYTE_BINOCULARS_URL")


def bed_kubeconfig() -> str:
    """The kubeconfig of the environment's bed when it has Kubernetes (one inside its state folder), else "": a
    KUBECONFIG of the user's own names some other cluster."""
    state, kubeconfig = os.environ.get("REAL_ARMADA_STATE", ""), os.environ.get("KUBECONFIG", "")
    inside = bool(state and kubeconfig) and pathlib.Path(kubeconfig).resolve().is_relative_to(
        pathlib.Path(state).resolve()
    )
    return kubeconfig if inside else ""


def on_kubernetes_bed() -> bool:
    """Whether the session's bed (from the environment) is one with Kubernetes."""
    return bool(os.environ.get("ARMADA_URL") and bed_kubeconfig())


@pytest.fixture(scope="module")
def kubernetes_bed(request: pytest.FixtureRequest, bed_secrets_file: pathlib.Path) -> Iterator[dict[str, str]]:
    """The bed's assignments (ARMADA_URL, KUBECONFIG, ...): the environment's, or one started for the module."""
    if on_kubernetes_bed():
        yield dict(os.environ)
        return
    if not uses_real_armada(request.config):
        pytest.skip("needs a real-Armada bed with Kubernetes: run with --armada real")
    with bed_of_its_own("--kubernetes", REAL_ARMADA_SECRETS_FILE=str(bed_secrets_file)) as bed:
        if "KUBECONFIG" not in bed:
            missing_part("scripts/real-armada.sh up --kubernetes printed no KUBECONFIG")
        with logged_in_to(bed):
            yield bed


@pytest.fixture
def armada(kubernetes_bed: dict[str, str]) -> Iterator[ArmadaClient]:
    """A client of the bed's Armada, logged in as the bed's user."""
    with logged_in_to(kubernetes_bed), armada_channel(kubernetes_bed["ARMADA_URL"]) as channel:
        yield ArmadaClient(channel)


def kubectl(bed: dict[str, str], *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    """kubectl as the bed's admin."""
    result = subprocess.run(
        ["kubectl", "--kubeconfig", bed["KUBECONFIG"], *args], capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stderr}"
    return result


def kube_object(bed: dict[str, str], *args: str) -> Any:
    """`kubectl get ... -o json`, decoded."""
    return json.loads(kubectl(bed, "get", *args, "-o", "json").stdout)


def job_pod(bed: dict[str, str], job_id: str, namespace: str = "default") -> Any:
    """The pod Armada's executor made for the job (armada-<job id>-0), or None while there is none."""
    result = kubectl(bed, "get", "pod", "-n", namespace, f"armada-{job_id}-0", "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def pod_events(bed: dict[str, str], pod_name: str, namespace: str = "default") -> list[dict[str, Any]]:
    """The Kubernetes events about a pod (kube-scheduler's Scheduled, FailedScheduling, ...)."""
    listed = kube_object(bed, "events", "-n", namespace, "--field-selector", f"involvedObject.name={pod_name}")
    return listed.get("items", [])


def bed_log(bed: dict[str, str], component: str) -> str:
    """The end of a component's log, for a failure message."""
    path = pathlib.Path(bed.get("REAL_ARMADA_LOGS", "")) / f"{component}.log"
    try:
        return f"--- {path}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-30:])
    except OSError as exc:
        return f"--- {path}: {exc}"
