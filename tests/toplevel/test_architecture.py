import pytest

from armada_flyte import Architecture, InvalidConfig
from armada_flyte.architecture import parse_optional


@pytest.mark.parametrize(
    "spelling, expected",
    [
        ("arm64", Architecture.arm64),
        ("aarch64", Architecture.arm64),
        ("linux/arm64", Architecture.arm64),
        ("linux/arm64/v8", Architecture.arm64),
        ("ARM64", Architecture.arm64),
        ("amd64", Architecture.amd64),
        ("x86_64", Architecture.amd64),
        ("AMD64", Architecture.amd64),
        ("linux/amd64", Architecture.amd64),
        (" x86-64 ", Architecture.amd64),
        (Architecture.arm64, Architecture.arm64),
    ],
)
def test_user_spellings_normalise(spelling, expected):
    assert Architecture.parse(spelling) is expected


@pytest.mark.parametrize("bad", ["riscv64", "arm", "", "linux/386", 64, None])
def test_unknown_spelling_lists_what_is_accepted(bad):
    with pytest.raises(InvalidConfig) as info:
        Architecture.parse(bad, "ArmadaConfig.architecture")
    message = str(info.value)
    assert "ArmadaConfig.architecture" in message
    assert "amd64" in message and "arm64" in message and "aarch64" in message


def test_platform_string_is_the_oci_form():
    assert Architecture.arm64.platform == "linux/arm64"
    assert str(Architecture.amd64) == "amd64"


def test_optional_parse_treats_none_and_empty_as_unset():
    assert parse_optional(None) is None
    assert parse_optional("") is None
    assert parse_optional("aarch64") is Architecture.arm64
