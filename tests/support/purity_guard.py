"""Holds tests marked `pure` to their word: while such a test (its fixtures included) runs,
opening a socket, starting a process or a gRPC server or channel fails it, naming what it tried.
Threads that were already running when the test began (a server an earlier test left up for its
module) go on as before: what they do is not the pure test's doing. The fast tier
(`scripts/test.sh --fast`, `pytest -m pure`) relies on this to stay quick and runnable anywhere;
a test that needs a real part drops the marker instead."""

from __future__ import annotations

import multiprocessing.process
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import grpc.aio
import pytest

_FORBIDDEN: list[tuple[Any, str, str]] = [
    (socket.socket, "connect", "connects a socket"),
    (socket.socket, "connect_ex", "connects a socket"),
    (socket.socket, "bind", "binds a socket"),
    (subprocess.Popen, "_execute_child", "starts a process"),
    (os, "fork", "forks a process"),
    (os, "forkpty", "forks a process"),
    (os, "posix_spawn", "spawns a process"),
    (os, "posix_spawnp", "spawns a process"),
    (os, "system", "starts a process"),
    (multiprocessing.process.BaseProcess, "start", "starts a process"),
    (grpc, "server", "starts a gRPC server"),
    (grpc, "insecure_channel", "opens a gRPC channel"),
    (grpc, "secure_channel", "opens a gRPC channel"),
    (grpc.aio, "server", "starts a gRPC server"),
    (grpc.aio, "insecure_channel", "opens a gRPC channel"),
    (grpc.aio, "secure_channel", "opens a gRPC channel"),
]


def _refusal(
    item: pytest.Item, what: str, attempts: list[str], original: Callable[..., Any], others: frozenset[int]
) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() in others:  # a thread of an earlier test's server, not this test's
            return original(*args, **kwargs)
        message = (
            f"{item.nodeid} is marked pure but {what}: move it to a module without "
            "`pytestmark = pytest.mark.pure`, or keep the real part out of it"
        )
        attempts.append(message)
        pytest.fail(message, pytrace=True)

    return refuse


def _guarded(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("pure") is None:
        return (yield)
    attempts: list[str] = []
    others = frozenset(thread.ident for thread in threading.enumerate() if thread.ident is not None) - {
        threading.get_ident()
    }
    with pytest.MonkeyPatch.context() as patch:
        for owner, name, what in _FORBIDDEN:
            if hasattr(owner, name):
                patch.setattr(owner, name, _refusal(item, what, attempts, getattr(owner, name), others))
        result = yield
    if attempts:  # refused in a thread, or the refusal was swallowed: the test still fails
        pytest.fail(attempts[0], pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item))
