import pytest

from armada_flyte import Architecture, ArmadaConfig, InvalidConfig
from armada_flyte.architecture import ANY, parse_optional, parse_request
from armada_flyte.spec import SubmissionSpec

pytestmark = pytest.mark.pure


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


def test_any_is_a_request_not_an_architecture():
    assert parse_request("any") == ANY and parse_request(" Any ") == ANY
    assert parse_request("aarch64") is Architecture.arm64
    assert parse_request(None) is None
    with pytest.raises(InvalidConfig) as info:
        Architecture.parse("any")
    assert "amd64" in str(info.value)


def test_a_wrong_spelling_names_any_among_the_fixes():
    with pytest.raises(InvalidConfig) as info:
        ArmadaConfig(architecture="anything")
    assert "ArmadaConfig.architecture" in str(info.value) and "'any'" in str(info.value)


def test_any_and_the_image_architectures_survive_the_template_round_trip():
    spec = SubmissionSpec.from_config(
        ArmadaConfig(architecture="any"), {"architecture": "project"}, (Architecture.arm64, Architecture.amd64)
    )
    custom = spec.to_custom()
    assert custom["architecture"] == "any" and custom["image_architectures"] == ["amd64", "arm64"]
    back = SubmissionSpec.from_custom(custom)
    assert back.wants_any and back.source_of("architecture") == "project"
    assert back.image_architectures == (Architecture.amd64, Architecture.arm64)


def test_bad_image_architectures_in_a_template_name_the_field():
    with pytest.raises(InvalidConfig) as info:
        SubmissionSpec.from_custom({"architecture": "any", "image_architectures": ["sparc"]})
    assert "custom.image_architectures" in str(info.value)


@pytest.mark.pure
def test_an_architecture_not_offered_reads_as_english() -> None:
    from armada_flyte.errors import ArchitectureNotOffered

    said = str(ArchitectureNotOffered("arm64", ["amd64"]))
    assert "ask your platform admin to add an arm64 node group to the node-group file" in said
