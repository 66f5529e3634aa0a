"""Who the local blob store answers. moto takes any keys (it checks no signature), so the store must at
least keep web pages out: a request whose Host doesn't name this machine (a DNS name rebound to
127.0.0.1) is misdirected, S3 clients on 127.0.0.1 work as before, and an idle client is dropped."""

from __future__ import annotations

from typing import Iterator

import boto3
import pytest

from armada_flyte.local.stack import ACCESS_KEY, REGION, SECRET_KEY, LocalBlobServer

from support.http_access import assert_idle_client_dropped, request

IDLE_SECONDS = 1.0


@pytest.fixture(scope="module")
def blob() -> Iterator[LocalBlobServer]:
    server = LocalBlobServer(allowed_hosts=["devbox"], idle_seconds=IDLE_SECONDS).start()
    _s3(server).put_object(Bucket=server.bucket, Key="raw/data", Body=b"task data")
    yield server
    server.stop()


def _s3(server: LocalBlobServer):
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    )


def test_s3_clients_on_this_machine_read_and_write_as_before(blob) -> None:
    assert _s3(blob).get_object(Bucket=blob.bucket, Key="raw/data")["Body"].read() == b"task data"


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:9000", "flyte.attacker.example"])
def test_a_rebound_host_is_misdirected(blob, host) -> None:
    status, _, body = request(blob.endpoint, f"/{blob.bucket}/raw/data", host=host)
    assert status == 421 and "task data" not in body


def test_a_name_the_user_allowed_reaches_the_store(blob) -> None:
    status, _, body = request(blob.endpoint, f"/{blob.bucket}/raw/data", host="devbox:9000")
    assert status != 421 and "Misdirected" not in body


def test_an_idle_client_is_dropped_while_others_are_served(blob) -> None:
    def served() -> None:
        assert _s3(blob).head_bucket(Bucket=blob.bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200

    assert_idle_client_dropped(blob.endpoint, IDLE_SECONDS, served)
