"""`EmbeddedArmada` from Python: a context manager on a free port of 127.0.0.1 that leaves nothing behind."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig
from armada_flyte.errors import InvalidConfig

from support.pods import cluster, item, node_set, pod, python, sleeper, submit_one
from support.process_checks import is_alive, pids_in_log
from support.waiting import state_of, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only


def test_it_listens_on_a_free_port_of_localhost_with_the_default_node_sets() -> None:
    with EmbeddedArmada() as armada:
        host, port = armada.url.split(":")
        assert host == "127.0.0.1" and int(port) > 0
        assert [g.name for g in armada.node_sets] == ["amd64", "arm64"]
        assert [str(t) for t in armada.node_sets[1].taints] == ["kubernetes.io/arch=arm64:NoSchedule"]
        with grpc.insecure_channel(armada.url) as channel:
            assert ArmadaClient(channel).get_queue("flyte").name == "flyte"


def test_created_queues_are_usable_through_the_api() -> None:
    with EmbeddedArmada(EmbeddedConfig(queues=())) as armada, grpc.insecure_channel(armada.url) as channel:
        armada.create_queue("research", priority_factor=2.0)
        assert ArmadaClient(channel).get_queue("research").priority_factor == 2.0


def test_leaving_the_block_kills_running_pods() -> None:
    with EmbeddedArmada() as armada, grpc.insecure_channel(armada.url) as channel:
        client = ArmadaClient(channel)
        code = "import os, time; print('main', os.getpid(), flush=True); time.sleep(300)"
        job_id = submit_one(client, "flyte", "js", item(pod(python(code))))
        [pid] = wait_until(lambda: pids_in_log(armada.logs(job_id), "main"), what="the pod's pid")
    wait_until(lambda: not is_alive(pid), what=f"the pod's process {pid} to be gone once the block is left")
    assert not is_alive(pid)


def test_the_standard_grpc_health_service_reports_serving() -> None:
    with EmbeddedArmada() as armada, grpc.insecure_channel(armada.url) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="api.Submit"))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_a_new_job_reads_unknown_until_the_visibility_delay_passes() -> None:
    with EmbeddedArmada(EmbeddedConfig(visibility_delay=2.0)) as armada, grpc.insecure_channel(armada.url) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "js", item(pod(["true"])))
        assert state_of(client, job_id) == submit_pb2.UNKNOWN
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED)


def test_a_paused_executor_leaves_jobs_leased_until_resumed() -> None:
    with EmbeddedArmada(EmbeddedConfig(paused=True)) as armada, grpc.insecure_channel(armada.url) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "js", item(pod(["true"])))
        wait_for_state(client, job_id, submit_pb2.LEASED)
        assert armada.job(job_id).node is not None
        armada.resume()
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED)


def test_cancelling_a_leased_job_of_a_paused_executor_frees_its_capacity() -> None:
    one_cpu = Cluster.from_mapping(cluster(node_set("amd64", nodes=1, cpu="1")))
    with (
        EmbeddedArmada(EmbeddedConfig(cluster=one_cpu, paused=True)) as armada,
        grpc.insecure_channel(armada.url) as channel,
    ):
        client = ArmadaClient(channel)
        first = submit_one(client, "flyte", "js", item(sleeper(cpu="1")))
        wait_for_state(client, first, submit_pb2.LEASED)
        second = submit_one(client, "flyte", "js", item(sleeper(cpu="1")))
        client.cancel_jobs("flyte", "js", first)
        wait_for_state(client, second, submit_pb2.LEASED)
        assert state_of(client, first) == submit_pb2.CANCELLED


def test_a_taken_port_is_a_clear_error() -> None:
    with EmbeddedArmada() as armada:
        with pytest.raises(InvalidConfig, match="taken"):
            EmbeddedArmada(EmbeddedConfig(port=armada.port)).start()


def test_a_cluster_file_can_be_given_by_path(tmp_path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "node_sets:\n"
        "  - name: graviton\n    nodes: 3\n    labels: {kubernetes.io/arch: arm64}\n    allocatable: "
        "{cpu: '2', memory: 8Gi}\n"
    )
    with EmbeddedArmada(EmbeddedConfig(cluster=path)) as armada:
        assert [(g.name, g.nodes, g.architecture) for g in armada.node_sets] == [("graviton", 3, "arm64")]
