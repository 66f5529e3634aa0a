"""Which addresses are on this machine: one rule for gRPC targets and registry hosts."""

from __future__ import annotations

import pytest

from armada_flyte.addresses import is_loopback

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    "address",
    [
        "localhost",
        "localhost:50051",
        "127.0.0.1:50051",
        "127.1.2.3",
        "dns:///localhost:50051",
        "[::1]:50051",
        "[::1]",
        "::1",
    ],
)
def test_loopback_addresses_are_recognised(address):
    assert is_loopback(address)


@pytest.mark.parametrize(
    "address", ["armada.example.com:443", "10.0.0.1:50051", "dns:///armada:50051", "[2001:db8::1]:1", "python"]
)
def test_other_addresses_are_not_loopback(address):
    assert not is_loopback(address)
