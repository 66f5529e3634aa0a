"""Queues: Submit/QueueService CreateQueue(s), UpdateQueue, GetQueue(s), DeleteQueue, as Armada answers them."""

from __future__ import annotations

import grpc
import pytest
from armada_client.client import ArmadaClient

from support.pods import unique


def queue_request(client: ArmadaClient, name: str, priority_factor: float = 1.0):
    return client.create_queue_request(name, priority_factor=priority_factor)


def test_created_queue_can_be_read_back(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name, priority_factor=2.0))
    queue = client.get_queue(name)
    assert (queue.name, queue.priority_factor) == (name, 2.0)


def test_creating_an_existing_queue_is_already_exists(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    with pytest.raises(grpc.RpcError) as error:
        client.create_queue(queue_request(client, name))
    assert error.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_priority_factor_below_one_is_invalid(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.create_queue(queue_request(client, unique("q"), priority_factor=0.5))
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_unknown_queue_is_not_found(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.get_queue(unique("missing"))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_update_changes_the_queue(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    client.update_queue(queue_request(client, name, priority_factor=3.0))
    assert client.get_queue(name).priority_factor == 3.0


def test_updating_an_unknown_queue_is_not_found(client: ArmadaClient) -> None:
    with pytest.raises(grpc.RpcError) as error:
        client.update_queue(queue_request(client, unique("missing")))
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_batch_create_reports_only_the_failures(client: ArmadaClient) -> None:
    existing, fresh = unique("q"), unique("q")
    client.create_queue(queue_request(client, existing))
    response = client.create_queues([queue_request(client, existing), queue_request(client, fresh)])
    assert [failure.queue.name for failure in response.failed_queues] == [existing]
    assert client.get_queue(fresh).name == fresh


def test_get_queues_lists_created_queues(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    assert name in {queue.name for queue in client.get_queues()}


def test_deleted_queue_is_gone(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    client.delete_queue(name)
    with pytest.raises(grpc.RpcError) as error:
        client.get_queue(name)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def test_reprioritizing_in_a_queue_that_never_had_a_job_answers(client: ArmadaClient) -> None:
    name = unique("q")
    client.create_queue(queue_request(client, name))
    response = client.reprioritize_jobs(new_priority=1.0, job_ids=[], job_set_id="js", queue=name)
    assert dict(response.reprioritization_results) == {}
