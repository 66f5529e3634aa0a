"""deploy/lookout/job-links.yaml links an Armada job in Lookout back to its Flyte run, from the
annotations the connector sets on the job."""

from __future__ import annotations

import pathlib
import re

import grpc
import pytest
import yaml
from armada_client.armada import job_pb2, job_pb2_grpc

import armada_flyte
from armada_flyte import ArmadaConfig

from support.armada_templates import python_template, run
from support.flyte_metadata import execution_metadata

SNIPPET = pathlib.Path(__file__).parents[2] / "deploy" / "lookout" / "job-links.yaml"
# Lookout compiles each linkTemplate with lodash's template and `interpolate: /{{([\s\S]+?)}}/g`
# over the job, its annotations under `annotations`; a missing annotation drops the link
# (internal/lookoutui/src/pages/jobs/components/sidebar/SidebarLinks.tsx). Only the
# `annotations["KEY"]` expressions the snippet uses are emulated here.
_INTERPOLATION = re.compile(r"{{([\s\S]+?)}}")
_ANNOTATION = re.compile(r'^\s*annotations\["([^"]+)"\]\s*$')


def render(link_template: str, annotations: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = _ANNOTATION.match(match.group(1))
        assert expression, f"the test only emulates annotations[...] expressions, not {match.group(1)!r}"
        return annotations[expression.group(1)]

    return _INTERPOLATION.sub(value, link_template)


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        yield server


def test_the_lookout_link_of_a_real_job_opens_its_flyte_run(armada):
    from armada_flyte.connector.service import ArmadaConnector

    (link,) = yaml.safe_load(SNIPPET.read_text())["uiConfig"]["jobLinks"]
    assert set(link) == {"label", "colour", "linkTemplate"}
    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded")
    connector = ArmadaConnector()
    metadata = execution_metadata(run="r7xk2q", action="a3")
    metadata.task_execution_id.node_execution_id.execution_id.project = "ML_Team"  # not a valid label value
    template = python_template("pass", ArmadaConfig(architecture="amd64"))
    meta = run(connector.submit(template, "s3://flyte/raw/links/a3/0", task_execution_metadata=metadata))

    channel = grpc.insecure_channel(armada.url)
    request = job_pb2.JobDetailsRequest(job_ids=[meta.job_id], expand_job_spec=True)
    details = job_pb2_grpc.JobsStub(channel).GetJobDetails(request, timeout=10).job_details[meta.job_id]
    channel.close()
    annotations = dict(details.job_spec.annotations)

    url = render(link["linkTemplate"], annotations)
    assert url == "https://flyte.example.com/v2/domain/dev/project/ML_Team/runs/r7xk2q"
    assert annotations["armada-flyte.io/flyte-action"] == "a3"


@pytest.mark.pure
def test_a_job_not_submitted_by_flyte_gets_no_link():
    (link,) = yaml.safe_load(SNIPPET.read_text())["uiConfig"]["jobLinks"]
    with pytest.raises(KeyError):  # Lookout's Proxy throws on a missing key, and the link is left out
        render(link["linkTemplate"], {"owner": "someone"})
