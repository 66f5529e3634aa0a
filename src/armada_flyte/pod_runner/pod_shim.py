"""The process pod runner's container shim: the one process between the server and a container's processes.

It plays containerd's shim for one container, with the standard library only (it runs as
`python -I -S pod_shim.py`, compiled, so nothing of the server's environment or packages comes along; that
is also why it is one file of over 400 lines: it can import no module of this package):

- it dies with the server: the kernel sends it SIGUSR1 when the server thread that started it
  ends (even on SIGKILL), and it then kills every process of the container;
- it is the container's child subreaper, so processes that detach (double fork, setsid) stay
  its descendants and are found and ended with the container;
- it enforces the container's memory limit as the container's memory cgroup would: the usage is
  the resident anonymous memory of all the container's processes (file-backed pages, such as
  program text, are left out: the kernel reclaims those before it OOM-kills) plus the bytes of
  its memory-backed folders (the pod's /dev/shm, Memory emptyDirs: tmpfs pages are charged to the container);
  over the limit, every process is killed (SIGKILL, exit code 137) and the end reads OOMKilled.
  The usage is checked more often while it climbs (every 2 ms when the limit is near), at once
  on every write into those folders (inotify), and once more when the main process ends;
  as a hard stop between checks, no process may map more than the limit + 1 GiB of private
  writable memory (RLIMIT_DATA), and a main process that ends having been resident over the
  limit (its ru_maxrss) also reads OOMKilled;
- it pins the container to the CPUs the server chose (`cpu_pins.py`: whole-CPU limits only),
  and, when asked (CPU_NICE in its environment, which the container doesn't see), lowers the
  container's CPU priority, its session's autogroup included;
- it fences the container (`pod_fence.py`, `host_view.py`): no process of it gains privileges by exec
  (no_new_privs: a setuid program such as sudo runs with the pod's rights), no file it writes grows
  past RLIMIT_FSIZE (the end then reads FileSizeLimit), and a check that finds it holding the pod's
  limit of processes and threads stops it (PidsLimit). When the server runs as root, the container
  runs as the pod's own uid (with RLIMIT_NPROC at that limit, which the kernel counts per uid, so
  the kernel holds it there) in a mount namespace of its own, where the server's home and folders
  other users can't enter are empty but for what the pod needs of them, and without any capability
  (bounding and ambient sets emptied), so it reads neither other pods' files nor the server's
  memory and environment;
- when the container's main process ends, the rest of the container is killed, as a container
  runtime does, and the end ("<exit code> <reason> <most seen bytes> reaped|left") is written to the
  status file descriptor: "reaped" once none of the container's processes is left, so the server
  need not look for them (a scan of all of /proc, the most of its CPU a pod on a busy machine).

Usage: pod_shim.py STATUS_FD SERVER_PID MEMORY_LIMIT_BYTES CPU_LIST [OPTION...] -- COMMAND [ARG...]
(0 for no memory limit, "-" for no CPU pinning). Options: --memory=FOLDER (its files count toward the
memory usage), --pids=N (stop the container at N tasks), --fsize=BYTES, --uid=UID (run as UID, group
UID, with RLIMIT_NPROC at --pids), --hide=FOLDER, --show-ro=FOLDER and --show-rw=FOLDER (inside a hidden one).
"""

# The C module under `signal`: the same calls and numbers, without `signal`'s enum classes, whose import is a
# sixth of the shim's start, paid by every pod.
import _signal as signal  # noqa: E402
import ctypes
import os
import resource
import select
import struct
import sys
import time

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x20000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SERVER_GONE = signal.SIGUSR1
SLOWEST_CHECK_SECONDS = 0.1
CPU_NICE = "ARMADA_FLYTE_CPU_NICE"
"""The nice level the container runs at (set by the process pod runner, removed before the container starts)."""
FASTEST_CHECK_SECONDS = 0.002
DATA_HEADROOM_BYTES = 1 << 30
"""How far past its memory limit one process may map private writable memory (RLIMIT_DATA): a hard stop for
growth faster than the checks, with room for memory that is mapped but never touched (thread stacks, arenas)."""
BASELINE_MARGIN_BYTES = 1 << 20
"""What the forked shim may add to its resident size before the exec."""
MAXRSS_UNIT = 1024 if sys.platform.startswith("linux") else 1
"""ru_maxrss is in KiB on Linux (bytes on macOS)."""
IN_MODIFY, IN_MOVED_TO, IN_CREATE, IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x2, 0x80, 0x100, 0x4000, 0x8000, 0x40000000
IN_NONBLOCK_CLOEXEC = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_EVENT_HEADER = struct.Struct("iIII")
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


def _on_child(signum, frame):
    """Nothing to do: the signal's byte on the wakeup pipe wakes the supervisor."""


def descendants():
    """Every live process below this one (all of them are, since this process is a subreaper)."""
    return descendants_and_tasks()[0]


def descendants_and_tasks():
    """Every live process below this one, and how many tasks (threads) they run: what RLIMIT_NPROC and a
    pids cgroup count."""
    shim = os.getpid()
    found, todo, tasks = [], [shim], [0]
    children = (lambda pid: _child_lists(pid, tasks, pid != shim)) if _HAS_CHILD_LISTS else _children_from_scan()
    while todo:
        below = children(todo.pop())
        found.extend(below)
        todo.extend(below)
    if not _HAS_CHILD_LISTS:
        tasks[0] = sum(_task_count(pid) for pid in found)
    return found, tasks[0]


def _task_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _child_lists(pid, tasks, count):
    """The children of `pid`, from the kernel's per-thread child lists (no scan of all of /proc); with `count`,
    its thread count is added to `tasks[0]`."""
    children = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return children
    if count:
        tasks[0] += len(threads)
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
    """The resident anonymous memory of `pids`, quickly (pages shared between them, such as after a fork, count
    twice). File-backed pages (program text, mapped files) are left out: under a cgroup's limit the kernel
    reclaims those before it kills anything; tmpfs pages are counted by `folder_bytes`."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as statm:
                fields = statm.read().split()
                total += (int(fields[1]) - int(fields[2])) * page  # resident - shared (file and shmem)
        except (OSError, IndexError, ValueError):
            continue
    return total


def proportional_bytes(pids):
    """The resident memory of `pids` with each shared page split between its sharers (Pss), as a memory cgroup
    charges a page once; slower than `resident_bytes`, so only asked when that one is over the limit."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
                lines = {line.split(b":")[0]: line for line in rollup}
            # anonymous pages only, as `resident_bytes` (older kernels have no Pss_Anon: all of Pss)
            total += int(lines.get(b"Pss_Anon", lines[b"Pss"]).split()[1]) * 1024
        except (OSError, KeyError, IndexError, ValueError):
            total += resident_bytes([pid])
    return total


def folder_bytes(folders):
    """Bytes allocated to the files under `folders` (blocks, so a sparse file counts what it holds), each file once."""
    seen, total = set(), 0
    todo = list(folders)
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if (info.st_dev, info.st_ino) not in seen:
                        seen.add((info.st_dev, info.st_ino))
                        total += info.st_blocks * 512
            except OSError:
                continue
    return total


class FolderWrites:
    """An inotify watch on folders and every folder below them: readable when a file in them is written."""

    def __init__(self, folders):
        init = getattr(_libc, "inotify_init1", None)
        self.fd = init(IN_NONBLOCK_CLOEXEC) if init else -1
        self.folders = folders
        self._watched = {}
        for folder in folders:
            self._watch_tree(folder)

    def _watch_tree(self, folder):
        if self.fd < 0:
            return
        for path, _, _ in os.walk(folder):
            wd = _libc.inotify_add_watch(self.fd, os.fsencode(path), IN_MODIFY | IN_CREATE | IN_MOVED_TO)
            if wd >= 0:
                self._watched[wd] = path

    def drain(self):
        """Read the pending events; new folders get watched too."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                return
            offset = 0
            while offset + _EVENT_HEADER.size <= len(data):
                wd, mask, _, length = _EVENT_HEADER.unpack_from(data, offset)
                name = data[offset + _EVENT_HEADER.size : offset + _EVENT_HEADER.size + length].rstrip(b"\0")
                offset += _EVENT_HEADER.size + length
                if mask & IN_Q_OVERFLOW:
                    for folder in self.folders:
                        self._watch_tree(folder)  # events were lost: folders made meanwhile may be unwatched
                elif mask & IN_IGNORED:
                    self._watched.pop(wd, None)
                elif mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and wd in self._watched:
                    self._watch_tree(os.path.join(self._watched[wd], os.fsdecode(name)))


class ContainerWatch:
    """The container's memory usage against its limit (0: none), checked more often the faster it nears the
    limit, and its tasks against the pod's pids limit (0: none)."""

    def __init__(self, limit, folders, pids_limit=0):
        self.limit = limit
        self.pids_limit = pids_limit
        self.folders = folders
        self.writes = FolderWrites(folders) if folders else None
        self.peak = 0
        """The main process's largest resident size, known once it has ended (ru_maxrss)."""
        self.most_seen = 0
        """The most the checks (and the main process's peak) saw the container use: what an OOM kill reports."""
        self.interval = FASTEST_CHECK_SECONDS
        self.next_check = 0.0
        self._last = None
        """(time, usage) of the last check."""

    def breach(self):
        """None while the container keeps within its limits, else why it must end: OOMKilled, or PidsLimit when
        it holds the pod's limit of tasks (where the pod's forks fail: a fork bomb, most likely)."""
        pids, tasks = descendants_and_tasks()
        if self.pids_limit and tasks >= self.pids_limit:
            return "PidsLimit"
        if not self.limit:
            self.next_check = time.monotonic() + SLOWEST_CHECK_SECONDS
            return None
        return "OOMKilled" if self.over_limit(pids) else None

    def over_limit(self, pids=None):
        """Whether the container's memory is over its limit."""
        if not self.limit:
            return False
        pids = descendants() if pids is None else pids
        in_folders = folder_bytes(self.folders)
        usage = resident_bytes(pids) + in_folders
        self.most_seen = max(self.most_seen, usage, self.peak)
        now = time.monotonic()
        self._pace(now, usage)
        if max(usage, self.peak) <= self.limit:
            return False
        return max(proportional_bytes(pids) + in_folders, self.peak) > self.limit

    def _pace(self, now, usage):
        """Next check after a quarter of the time the usage, growing as since the last check, takes to the limit."""
        if self._last is not None:
            then, before = self._last
            rate = (usage - before) / max(now - then, 1e-6)
            self.interval = (self.limit - usage) / rate / 4 if rate > 0 else self.interval * 2
            self.interval = min(SLOWEST_CHECK_SECONDS, max(FASTEST_CHECK_SECONDS, self.interval))
        self._last = (now, usage)
        self.next_check = now + self.interval

    def check_soon(self):
        """After a write into a memory folder: check now, but no sooner than the fastest checks allow."""
        checked_at = self._last[0] if self._last else 0.0
        self.next_check = min(self.next_check, checked_at + FASTEST_CHECK_SECONDS)

    def main_ended(self, rusage, baseline):
        """Take the main process's peak, when it is its own: at exec the kernel keeps the forking process's
        resident size as the new program's starting peak, so up to `baseline` it may be the shim's."""
        peak = rusage.ru_maxrss * MAXRSS_UNIT
        if peak > baseline:
            self.peak = peak


def signal_all(signum):
    for pid in descendants():
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def reap_everything():
    """SIGKILL what is left of the container and wait until it is gone; False if a process outlived the wait
    (the server then looks for the container's processes itself)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        signal_all(signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return True
        time.sleep(0.01)
    return False


def fence(options):
    """Keep the container to its pod (the shim's options, in order): its file-size limit, no privilege gained
    by exec, and, when the server is root, its view of the host, its own uid (with the pod's RLIMIT_NPROC)
    and no capabilities."""
    values = {}
    for name, value in options:
        values.setdefault(name, []).append(value)
    if "fsize" in values:
        set_limit(resource.RLIMIT_FSIZE, int(values["fsize"][0]))
    if not sys.platform.startswith("linux"):
        return
    if "hide" in values:
        shown = [(value, name == "show-rw") for name, value in options if name in ("show-ro", "show-rw")]
        show_only(values["hide"], shown)
    _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if os.geteuid() != 0:
        return
    for cap in range(64):
        _prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if "uid" in values:
        uid = int(values["uid"][0])
        if "pids" in values:
            set_limit(resource.RLIMIT_NPROC, int(values["pids"][0]))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root to another uid: every capability goes too
    elif hasattr(_libc, "capset"):
        header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
        _libc.capset(header, (ctypes.c_uint32 * 6)())


def set_limit(kind, value):
    """Soft and hard limit `value` (never above the current hard limit), so the container can't lift it."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def show_only(hidden, shown):
    """In a mount namespace of the container's own, each hidden folder is an empty tmpfs and each shown
    (folder, writable), inside one, is bound back into it as it is (read-only unless writable). Without a
    namespace (no CAP_SYS_ADMIN: a root server in a container) the hidden folders' own modes fence them, unless
    the pod needs something inside them."""
    cwd = os.getcwd()
    if _libc.unshare(CLONE_NEWNS) != 0:
        if not shown:
            return
        raise OSError(ctypes.get_errno(), "no mount namespace to show the pod the server's files it needs (unshare)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened in the new namespace (a bind mount's source must be in it), before the tmpfs covers them.
    sources = [(folder, writable, os.open(folder, os.O_PATH | os.O_CLOEXEC)) for folder, writable in shown]
    for folder in hidden:
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for folder, writable, source in sources:
        os.makedirs(folder, exist_ok=True)
        mount(f"/proc/self/fd/{source}", folder, None, MS_BIND | MS_REC)
        if not writable:
            kept = os.statvfs(folder).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        os.close(source)
    os.chdir(cwd)


def mount(source, target, kind, flags, data=None):
    def c(text):
        return None if text is None else os.fsencode(text)

    if _libc.mount(c(source), c(target), c(kind), ctypes.c_ulong(flags), c(data)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{os.strerror(number)}: mount {target}")


def lower_priority(nice):
    """Run at `nice`; the new session's autogroup too, or the kernel would weigh it as any other session."""
    os.nice(nice)
    try:
        with open("/proc/self/autogroup", "w") as autogroup:
            autogroup.write(str(nice))
    except OSError:
        pass  # no autogroups (kernel option off): the nice level alone weighs the processes


def limit_data(memory_limit):
    """Cap every process's private writable memory at the memory limit + DATA_HEADROOM_BYTES."""
    set_limit(resource.RLIMIT_DATA, memory_limit + DATA_HEADROOM_BYTES)


def start_baseline():
    """Up to what size the main process's peak may be the shim's own: the shim's resident size now, which the
    forked container carries over to its exec, plus a margin. Not the shim's own peak (ru_maxrss): that holds
    the server the shim was forked from, as big as it was at the shim's exec, and would hide a real spike."""
    if _HAS_PROC:
        with open("/proc/self/statm") as statm:
            resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    else:
        resident = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * MAXRSS_UNIT
    return resident + BASELINE_MARGIN_BYTES


def default_signals():
    """Every signal at its default and none blocked, as a container runtime starts a container: Python ignores
    SIGPIPE and SIGXFSZ, and a server started as a shell's background job has SIGINT and SIGQUIT ignored."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # signals the C library keeps for itself (the real-time ones it uses for threads)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def start_container(command, cpus, memory_limit, status_fd, options=()):
    """Fork and exec the container's command, fenced by `options`; returns its pid once the exec is done (or
    has failed)."""
    exec_read, exec_write = os.pipe()  # both close-on-exec: EOF on the read end means the exec happened
    pid = os.fork()
    if pid:
        os.close(exec_write)
        os.read(exec_read, 1)
        os.close(exec_read)
        return pid
    try:
        os.close(status_fd)
        os.close(exec_read)
        os.setsid()
        nice = int(os.environ.pop(CPU_NICE, "0") or 0)
        if nice > 0:
            lower_priority(nice)
        signal.set_wakeup_fd(-1)
        default_signals()
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cpus)
        if memory_limit and _HAS_PROC:
            limit_data(memory_limit)
        fence(options)
        os.execvp(command[0], command)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the shim
        os.write(2, f"failed to start {command[0]}: {exc}\n".encode())
    os._exit(START_FAILED)


def exit_code_of(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def supervise(main_pid, watch, wakeup_fd, baseline):
    """Wait for the container's main process; (exit code, reason).

    The end reads OOMKilled also when the main process ends having been resident over the limit between two
    checks (or, refused more memory by the RLIMIT_DATA stop, ends by itself)."""
    global _forward_term
    while True:
        if _server_gone:
            return 137, "Error"
        if _forward_term:
            _forward_term = False
            signal_all(signal.SIGTERM)
        try:
            while True:
                pid, status, rusage = os.wait4(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == main_pid:
                    code = exit_code_of(status)
                    if watch:
                        watch.main_ended(rusage, baseline)
                        if watch.over_limit():
                            return 137, "OOMKilled"
                    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXFSZ:
                        return code, "FileSizeLimit"
                    return code, "Completed" if code == 0 else "Error"
        except ChildProcessError:
            return 137, "Error"
        if watch and time.monotonic() >= watch.next_check:
            breach = watch.breach()
            if breach:
                signal_all(signal.SIGKILL)
                return 137, breach
        wait_for_news(watch, wakeup_fd)


def wait_for_news(watch, wakeup_fd):
    """Sleep until a signal (a child ended, a stop), a write into a memory folder, or the next check is due."""
    readable = [wakeup_fd]
    writes = watch.writes if watch else None
    if writes is not None and writes.fd >= 0:
        readable.append(writes.fd)
    timeout = SLOWEST_CHECK_SECONDS if watch is None else max(0.0, watch.next_check - time.monotonic())
    ready, _, _ = select.select(readable, [], [], timeout)
    if wakeup_fd in ready:
        try:
            os.read(wakeup_fd, 4096)
        except (BlockingIOError, InterruptedError):
            pass
    if writes is not None and writes.fd in ready:
        writes.drain()
        watch.check_soon()


def main(argv):
    status_fd, server_pid, memory_limit = int(argv[1]), int(argv[2]), int(argv[3])
    cpus = {int(c) for c in argv[4].split(",")} if argv[4] != "-" else set()
    separator = argv.index("--")
    options = [arg[2:].partition("=")[::2] for arg in argv[5:separator]]
    memory_folders = [value for name, value in options if name == "memory"]
    pids_limit = next((int(value) for name, value in options if name == "pids"), 0)
    command = argv[separator + 1 :]
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_read, False)
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write, warn_on_full_buffer=False)
    signal.signal(SERVER_GONE, _on_server_gone)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGCHLD, _on_child)
    _prctl(PR_SET_PDEATHSIG, int(SERVER_GONE), 0, 0, 0)
    if os.getppid() != server_pid:
        return 137  # the server died before the death signal was armed
    _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    watch = (
        ContainerWatch(memory_limit, memory_folders, pids_limit) if (memory_limit or pids_limit) and _HAS_PROC else None
    )
    baseline = start_baseline()
    main_pid = start_container(command, cpus, memory_limit, status_fd, options)
    code, reason = supervise(main_pid, watch, wakeup_read, baseline)
    reaped = reap_everything()
    try:
        seen = watch.most_seen if watch and reason == "OOMKilled" else 0
        os.write(status_fd, f"{code} {reason} {seen} {'reaped' if reaped else 'left'}\n".encode())
    except OSError:
        pass
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
