"""Flyte's root dir as a local run uses it: `flyte.init(root_dir=".")` keeps the string it was given."""

from __future__ import annotations

import pathlib

import pytest

from armada_flyte.local.run import absolute_root

pytestmark = pytest.mark.pure


def test_a_relative_root_dir_given_as_text_is_made_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_root(".") == tmp_path.resolve()
    assert absolute_root("sub") == tmp_path.resolve() / "sub"


def test_no_root_dir_is_the_working_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_root(None) == pathlib.Path(tmp_path).resolve()
