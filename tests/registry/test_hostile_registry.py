"""The registry client against a registry of the tests' own that misbehaves on purpose.

Whatever comes back (huge or endless bodies, gzip bombs, a byte every few hundred milliseconds,
malformed or deeply nested JSON, odd challenges), the client ends within its bound with one of
our `RegistryError`s, a short message, and little memory; the submit-time check only warns.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import ssl
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.submit.image_check import ImagePlatformCheck
from armada_flyte.errors import RegistryError, RegistryProtocolError, RegistryUnreachable
from armada_flyte.registry.client import MAX_MANIFEST_BYTES, RegistryClient

from support.hostile_registry import Answer, drip, hostile_registry, repeated

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG_DIGEST = "sha256:" + "a" * 64
MAX_MESSAGE = 4096
_TLS = ssl.create_default_context()  # made once: building one per client costs ~0.1 s


@pytest.fixture(scope="module")
def registry():
    with hostile_registry() as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(registry):
    registry.answers.clear()


def _lookup(registry, timeout: float = 5.0):
    with RegistryClient(timeout=timeout, use_docker_config=False, verify=_TLS) as client:
        return client.platforms(f"{registry.host}/app:1")


def _memory_peak(call):
    tracemalloc.start()
    try:
        with pytest.raises(RegistryError) as info:
            call()
        return tracemalloc.get_traced_memory()[1], info.value
    finally:
        tracemalloc.stop()


def test_an_endless_manifest_stops_at_the_bound_without_holding_it(registry):
    registry.answers["app/manifests/1"] = Answer(body=repeated(b"x" * 65536, 256 * 2**20))
    peak, error = _memory_peak(lambda: _lookup(registry))
    assert isinstance(error, RegistryProtocolError) and "larger than" in str(error)
    assert peak < 3 * MAX_MANIFEST_BYTES  # the whole 256 MiB would be far more


def test_a_declared_huge_length_is_refused_before_reading(registry):
    registry.answers["app/manifests/1"] = Answer(
        headers={"Content-Length": str(256 * 2**20)}, body=repeated(b"x" * 65536, 256 * 2**20)
    )
    with pytest.raises(RegistryProtocolError, match="larger than"):
        _lookup(registry)


def test_a_gzip_bomb_is_inflated_only_up_to_the_bound(registry):
    bomb = gzip.compress(b"\0" * (64 * 2**20), compresslevel=9)  # ~64 KiB that inflates to 64 MiB
    registry.answers["app/manifests/1"] = Answer(headers={"Content-Type": INDEX, "Content-Encoding": "gzip"}, body=bomb)
    peak, error = _memory_peak(lambda: _lookup(registry))
    assert isinstance(error, RegistryProtocolError) and "larger than" in str(error)
    assert peak < 3 * MAX_MANIFEST_BYTES


def test_gzip_answers_within_the_bound_are_read(registry):
    index = {"mediaType": INDEX, "manifests": [{"platform": {"os": "linux", "architecture": "arm64"}}]}
    registry.answers["app/manifests/1"] = Answer(
        headers={"Content-Type": INDEX, "Content-Encoding": "gzip"}, body=gzip.compress(json.dumps(index).encode())
    )
    assert [str(p) for p in _lookup(registry).platforms] == ["linux/arm64"]


def test_a_slow_drip_is_cut_at_the_overall_deadline(registry):
    index = json.dumps({"mediaType": INDEX, "manifests": []}).encode()
    registry.answers["app/manifests/1"] = Answer(headers={"Content-Type": INDEX}, body=drip(index, 0.2))
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable, match="within 1s"):
        _lookup(registry, timeout=1.0)
    assert time.monotonic() - started < 2.0  # each read is short; only the whole-call deadline ends it


def test_a_registry_that_never_answers_is_cut_at_the_deadline(registry):
    registry.answers["app/manifests/1"] = Answer(body=iter([30.0]))  # headers, then silence
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable):
        _lookup(registry, timeout=1.0)
    assert time.monotonic() - started < 2.0


def test_the_deadline_covers_the_whole_lookup_not_each_request(registry):
    """Manifest, then config blob: together they share one bound."""
    manifest = {"mediaType": MANIFEST, "config": {"digest": CONFIG_DIGEST}}
    registry.answers["app/manifests/1"] = Answer(
        headers={"Content-Type": MANIFEST}, body=drip(json.dumps(manifest).encode(), 0.005)
    )
    registry.answers[f"app/blobs/{CONFIG_DIGEST}"] = Answer(body=drip(b'{"os": "linux", "architecture": "arm64"}', 0.1))
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable):
        _lookup(registry, timeout=1.5)
    assert time.monotonic() - started < 2.5


def test_nesting_deeper_than_the_stack_is_a_protocol_error(registry):
    registry.answers["app/manifests/1"] = Answer(body=b"[" * 200_000 + b"]" * 200_000)
    with pytest.raises(RegistryProtocolError, match="not JSON"):
        _lookup(registry)


def test_the_submit_time_check_only_warns_about_a_malformed_registry(registry, caplog):
    registry.answers["app/manifests/1"] = Answer(
        headers={"Content-Type": INDEX}, body=b'{"manifests": [{"platform": "linux/arm64", "annotations": [1]}, 7]}'
    )
    registry.answers["app/manifests/2"] = Answer(body=b'{"mediaType": 5, "config": {"digest": "../../etc"}}')
    check = ImagePlatformCheck(resolve_settings(check_image_platforms=True).images)
    with caplog.at_level(logging.WARNING):
        asyncio.run(check.check(f"{registry.host}/app:2", Architecture.arm64, "t"))
    check.close()
    assert "submitting anyway" in caplog.text


# ---- generated answers ----
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
_fields = st.sampled_from(["mediaType", "manifests", "config", "platform", "os", "architecture", "digest", "errors"])
_shaped = st.recursive(
    _json,
    lambda children: st.dictionaries(_fields, children, max_size=5) | st.lists(children, max_size=4),
    max_leaves=25,
)
_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)
_body = st.one_of(
    _shaped.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=200),
    st.builds(lambda n: b"[" * n, st.integers(1, 50_000)),
    st.builds(lambda d: b'{"a": ' + b"9" * d + b"}", st.integers(4000, 6000)),
)
_content_type = st.sampled_from(
    [INDEX, MANIFEST, "application/json", "text/plain", "application/vnd.docker.distribution.manifest.v1+json", ""]
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    status=st.sampled_from([200, 200, 200, 401, 403, 404, 429, 500, 418]),
    content_type=_content_type,
    body=_body,
    challenge=st.one_of(
        _header_text,
        st.builds(lambda extra: f'Bearer realm="http://HOST/token",{extra}', _header_text),
        st.builds(lambda realm, extra: f'Bearer realm="{realm}",{extra}', _header_text, _header_text),
    ),
    config_body=_body,
    token_body=_body,
)
def test_any_answer_gives_platforms_or_one_of_our_errors(
    registry, status, content_type, body, challenge, config_body, token_body
):
    challenge = challenge.replace("HOST", registry.host)
    headers = {"Content-Type": content_type, "WWW-Authenticate": challenge, "Location": "/v2/app/manifests/1"}
    registry.answers["app/manifests/1"] = Answer(status, headers, body)
    registry.answers[f"app/blobs/{CONFIG_DIGEST}"] = Answer(body=config_body)
    registry.answers["/token"] = Answer(body=token_body)
    try:
        found = _lookup(registry, timeout=3.0)
    except RegistryError as exc:
        assert len(str(exc)) < MAX_MESSAGE
    else:
        assert all(isinstance(p.architecture, str) for p in found.platforms)
