"""A pod's private filesystem for the process pod runner: one folder per pod.

Inside a container, paths such as /opt/flyte/ belong to that pod alone. Run as a local process,
those paths are mapped into the pod's sandbox folder wherever they appear in its arguments,
environment and working directory, so two pods never share them and nothing is written outside
the sandbox. HOME and TMPDIR point into the sandbox too. A container's volume mounts are private
paths as well: each volume is a folder of the sandbox (`volumes/<name>`), so containers of one
pod that mount the same volume share it, as they would an emptyDir. Every mapped path is
normalised first, so `..` never climbs out of the sandbox.

The sandbox keeps the server's own paths apart from the pod's. On its own it is not a security
boundary against code that opens host paths on purpose: what fences a pod of a root server is its uid
(`pod_fence.py`), which owns its sandbox (mode 0700) from the moment the runner has made all of it, before
any container starts, so the runner never writes where a pod could have put a link; when the pod ends,
its secret files are removed (without following links) and the sandbox goes back to root.
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

from armada_flyte.pod_runner.container_env import container_env
from armada_flyte.pod_runner.images import Image
from armada_flyte.pod_runner.model import PodLaunch
from armada_flyte.pod_runner.pod_secrets import SecretFile

SHARED_MEMORY = "/dev/shm"
"""The pod's own tmpfs in a container (the pod sandbox's shm mount), whose pages are charged to the memory
cgroup of the container that writes them."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_PRIVATE_PREFIXES = ("/opt/flyte", "/etc/flyte/secrets", SHARED_MEMORY, SERVICE_ACCOUNT_DIR)
"""Absolute path prefixes that belong to the pod; Flyte's a0 unpacks the code bundle under /opt/flyte/,
Flyte mounts file secrets under /etc/flyte/secrets/ (named by FLYTE_SECRETS_DEFAULT_DIR), /dev/shm is
the pod's shared memory, and Kubernetes mounts the pod's service account (its namespace file) under
SERVICE_ACCOUNT_DIR."""

_HOST_VARIABLES = ("LANG", "LC_ALL", "TZ")
"""Host settings a pod inherits so text and time behave as the user expects; nothing else leaks in."""


@dataclass(frozen=True)
class Sandbox:
    root: pathlib.Path
    private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES
    mounts: tuple[tuple[str, str], ...] = field(default=())
    """(mount path, folder inside the sandbox) of the container's volume mounts, longest mount path first."""
    image: Optional[Image] = None
    """The container's image from the cluster's catalogue (None without one): its programs and ENTRYPOINT/CMD."""

    @classmethod
    def create(cls, root: pathlib.Path, private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES) -> Sandbox:
        """A new sandbox at `root`, private to its owner (what was there before is removed: a new run of a job
        starts afresh, as a new pod's volumes do)."""
        sandbox = cls(root.resolve(), tuple(_clean(p) for p in private_prefixes))
        shutil.rmtree(sandbox.root, ignore_errors=True)
        sandbox.root.mkdir(mode=0o700, parents=True)
        for folder in (sandbox.home, sandbox.tmp, *(sandbox.inside(p) for p in sandbox.private_prefixes)):
            folder.mkdir(parents=True, exist_ok=True)
        return sandbox

    def for_container(
        self, container: Any, skip_volumes: frozenset[str] = frozenset(), image: Optional[Image] = None
    ) -> Sandbox:
        """This sandbox as `container` sees it: its volume mounts mapped to the pod's volume folders, and its image.

        Volumes in `skip_volumes` (secret volumes, whose files are placed at their mount paths) stay
        at their private paths."""
        mounts = []
        for mount in container.volumeMounts:
            if mount.name in skip_volumes:
                continue
            folder = _clean(
                posixpath.join("/volumes", _clean(mount.name).lstrip("/"), _clean(mount.subPath).lstrip("/"))
            )
            mounts.append((_clean(mount.mountPath), folder))
        mounts.sort(key=lambda m: len(m[0]), reverse=True)
        return replace(self, mounts=tuple(mounts), image=image)

    @property
    def home(self) -> pathlib.Path:
        return self.root / "home"

    @property
    def tmp(self) -> pathlib.Path:
        return self.root / "tmp"

    def inside(self, path: str) -> pathlib.Path:
        """Where the pod's absolute (or working-directory-relative) `path` lives in the sandbox; `..` stops at
        the sandbox's root."""
        path = _clean(path)
        for mount_path, folder in self.mounts:
            if path == mount_path or path.startswith(mount_path.rstrip("/") + "/"):
                path = _clean(folder + "/" + path[len(mount_path) :])
                break
        return self.root / path.lstrip("/")

    def map_paths(self, text: str) -> str:
        """`text` with every private path (as a whole path, also after `=` or `file://`) moved into the sandbox."""
        for prefix in dict.fromkeys([*(m for m, _ in self.mounts), *self.private_prefixes]):
            text = _prefix_pattern(prefix).sub(lambda m: self._mapped(m.group(0)), text)
        return text

    def _mapped(self, path: str) -> str:
        mapped = str(self.inside(path))
        return mapped + "/" if path.endswith("/") and not mapped.endswith("/") else mapped

    def memory_folders(self, container: Any, memory_volumes: frozenset[str]) -> tuple[pathlib.Path, ...]:
        """The folders whose files are memory to `container` and count toward its memory limit: the pod's
        /dev/shm (when it is a private path, or a volume is mounted there) and each Memory emptyDir it mounts."""
        paths = [mount.mountPath for mount in container.volumeMounts if mount.name in memory_volumes]
        if SHARED_MEMORY in self.private_prefixes or any(mount == SHARED_MEMORY for mount, _ in self.mounts):
            paths.append(SHARED_MEMORY)
        return tuple(dict.fromkeys(self.inside(path) for path in paths))

    def argv(self, container: Any) -> list[str]:
        """Kubernetes runs `command` (else the image's ENTRYPOINT) followed by `args` (else, without `command`,
        the image's CMD); without a catalogued image, both come from the pod."""
        command, args = list(container.command), list(container.args)
        parts = self.image.argv(command, args) if self.image is not None else [*command, *args]
        return [self.map_paths(part) for part in parts]

    def working_dir(self, container: Any) -> pathlib.Path:
        return self.inside(container.workingDir) if container.workingDir else self.root

    def make_folders(self, container: Any) -> None:
        """Make the folders of `container`'s volume mounts and its working directory (before any container runs)."""
        for _, folder in self.mounts:
            self.inside(folder).mkdir(parents=True, exist_ok=True)
        self.working_dir(container).mkdir(parents=True, exist_ok=True)

    def environment(
        self, container: Any, launch: PodLaunch, host_env: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The pod's env with private paths mapped, `fieldRef`s resolved from the pod, and local essentials.

        PATH keeps the pod's value (or the host's) behind the directory of this Python, so tools
        installed beside it (Flyte's `a0`) are found as they would be in the task image; a catalogued
        image's programs folder comes first of all.
        """
        host_env = os.environ if host_env is None else host_env
        env = {name: host_env[name] for name in _HOST_VARIABLES if name in host_env}
        env["PATH"] = host_env.get("PATH", os.defpath)
        env["PYTHONUNBUFFERED"] = "1"
        env["HOSTNAME"] = launch.pod_name
        env.update(container_env(container, launch, self.map_paths))
        path = [str(pathlib.Path(sys.executable).parent), env["PATH"]]
        if self.image is not None and self.image.programs is not None:
            path.insert(0, str(self.image.programs))
        env["PATH"] = os.pathsep.join(path)
        env["HOME"] = str(self.home)
        env["TMPDIR"] = str(self.tmp)
        return env


def _clean(path: str) -> str:
    """`path` made absolute and normalised, so `..` can't climb above `/` (the sandbox's root)."""
    cleaned = posixpath.normpath("/" + path)
    return "/" + cleaned.lstrip("/")


def place_secret_files(sandbox: Sandbox, files: tuple[SecretFile, ...]) -> list[pathlib.Path]:
    """Write a pod's secret-volume files where its container sees them: inside its sandbox; where they are."""
    placed = []
    for secret_file in files:
        target = sandbox.inside(secret_file.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(secret_file.data)
        target.chmod(secret_file.mode & 0o777)
        placed.append(target)
    return placed


def hand_over(root: pathlib.Path, uid: int) -> None:
    """Give the sandbox `root` and all in it to the pod's `uid` (its group too): called before any container
    starts, so everything in it is the runner's own and nothing is a link a pod planted."""
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            os.lchown(os.path.join(folder, name), uid, uid)
    os.chown(root, uid, uid)
    root.chmod(0o700)


def take_back(root: pathlib.Path) -> None:
    """Once the pod has ended: only root enters its sandbox, so a later pod given the same uid can't."""
    try:
        os.chown(root, 0, 0)
        root.chmod(0o700)
    except FileNotFoundError:
        pass  # the pod failed before its sandbox was made


def remove_inside(root: pathlib.Path, paths: Iterable[pathlib.Path]) -> None:
    """Remove the files `paths` of the sandbox `root` without following a link on the way: a pod may have
    swapped a folder for a link out of its sandbox. A file it moved elsewhere stays (inside, root's only)."""
    for path in paths:
        *folders, name = path.relative_to(root).parts
        try:
            folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            for part in folders:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            os.unlink(name, dir_fd=folder)
        except OSError:
            pass
        finally:
            os.close(folder)


def place_service_account(sandbox: Sandbox, namespace: str, kubeconfig: str | None) -> None:
    """What a pod reads of its service account: the namespace file, as Kubernetes mounts it (when the
    sandbox keeps SERVICE_ACCOUNT_DIR private), and `kubeconfig` (when given) as `~/.kube/config`,
    where a real pod would use the in-cluster token and CA over TLS instead."""
    if SERVICE_ACCOUNT_DIR in sandbox.private_prefixes:
        namespace_file = sandbox.inside(f"{SERVICE_ACCOUNT_DIR}/namespace")
        namespace_file.parent.mkdir(parents=True, exist_ok=True)
        namespace_file.write_text(namespace)
    if kubeconfig is not None:
        config = sandbox.home / ".kube" / "config"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.touch(mode=0o600)  # private before a token is written into it
        config.chmod(0o600)
        config.write_text(kubeconfig)


def _prefix_pattern(prefix: str) -> re.Pattern[str]:
    """A whole path under `prefix`, up to the next separator (so `..` in its rest is seen, and normalised)."""
    prefix = prefix.rstrip("/") or "/"
    return re.compile(r"(?<![\w.-])" + re.escape(prefix) + r"""(?:/[^\s:;,='"]*)?(?=$|[\s:;,='"])""")
