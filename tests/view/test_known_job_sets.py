"""The job sets local runs recorded per Armada address, for `armada-flyte view` of an Armada that can't list them."""

from __future__ import annotations

import stat

import pytest

from armada_flyte.view import known_job_sets

pytestmark = pytest.mark.pure


def test_recorded_job_sets_are_read_back_for_their_armada_newest_first(tmp_path) -> None:
    path = tmp_path / "state" / "job-sets.json"
    known_job_sets.remember("a:1", "flyte", "flyte-r1", path)
    known_job_sets.remember("b:2", "flyte", "flyte-elsewhere", path)
    known_job_sets.remember("a:1", "ml", "flyte-r2", path)
    assert known_job_sets.recorded("a:1", path) == [("ml", "flyte-r2"), ("flyte", "flyte-r1")]


def test_the_file_is_the_users_alone(tmp_path) -> None:
    path = tmp_path / "state" / "job-sets.json"
    known_job_sets.remember("a:1", "flyte", "flyte-private", path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_only_the_newest_are_kept(tmp_path, monkeypatch) -> None:
    path = tmp_path / "job-sets.json"
    monkeypatch.setattr(known_job_sets, "MAX_KEPT", 3)
    for n in range(5):
        known_job_sets.remember("a:1", "q", f"kept-{n}", path)
    assert known_job_sets.recorded("a:1", path) == [("q", "kept-4"), ("q", "kept-3"), ("q", "kept-2")]


def test_a_damaged_file_is_an_empty_record(tmp_path) -> None:
    path = tmp_path / "job-sets.json"
    path.write_text("{not json")
    assert known_job_sets.recorded("a:1", path) == []
    known_job_sets.remember("a:1", "q", "after-damage", path)
    assert known_job_sets.recorded("a:1", path) == [("q", "after-damage")]


def test_the_default_place_is_the_users_state_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert known_job_sets.default_path() == tmp_path / "armada-flyte" / "job-sets.json"
