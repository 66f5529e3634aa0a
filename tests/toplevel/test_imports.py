"""Import rules that only show in a fresh interpreter."""

import subprocess
import sys

import pytest


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_task_side_loads_none_of_the_connectors_heavy_parts():
    result = python(
        "import sys, armada_flyte\n"
        "from armada_flyte import ArmadaConfig, Architecture\n"
        "heavy = ('grpc', 'armada_client', 'docker', 'moto', 'boto3', 'pydantic_settings')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "order",
    [
        "import armada_flyte, armada_client.armada.submit_pb2, flyteidl2.connector.connector_pb2, flyte.connectors",
        "import armada_flyte, flyte.connectors, armada_client.armada.submit_pb2, armada_client.armada.job_pb2",
        "import armada_flyte.connector.service",
    ],
)
def test_armada_client_and_flyte_load_together_after_armada_flyte(order):
    result = python(order)
    assert result.returncode == 0, result.stderr


def test_without_the_alias_the_clash_is_real():
    """Guards the test above: armada_client first, then Flyte's protos, fails on its own."""
    result = python("import armada_client.armada.submit_pb2, flyte.connectors")
    assert result.returncode != 0
    assert "duplicate file name google/api/http.proto" in result.stdout + result.stderr  # flyte prints it to stdout


def test_the_author_surface_does_not_load_flytes_image_builder_or_pydantic():
    result = python(
        "import sys, armada_flyte\n"
        "heavy = ('flyte.extend', 'flyte._internal.imagebuild', 'pydantic')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
