"""Where `armada-flyte dev` takes its credentials: a private file, the environment, or (with a warning) the
command line; a bad one is named by where it came from, never by its secret."""

from __future__ import annotations

import argparse

import pytest

from armada_flyte.admin import auth_sources
from armada_flyte.errors import InvalidConfig

pytestmark = pytest.mark.pure


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    auth_sources.add_arguments(parser)
    return parser.parse_args(argv)


def _private(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "auth"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_private_file_gives_one_credential_a_line_skipping_comments_and_blanks(tmp_path):
    path = _private(tmp_path, "# dev credentials\n\nbasic:ann:pw with spaces\n  bearer:tok-1  \n")
    specs, sources = auth_sources.credential_specs(_args("--auth-file", str(path)), {})
    assert specs == ("basic:ann:pw with spaces", "bearer:tok-1")
    assert sources == [f"--auth-file {path}"]


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o660])
def test_a_file_others_may_read_or_change_is_refused_with_the_fix(tmp_path, mode):
    path = _private(tmp_path, "bearer:secret-token\n", mode)
    with pytest.raises(InvalidConfig) as refused:
        auth_sources.credential_specs(_args("--auth-file", str(path)), {})
    assert f"chmod 600 {path}" in str(refused.value) and "secret-token" not in str(refused.value)


def test_a_bad_line_is_named_by_its_number_without_its_secret(tmp_path):
    path = _private(tmp_path, "bearer:ok\nbasic:only-user-SECRET\n")
    with pytest.raises(InvalidConfig) as refused:
        auth_sources.credential_specs(_args("--auth-file", str(path)), {})
    assert f"{path}, line 2" in str(refused.value)
    assert "basic:USER:PASSWORD" in str(refused.value) and "SECRET" not in str(refused.value)


def test_a_file_without_credentials_or_that_cannot_be_read_is_refused(tmp_path):
    with pytest.raises(InvalidConfig, match="holds no credential"):
        auth_sources.credential_specs(_args("--auth-file", str(_private(tmp_path, "# none yet\n"))), {})
    with pytest.raises(InvalidConfig, match="can't read it"):
        auth_sources.credential_specs(_args("--auth-file", str(tmp_path / "missing")), {})


def test_the_environment_gives_credentials_separated_by_spaces():
    environ = {auth_sources.ENVIRONMENT: "basic:ann:pw-1\nbearer:tok-1 bearer:tok-2"}
    specs, sources = auth_sources.credential_specs(_args(), environ)
    assert specs == ("basic:ann:pw-1", "bearer:tok-1", "bearer:tok-2") and sources == [auth_sources.ENVIRONMENT]


def test_a_bad_credential_in_the_environment_names_the_variable_not_the_secret():
    with pytest.raises(InvalidConfig) as refused:
        auth_sources.credential_specs(_args(), {auth_sources.ENVIRONMENT: "token:SECRET"})
    assert auth_sources.ENVIRONMENT in str(refused.value) and "SECRET" not in str(refused.value)


def test_the_command_line_still_works_but_warns_that_every_local_user_can_read_it(capsys):
    specs, sources = auth_sources.credential_specs(_args("--auth", "bearer:tok-1"), {})
    assert specs == ("bearer:tok-1",) and sources == ["--auth"]
    warning = capsys.readouterr().err
    assert "/proc/PID/cmdline" in warning and "--auth-file" in warning and "tok-1" not in warning


def test_every_source_adds_to_the_others(tmp_path):
    path = _private(tmp_path, "bearer:from-file\n")
    args = _args("--auth", "bearer:from-argument", "--auth-file", str(path))
    specs, sources = auth_sources.credential_specs(args, {auth_sources.ENVIRONMENT: "bearer:from-environment"})
    assert specs == ("bearer:from-argument", "bearer:from-file", "bearer:from-environment")
    assert sources == ["--auth", f"--auth-file {path}", auth_sources.ENVIRONMENT]


def test_without_any_source_there_is_no_auth():
    assert auth_sources.credential_specs(_args(), {}) == ((), [])
