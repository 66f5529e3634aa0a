"""The pod fence's rules, without pods: each pod's uid, its file-size limit, the shim's options, what a pod
asks to run as, and which of the host's folders a root server's pods see."""

from __future__ import annotations

import pathlib

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner.host_view import host_view
from armada_flyte.pod_runner.pod_fence import PodFence, PodUids, run_as_group, run_as_user, shim_options

pytestmark = pytest.mark.pure


def test_pods_take_uids_in_turn_and_a_uid_comes_back_only_after_the_range() -> None:
    uids = PodUids(PodFence(uid_base=5000, uid_count=3))
    first, second = uids.take(), uids.take()
    uids.give_back(first)
    assert (first, second, uids.take(), uids.take()) == (5000, 5001, 5002, 5000)


def test_a_uid_a_pod_holds_is_never_given_again() -> None:
    uids = PodUids(PodFence(uid_base=5000, uid_count=2))
    held = uids.take()
    uids.give_back(uids.take())
    assert uids.take() == 5001 and held == 5000
    with pytest.raises(InvalidConfig, match="more pods run at once than the range has uids"):
        uids.take()


def test_a_smaller_ephemeral_storage_lowers_the_file_size_limit() -> None:
    fence = PodFence(file_size_limit=1 << 30)
    assert (fence.file_size_for(0), fence.file_size_for(1 << 20), fence.file_size_for(1 << 40)) == (
        1 << 30,
        1 << 20,
        1 << 30,
    )


@pytest.mark.parametrize(
    ("uid", "expected"),
    [
        (None, ["--pids=64", "--fsize=4096"]),  # the server's user: no RLIMIT_NPROC (it counts the user's all)
        (7000, ["--pids=64", "--fsize=4096", "--uid=7000", "--hide=/root", "--show-ro=/root/py"]),
    ],
)
def test_the_shim_runs_a_pod_as_its_own_uid_in_its_view_only_when_it_has_one(uid, expected) -> None:
    fence = PodFence(pids_limit=64, file_size_limit=4096)
    assert shim_options(fence, 0, uid, ["--hide=/root", "--show-ro=/root/py"]) == expected


def test_a_containers_security_context_comes_before_the_pods() -> None:
    spec = core.PodSpec(containers=[core.Container(name="a"), core.Container(name="b")])
    spec.securityContext.runAsUser = 1000
    spec.securityContext.runAsGroup = 1001
    spec.containers[1].securityContext.runAsUser = 2000
    first, second = spec.containers
    assert (run_as_user(spec, first), run_as_user(spec, second), run_as_group(spec, second)) == (1000, 2000, 1001)
    assert run_as_user(core.PodSpec(), core.Container()) is None


def folders(pods_tmp_path: pathlib.Path, *closed: str) -> None:
    """Folders in one every user may enter (pytest's tmp_path is in a folder only its user enters)."""
    for name in ("home/py/lib", "shared/venv", "closed/sandboxes", "open"):
        (pods_tmp_path / name).mkdir(parents=True)
    for name in closed:
        (pods_tmp_path / name).chmod(0o700)


def test_the_home_is_hidden_and_the_python_in_it_shown_read_only(pods_tmp_path: pathlib.Path) -> None:
    folders(pods_tmp_path, "home")
    view = host_view(
        [pods_tmp_path / "home"], [(pods_tmp_path / "home/py", False), (pods_tmp_path / "shared/venv", False)]
    )
    assert view.hidden == (str(pods_tmp_path / "home"),)
    assert view.shown == ((str(pods_tmp_path / "home/py"), False),)


def test_a_folder_others_cant_enter_above_the_sandboxes_is_hidden_and_they_are_shown_writable(
    pods_tmp_path: pathlib.Path,
) -> None:
    folders(pods_tmp_path, "closed")
    view = host_view([], [(pods_tmp_path / "closed/sandboxes", True), (pods_tmp_path / "open", False)])
    assert view.hidden == (str(pods_tmp_path / "closed"),)
    assert view.shown == ((str(pods_tmp_path / "closed/sandboxes"), True),)


def test_a_home_holding_a_needed_folder_above_it_is_not_hidden(pods_tmp_path: pathlib.Path) -> None:
    folders(pods_tmp_path)
    view = host_view([pods_tmp_path / "home/py"], [(pods_tmp_path / "home", False)])
    assert view.hidden == () and view.shown == ()


def test_shown_folders_inside_others_shown_alike_are_dropped(pods_tmp_path: pathlib.Path) -> None:
    folders(pods_tmp_path, "home")
    view = host_view(
        [pods_tmp_path / "home"], [(pods_tmp_path / "home/py/lib", False), (pods_tmp_path / "home/py", False)]
    )
    assert view.shown == ((str(pods_tmp_path / "home/py"), False),)
    assert view.shim_arguments() == [f"--hide={pods_tmp_path / 'home'}", f"--show-ro={pods_tmp_path / 'home/py'}"]
