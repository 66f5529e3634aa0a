"""The process executor's container shim: the one process between the server and a container's processes.

It plays containerd's shim for one container, with the standard library only (it runs as
`python -I -S pod_shim.py`, so nothing of the server's environment or packages comes along):

- it dies with the server: the kernel sends it SIGUSR1 when the server thread that started it
  ends (even on SIGKILL), and it then kills every process of the container;
- it is the container's child subreaper, so processes that detach (double fork, setsid) stay
  its descendants and are found and ended with the container;
- it enforces the container's memory limit: when the resident memory of all the container's
  processes (anonymous and shared; not file-backed pages, which a cgroup reclaims) goes over
  it, they are killed (SIGKILL, exit code 137) and the end reads OOMKilled;
- it pins the container to its share of CPUs, and, when the server runs as root, starts the
  container without any capabilities, so the pod cannot read other processes' memory or
  environment (the server marks itself non-dumpable for the same reason);
- when the container's main process ends, the rest of the container is killed, as a container
  runtime does, and the end ("<exit code> <reason>") is written to the status file descriptor.

Usage: pod_shim.py STATUS_FD SERVER_PID MEMORY_LIMIT_BYTES CPU_LIST -- COMMAND [ARG...]
(0 for no memory limit, "-" for no CPU pinning).
"""

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SERVER_GONE = signal.SIGUSR1
POLL_SECONDS = 0.1
START_FAILED = 128
"""Exit code of a container whose command could not be started (containerd reports 128, StartError)."""

_libc = ctypes.CDLL(None, use_errno=True)
_prctl = getattr(_libc, "prctl", lambda *args: -1)  # Linux only; elsewhere the shim only supervises
_server_gone = False
_forward_term = False


def _on_server_gone(signum, frame):
    global _server_gone
    _server_gone = True


def _on_term(signum, frame):
    global _forward_term
    _forward_term = True


def descendants():
    """Every live process below this one (all of them are, since this process is a subreaper)."""
    children = _child_lists if _HAS_CHILD_LISTS else _children_from_scan()
    found, todo = [], [os.getpid()]
    while todo:
        below = children(todo.pop())
        found.extend(below)
        todo.extend(below)
    return found


def _child_lists(pid):
    """The children of `pid`, from the kernel's per-thread child lists (no scan of all of /proc)."""
    children = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return children
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as listing:
                children.extend(int(child) for child in listing.read().split())
        except OSError:
            continue
    return children


def _children_from_scan():
    """Parent links of every live process, read from /proc (kernels without child lists)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                raw = stat.read().decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    return lambda pid: children.get(pid, ())


_HAS_PROC = os.path.isdir("/proc/self")
_HAS_CHILD_LISTS = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def resident_bytes(pids):
    """The processes' resident anonymous and shared-memory pages: what a cgroup's memory limit cannot
    reclaim (no swap), so what gets a container OOM-killed. File-backed pages (program text, mapped
    files) are left out: under its limit the kernel drops those before it kills anything."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as status:
                for line in status:
                    if line.startswith((b"RssAnon:", b"RssShmem:")):
                        total += int(line.split()[1]) * 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


def signal_all(signum):
    for pid in descendants():
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def reap_everything():
    """SIGKILL what is left of the container and wait until it is gone."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        signal_all(signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)


def drop_capabilities():
    """A root container gets no capabilities: none now, none after exec (bounding, inheritable, ambient empty)."""
    for cap in range(64):
        _prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if hasattr(_libc, "capset"):
        header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
        _libc.capset(header, (ctypes.c_uint32 * 6)())


def start_container(command, cpus, status_fd):
    pid = os.fork()
    if pid:
        return pid
    try:
        os.close(status_fd)
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(SERVER_GONE, signal.SIG_DFL)
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cpus)
        if os.geteuid() == 0 and sys.platform.startswith("linux"):
            drop_capabilities()
        os.execvp(command[0], command)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the shim
        os.write(2, f"failed to start {command[0]}: {exc}\n".encode())
    os._exit(START_FAILED)


def exit_code_of(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def supervise(main_pid, memory_limit):
    """Wait for the container's main process; (exit code, reason)."""
    global _forward_term
    while True:
        if _server_gone:
            return 137, "Error"
        if _forward_term:
            _forward_term = False
            signal_all(signal.SIGTERM)
        try:
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == main_pid:
                    code = exit_code_of(status)
                    return code, "Completed" if code == 0 else "Error"
        except ChildProcessError:
            return 137, "Error"
        if memory_limit and _HAS_PROC and resident_bytes(descendants()) > memory_limit:
            signal_all(signal.SIGKILL)
            return 137, "OOMKilled"
        time.sleep(POLL_SECONDS)


def main(argv):
    status_fd, server_pid, memory_limit = int(argv[1]), int(argv[2]), int(argv[3])
    cpus = {int(c) for c in argv[4].split(",")} if argv[4] != "-" else set()
    command = argv[6:]
    signal.signal(SERVER_GONE, _on_server_gone)
    signal.signal(signal.SIGTERM, _on_term)
    _prctl(PR_SET_PDEATHSIG, int(SERVER_GONE), 0, 0, 0)
    if os.getppid() != server_pid:
        return 137  # the server died before the death signal was armed
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    main_pid = start_container(command, cpus, status_fd)
    code, reason = supervise(main_pid, memory_limit)
    reap_everything()
    try:
        os.write(status_fd, f"{code} {reason}\n".encode())
    except OSError:
        pass
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
