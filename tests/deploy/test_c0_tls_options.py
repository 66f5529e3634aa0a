"""`armada-flyte c0`'s command line: TLS unless told otherwise, and a wrong file refused at start, naming its option."""

from __future__ import annotations

import pytest

from armada_flyte.admin.c0_command import ServingTls, options_from
from armada_flyte.admin.cli import build_parser
from armada_flyte.errors import InvalidConfig

from support.tls_files import self_signed

pytestmark = pytest.mark.pure


def _options(*argv: str):
    return options_from(build_parser().parse_args(["c0", *argv]))


def test_without_tls_files_it_refuses_to_start_unless_told_plaintext():
    with pytest.raises(InvalidConfig, match="--tls-cert/--tls-key.*--plaintext"):
        _options("--port", "8000")
    assert _options("--plaintext").tls is None


def test_a_certificate_without_its_key_is_refused():
    with pytest.raises(InvalidConfig, match="give both"):
        _options("--tls-cert", "/etc/armada-flyte/tls/tls.crt")


def test_plaintext_and_tls_files_together_are_refused():
    with pytest.raises(InvalidConfig, match="not both"):
        _options("--plaintext", "--tls-cert", "a.crt", "--tls-key", "a.key")


def test_c0s_own_options_keep_their_spelling_and_defaults():
    options = _options("--plaintext", "--prometheus_port", "9191", "--worker", "4", "--modules", "my.connector")
    assert (options.port, options.health_port, options.prometheus_port) == (8000, 8001, 9191)
    assert (options.worker, options.modules) == (4, ("my.connector",))


def test_a_missing_certificate_file_names_its_option(tmp_path):
    tls = self_signed(tmp_path)
    with pytest.raises(InvalidConfig, match="--tls-cert"):
        ServingTls(tmp_path / "absent.crt", tls.key).configuration()


def test_a_key_of_another_certificate_names_the_key_option(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, other = self_signed(tmp_path / "a"), self_signed(tmp_path / "b")
    with pytest.raises(InvalidConfig, match="--tls-key.*private key of the certificate"):
        ServingTls(one.cert, other.key).configuration()


def test_a_client_ca_that_is_no_certificate_names_its_option(tmp_path):
    tls = self_signed(tmp_path)
    (tmp_path / "ca.crt").write_text("not a certificate")
    with pytest.raises(InvalidConfig, match="--tls-client-ca"):
        ServingTls(tls.cert, tls.key, tmp_path / "ca.crt").configuration()


def test_a_good_pair_reads_into_a_grpc_configuration(tmp_path):
    tls = self_signed(tmp_path)
    assert ServingTls(tls.cert, tls.key, client_ca=tls.cert).configuration() is not None
