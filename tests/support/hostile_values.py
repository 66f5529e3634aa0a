"""Hypothesis strategies for hostile input: values of every JSON/YAML type, the numbers and text
that broke parsers before (NaN, infinities, 5,000-digit integers, `1e99999999`, control characters,
alias bombs, deep nesting), and the bound every error message must stay under."""

from __future__ import annotations

from hypothesis import strategies as st

MAX_MESSAGE = 4096
"""No error message may be longer than this (a few KB), whatever the input."""

awkward_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=10**4300, max_value=10**4400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0, -1, 2**63, 10**30, 1e308, 5e-324]),
)
awkward_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " ",
            "nan",
            "NaN",
            "inf",
            ".inf",
            "-.inf",
            "1e99999999",
            "1e-99999999",
            "9" * 5000,
            "1" + "0" * 400,
            "500m",
            "4Gi",
            "1.2.3",
            "..",
            "1e",
            "+-1",
            "0x10",
            "1_000",
            "\n",
            "a\nb",
            "\x00",
            "\u202e",
            "😀",
            "amd64",
            "arm64",
            "linux/arm64",
            "default",
            "flyte",
            "token=abc",
            "a" * 70,
            "A" * 300,
        ]
    ),
)
scalars = st.one_of(st.none(), st.booleans(), awkward_numbers, awkward_text)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(awkward_text, children, max_size=3),
    max_leaves=8,
)

dumpable_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), awkward_text),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(awkward_text, children, max_size=3),
    max_leaves=8,
)
"""Like `values`, without integers too long for `str()` (which YAML and JSON writers need)."""


def alias_bomb(levels: int = 10, width: int = 9) -> str:
    """A few hundred bytes of YAML whose aliases expand to width**levels values ("billion laughs")."""
    lines = ["l0: &l0 [lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


yaml_documents = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.builds(lambda n: "[" * n, st.integers(1, 5000)),
    st.builds(lambda n: "a:\n" + "".join("  " * i + "b:\n" for i in range(1, n)), st.integers(1, 120)),
    st.builds(
        lambda levels, width: (
            "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]\n" for i in range(1, levels))
        ),
        st.integers(2, 12),
        st.integers(2, 9),
    ),
    st.sampled_from(
        ["- a\n- b\n", "just text", "42", "null", "~", "&a [*a]", "? [a]\n: b\n", "!!python/object:os.system x"]
    ),
)
