"""What process pods of a root server see of the host's folders: the server user's home hidden, and what
they need from the server shown, even from folders other users can't enter.

A pod with a uid of its own reads what any local user can. That keeps it out of a 0700 home, but the
pod must run the server's Python (a venv's interpreter, the installation behind it, the package
folders it imports from) and use its sandbox, and on a developer machine those can lie in folders
only root enters (pyenv in /root/.pyenv, a test's sandbox under /tmp/pytest-of-root). So the
container shim gives each container a mount namespace of its own in which each hidden folder is an
empty tmpfs with only the needed folders bound back into it (read-only; the sandbox root writable):
the pod sees neither the server's home nor a state folder in it, whatever their permissions, and
still runs.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import stat
import sys
from dataclasses import dataclass
from typing import Iterable, Optional

_PACKAGE_FOLDER = pathlib.Path(__file__).resolve().parents[2]
"""Where armada_flyte is imported from (site-packages, or the checkout's src/ of an editable install)."""


@dataclass(frozen=True)
class HostView:
    hidden: tuple[str, ...] = ()
    """Folders a pod sees as empty."""
    shown: tuple[tuple[str, bool], ...] = ()
    """(folder, writable) inside a hidden folder that the pod sees as they are, outermost first."""

    def shim_arguments(self) -> list[str]:
        """The container shim's options that set this view up."""
        return [f"--hide={folder}" for folder in self.hidden] + [
            f"--show-{'rw' if writable else 'ro'}={folder}" for folder, writable in self.shown
        ]


def server_homes() -> list[pathlib.Path]:
    """The server user's home by $HOME and by the user database (they differ under `sudo` without -H)."""
    homes = [pathlib.Path.home()]
    try:
        homes.append(pathlib.Path(pwd.getpwuid(os.geteuid()).pw_dir))
    except KeyError:
        pass
    return list(dict.fromkeys(home.resolve() for home in homes))


def needed_by_pods(
    sandbox_root: pathlib.Path, programs: Iterable[pathlib.Path] = ()
) -> list[tuple[pathlib.Path, bool]]:
    """(folder, writable) of what a process pod uses of the server's files: its sandbox, this Python (the venv
    and the installation behind it), the folders Python imports from, and image program folders."""
    folders = [pathlib.Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path) if p]
    folders += [*programs, pathlib.Path(sys.executable).resolve().parent, _PACKAGE_FOLDER]
    found = [(sandbox_root.resolve(), True)]
    for folder in folders:
        folder = folder.resolve()
        if folder.is_dir():
            found.append((folder, False))
    return found


def host_view(homes: Iterable[pathlib.Path], needed: Iterable[tuple[pathlib.Path, bool]]) -> HostView:
    """Hide `homes` (each that is a folder other than / and holds nothing needed above it) and the first
    folder other users can't enter above each needed folder; show what is needed inside them."""
    needed = list(dict.fromkeys(needed))
    hidden = [
        home
        for home in homes
        if home != home.parent and home.is_dir() and not any(_within(home, folder) for folder, _ in needed)
    ]
    for folder, _ in needed:
        closed = None if any(_within(folder, home) for home in hidden) else _first_closed(folder)
        if closed is not None and closed not in (folder, closed.parent):
            hidden = [home for home in hidden if not _within(home, closed)] + [closed]
    shown: dict[pathlib.Path, bool] = {}
    for folder, writable in needed:
        if any(_within(folder, home) and folder != home for home in hidden):
            shown[folder] = shown.get(folder, False) or writable
    kept = [
        (folder, writable)
        for folder, writable in shown.items()
        if not any(other != folder and _within(folder, other) and shown[other] == writable for other in shown)
    ]
    kept.sort(key=lambda item: len(item[0].parts))
    return HostView(tuple(str(home) for home in hidden), tuple((str(folder), writable) for folder, writable in kept))


def _first_closed(folder: pathlib.Path) -> Optional[pathlib.Path]:
    """The outermost folder on the way to `folder` (itself included) that other users can't pass through."""
    for part in [*reversed(folder.parents), folder]:
        try:
            if not part.stat().st_mode & stat.S_IXOTH:
                return part
        except OSError:
            return None
    return None


def _within(path: pathlib.Path, folder: pathlib.Path) -> bool:
    return path == folder or folder in path.parents
