"""The container shim checked without a pod: the main process's peak counts only above the shim's size, files
in memory folders count by their blocks, and without a mount namespace a pod starts only if it needs nothing
from the folders hidden from it. (tests/embedded/test_memory_limits.py and test_pod_isolation.py run real pods.)
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from armada_flyte.pod_runner import pod_shim

MiB = 2**20


PEAK_CHECK = """
import resource, sys, types
sys.path.insert(0, sys.argv[1])
import pod_shim

limit = 8 * 2**20
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * pod_shim.MAXRSS_UNIT
watch = pod_shim.ContainerWatch(limit, [])
watch.main_ended(types.SimpleNamespace(ru_maxrss=baseline // pod_shim.MAXRSS_UNIT), baseline)
print(watch.over_limit())
watch.main_ended(types.SimpleNamespace(ru_maxrss=(baseline + limit) // pod_shim.MAXRSS_UNIT + 1), baseline)
print(watch.over_limit())
"""


def test_the_main_processs_peak_counts_only_above_the_shims_own_size():
    # At exec the kernel carries the forking shim's resident size over as the new program's starting peak.
    # Run in a process of its own, which has no children: the watch counts every process below it.
    shim_folder = str(pathlib.Path(pod_shim.__file__).parent)
    run = subprocess.run([sys.executable, "-I", "-S", "-c", PEAK_CHECK, shim_folder], capture_output=True, text=True)
    assert run.stdout.split() == ["False", "True"], run.stderr


@pytest.mark.pure
def test_files_in_memory_folders_count_by_their_blocks(tmp_path: pathlib.Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/full").write_bytes(b"x" * MiB)
    with open(tmp_path / "sparse", "wb") as sparse:
        sparse.truncate(64 * MiB)
    (tmp_path / "again").hardlink_to(tmp_path / "sub/full")
    assert MiB <= pod_shim.folder_bytes([str(tmp_path)]) < 2 * MiB


BIG_PARENT = """
import os, subprocess, sys
big = bytearray(400 * 2**20)
for i in range(0, len(big), 4096):
    big[i] = 1
check = "import sys; sys.path.insert(0, sys.argv[1]); import pod_shim; print(pod_shim.start_baseline())"
command = [sys.executable, "-I", "-S", "-c", check, sys.argv[1]]
shim = subprocess.run(command, capture_output=True, text=True, check=True)
print(shim.stdout)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_the_baseline_is_the_shims_own_size_not_the_peak_of_the_server_it_was_forked_from():
    # The shim's ru_maxrss starts at the size of the process that forked it (400 MiB here: a busy server's);
    # as the baseline, a container's 100 MiB spike between two checks would read as the shim's own pages.
    shim_folder = str(pathlib.Path(pod_shim.__file__).parent)
    run = subprocess.run([sys.executable, "-c", BIG_PARENT, shim_folder], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) < 64 * MiB, run.stdout


def _shim_without_sys_admin(*options: str) -> subprocess.CompletedProcess:
    """The shim run as root but without CAP_SYS_ADMIN (as in a container): it can't make a mount namespace."""
    import ctypes

    def drop_sys_admin() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(24, 21, 0, 0, 0)  # PR_CAPBSET_DROP, CAP_SYS_ADMIN

    read_end, write_end = os.pipe()
    try:
        command = [sys.executable, "-I", "-S", pod_shim.__file__, str(write_end), str(os.getpid()), "0", "-"]
        return subprocess.run(
            [*command, *options, "--", "/usr/bin/id", "-u"],  # a path: no lookup, which imports from the stdlib
            pass_fds=(write_end,),
            preexec_fn=drop_sys_admin,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        os.close(read_end)
        os.close(write_end)


root_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0, reason="the shim changes uid only as root"
)


@root_only
def test_without_a_mount_namespace_a_pod_needing_nothing_hidden_runs_as_its_uid():
    run = _shim_without_sys_admin("--uid=1879048999", f"--hide={pathlib.Path.home()}")
    assert (run.returncode, run.stdout.strip()) == (0, "1879048999"), run.stderr


@root_only
def test_without_a_mount_namespace_a_pod_needing_a_hidden_folder_fails_to_start_saying_so():
    home = pathlib.Path.home()
    run = _shim_without_sys_admin("--uid=1879048999", f"--hide={home}", f"--show-ro={home}")
    assert run.returncode == 128
    assert "no mount namespace to show the pod the server's files it needs" in run.stderr
