import pytest

from armada_flyte import ArchitectureConflict
from armada_flyte.connector.submit.gangs import GangArchitectures

pytestmark = pytest.mark.pure


def test_members_on_one_architecture_are_accepted():
    gangs = GangArchitectures()
    gangs.claim("q", "g-run", "m1", "arm64", "train")
    gangs.claim("q", "g-run", "m2", "arm64", "train")
    with pytest.raises(ArchitectureConflict, match="run on arm64"):  # both were remembered on arm64
        gangs.claim("q", "g-run", "m3", "amd64", "train")


def test_a_member_on_another_architecture_is_refused_naming_both():
    gangs = GangArchitectures()
    gangs.claim("q", "g-run", "m1", "arm64", "train")
    with pytest.raises(ArchitectureConflict) as info:
        gangs.claim("q", "g-run", "m2", "amd64", "eval")
    assert "amd64" in str(info.value) and "arm64" in str(info.value) and "eval" in str(info.value)


def test_the_same_gang_id_in_another_queue_is_another_gang():
    gangs = GangArchitectures()
    gangs.claim("q1", "g", "m1", "arm64", "t")
    gangs.claim("q2", "g", "m1", "amd64", "t")
    with pytest.raises(ArchitectureConflict, match="run on arm64"):
        gangs.claim("q1", "g", "m2", "amd64", "t")
    with pytest.raises(ArchitectureConflict, match="run on amd64"):
        gangs.claim("q2", "g", "m2", "arm64", "t")


def test_releasing_the_last_member_frees_the_gang():
    gangs = GangArchitectures()
    gangs.claim("q", "g", "m1", "arm64", "t")
    gangs.release("q", "g", "m1")
    gangs.claim("q", "g", "m2", "amd64", "t")
    with pytest.raises(ArchitectureConflict, match="run on amd64"):  # the gang now is m2's
        gangs.claim("q", "g", "m3", "arm64", "t")


def test_memory_is_bounded():
    gangs = GangArchitectures(limit=2)
    for i in range(3):
        gangs.claim("q", f"g{i}", "m", "arm64", "t")
    gangs.claim("q", "g0", "m", "amd64", "t")  # the oldest was forgotten
    with pytest.raises(ArchitectureConflict, match="run on arm64"):
        gangs.claim("q", "g2", "m9", "amd64", "t")
