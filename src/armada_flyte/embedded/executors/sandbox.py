"""A pod's private filesystem for the process executor: one folder per pod.

Inside a container, paths such as /opt/flyte/ belong to that pod alone. Run as a local process,
those paths are mapped into the pod's sandbox folder wherever they appear in its arguments,
environment and working directory, so two pods never share them and nothing is written outside
the sandbox. HOME and TMPDIR point into the sandbox too.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from armada_flyte.embedded.executors.base import container_env
from armada_flyte.embedded.secrets import PodSecrets, SecretFile

DEFAULT_PRIVATE_PREFIXES = ("/opt/flyte", "/etc/flyte/secrets")
"""Absolute path prefixes that belong to the pod; Flyte's a0 unpacks the code bundle under /opt/flyte/,
and Flyte mounts file secrets under /etc/flyte/secrets/ (named by FLYTE_SECRETS_DEFAULT_DIR)."""

_HOST_VARIABLES = ("LANG", "LC_ALL", "TZ")
"""Host settings a pod inherits so text and time behave as the user expects; nothing else leaks in."""


@dataclass(frozen=True)
class Sandbox:
    root: pathlib.Path
    private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES

    @classmethod
    def create(cls, root: pathlib.Path, private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES) -> Sandbox:
        sandbox = cls(root.resolve(), tuple(p.rstrip("/") for p in private_prefixes))
        for folder in (sandbox.home, sandbox.tmp, *(sandbox.inside(p) for p in sandbox.private_prefixes)):
            folder.mkdir(parents=True, exist_ok=True)
        return sandbox

    @property
    def home(self) -> pathlib.Path:
        return self.root / "home"

    @property
    def tmp(self) -> pathlib.Path:
        return self.root / "tmp"

    def inside(self, path: str) -> pathlib.Path:
        """Where the pod's absolute (or working-directory-relative) `path` lives in the sandbox."""
        return self.root / path.lstrip("/")

    def map_paths(self, text: str) -> str:
        """`text` with every private path (as a whole path, also after `=` or `file://`) moved into the sandbox."""
        for prefix in self.private_prefixes:
            text = _prefix_pattern(prefix).sub(lambda m: str(self.inside(m.group(0))), text)
        return text

    def argv(self, container: Any) -> list[str]:
        """Kubernetes runs `command` followed by `args`; with the image's entrypoint gone, both come from the pod."""
        return [self.map_paths(part) for part in [*container.command, *container.args]]

    def working_dir(self, container: Any) -> pathlib.Path:
        folder = self.inside(container.workingDir) if container.workingDir else self.root
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def environment(
        self,
        container: Any,
        fields: Mapping[str, str],
        host_env: Mapping[str, str] | None = None,
        secrets: PodSecrets | None = None,
    ) -> dict[str, str]:
        """The pod's env with private paths mapped, `fieldRef`s resolved from `fields`, and local essentials.

        PATH keeps the pod's value (or the host's) behind the directory of this Python, so tools
        installed beside it (Flyte's `a0`) are found as they would be in the task image.
        """
        host_env = os.environ if host_env is None else host_env
        env = {name: host_env[name] for name in _HOST_VARIABLES if name in host_env}
        env["PATH"] = host_env.get("PATH", os.defpath)
        env["PYTHONUNBUFFERED"] = "1"
        env["HOSTNAME"] = fields.get("metadata.name", "")
        env.update(container_env(container, dict(fields), self.map_paths, secrets))
        env["PATH"] = os.pathsep.join([str(pathlib.Path(sys.executable).parent), env["PATH"]])
        env["HOME"] = str(self.home)
        env["TMPDIR"] = str(self.tmp)
        return env


def place_secret_files(sandbox: Sandbox, files: tuple[SecretFile, ...]) -> None:
    """Write a pod's secret-volume files where its container sees them: inside its sandbox."""
    for secret_file in files:
        target = sandbox.inside(secret_file.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(secret_file.data)
        target.chmod(secret_file.mode & 0o777)


def _prefix_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.-])" + re.escape(prefix) + r"(?=/|$|[\s:;,='\"])")
