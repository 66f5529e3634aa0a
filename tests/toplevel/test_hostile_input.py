"""Hostile input to the author surface and the shared readers: only our typed errors, short messages.

Property-based (hypothesis) over ArmadaConfig, SubmissionSpec.from_custom, quantities, image
references and the YAML reader, plus the cases that used to escape as untyped exceptions.
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte.config_file import MAX_NODES, read_yaml
from armada_flyte.errors import InvalidConfig, InvalidImageReference
from armada_flyte.kube import MAX_QUANTITY, parse_quantity, quantity_in_range
from armada_flyte.registry.reference import ImageReference
from armada_flyte.spec import CONFIG_FIELDS, ArmadaConfig, SubmissionSpec

from support.hostile_values import MAX_MESSAGE, awkward_numbers, awkward_text, values, yaml_documents

pytestmark = pytest.mark.pure

FAST = settings(max_examples=150, deadline=None)


@FAST
@given(st.dictionaries(st.sampled_from(CONFIG_FIELDS), values, max_size=5))
def test_armada_config_takes_anything_and_raises_only_invalid_config(kwargs):
    try:
        ArmadaConfig(**kwargs)
    except InvalidConfig as exc:
        assert len(str(exc)) < MAX_MESSAGE


@FAST
@given(st.one_of(values, st.dictionaries(st.sampled_from([*CONFIG_FIELDS, "sources", "x"]), values, max_size=5)))
def test_the_custom_decoder_takes_anything_and_raises_only_invalid_config(custom):
    try:
        SubmissionSpec.from_custom(custom if isinstance(custom, dict) else {"queue": custom})
    except InvalidConfig as exc:
        assert len(str(exc)) < MAX_MESSAGE


@FAST
@given(st.one_of(awkward_numbers, awkward_text))
def test_a_quantity_is_a_finite_bounded_decimal_or_a_value_error(value):
    try:
        quantity = parse_quantity(value)
    except ValueError as exc:
        assert len(str(exc)) < MAX_MESSAGE
    else:
        assert quantity.is_finite()


@FAST
@given(st.one_of(awkward_numbers, awkward_text))
def test_a_quantity_in_range_is_the_parsed_amount_or_a_value_error_naming_the_limit(value):
    try:
        capped = parse_quantity(value)
    except ValueError:
        capped = None  # malformed: refused below as well
    try:
        amount = quantity_in_range(value)
    except ValueError as exc:
        assert len(str(exc)) < MAX_MESSAGE
        if capped is not None:  # it parses, so it is refused only for its size
            assert abs(capped) == MAX_QUANTITY and str(MAX_QUANTITY) in str(exc)
    else:
        assert abs(amount) <= MAX_QUANTITY and amount == capped


@pytest.mark.parametrize(
    "text, amount", [("1E", 10**18), ("2n", Decimal("2e-9")), ("3u", Decimal("3e-6")), ("7Ei", 7 * 2**60)]
)
def test_every_suffix_kubernetes_accepts_is_read(text, amount):
    assert quantity_in_range(text) == amount


@pytest.mark.parametrize(
    "field, value",
    [
        ("cpu", float("nan")),
        ("cpu", float("inf")),
        ("cpu", "1e99999999"),
        ("cpu", ".inf"),
        pytest.param("memory", 10**5000, id="memory-past-the-4300-digit-str-limit"),
        ("memory", "9" * 5000),
        ("priority", float("nan")),
        ("priority", float("inf")),
        pytest.param("priority", 10**400, id="priority-400-digits"),
    ],
)
def test_non_finite_and_huge_numbers_fail_at_construction(field, value):
    with pytest.raises(InvalidConfig, match=f"ArmadaConfig.{field}") as info:
        ArmadaConfig(**{field: value})
    assert len(str(info.value)) < 1000


@FAST
@given(st.one_of(awkward_text, st.text(alphabet="abc/:@.-_0123456789ABC", max_size=80), st.text(max_size=2000)))
def test_an_image_reference_parses_or_raises_invalid_image_reference(text):
    try:
        ImageReference.parse(text)
    except InvalidImageReference as exc:
        assert len(str(exc)) < MAX_MESSAGE


@settings(max_examples=80, deadline=None)
@given(yaml_documents)
def test_the_yaml_reader_returns_a_mapping_or_raises_invalid_config(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("yaml") / "file.yaml"
    path.write_bytes(document.encode("utf-8", "surrogatepass"))
    started = time.process_time()  # CPU time: a runaway parse burns CPU; a busy machine only adds waiting
    try:
        assert isinstance(read_yaml(path, "some_file", "fix it"), dict)
    except InvalidConfig as exc:
        assert len(str(exc)) < MAX_MESSAGE
    assert time.process_time() - started < 2


def test_an_alias_bomb_is_refused_with_a_short_message(tmp_path):
    levels = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("l0: &l0 [lol]\n" + levels)
    assert bomb.stat().st_size < 600
    with pytest.raises(InvalidConfig, match=f"more than {MAX_NODES} values") as info:
        read_yaml(bomb, "node_groups_file", "fix it")
    assert len(str(info.value)) < 600


@pytest.mark.parametrize(
    "content, problem",
    [
        ("a: " + "[" * 100_000, "nests more than"),
        (b"architectures: \xff\xfe", "not UTF-8"),
        ("- amd64\n- arm64\n", "the document is a list"),
        ("just words", "the document is a str"),
        ("&a [*a]", "refers to the node that contains it"),
        ("when: 2024-02-30 10:00:00", "not valid YAML"),
        ("n: " + "9" * 5000, "not valid YAML"),
        ("~: x", "the key None is a NoneType; every key is a name"),
        ("1: x", "the key 1 is a int"),
    ],
)
def test_unusable_yaml_files_are_invalid_config_naming_the_setting(tmp_path, content, problem):
    path = tmp_path / "file.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InvalidConfig, match=problem) as info:
        read_yaml(path, "node_groups_file", "fix it")
    assert info.value.field == "node_groups_file" and len(str(info.value)) < 1500


def test_a_directory_or_a_huge_file_is_invalid_config(tmp_path):
    with pytest.raises(InvalidConfig, match="directory"):
        read_yaml(tmp_path, "cluster", "pass a file")
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"# " + b"x" * (5 * 2**20))
    with pytest.raises(InvalidConfig, match="larger than 4 MiB"):
        read_yaml(huge, "cluster", "pass a file")


def test_a_huge_field_path_and_fix_are_cut_in_the_message():
    """A document's keys are part of a field's path, so they are input too: the message stays bounded."""
    error = InvalidConfig("groups.yaml: " + "k" * 100_000, "v" * 100_000, "f" * 100_000)
    assert len(str(error)) < MAX_MESSAGE
    assert error.field.endswith("k" * 10)  # the whole path stays on the exception
