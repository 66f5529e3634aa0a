"""The guard behind the fast tier: a test marked `pure` that opens a socket, starts a process or a
gRPC channel fails with a message naming what it did; an unmarked test may do all of these.
(Not pure itself: the inner session runs in this process, where the guard would refuse it.)"""

from __future__ import annotations

CONFTEST = 'pytest_plugins = ["support.purity_guard"]\n'

REACHING_OUT = {
    "connects": ("socket.create_connection(('127.0.0.1', 9), timeout=1)", "connects a socket"),
    "binds": ("socket.socket().bind(('127.0.0.1', 0))", "binds a socket"),
    "runs": ("subprocess.run(['true'])", "starts a process"),
    "spawns": ("multiprocessing.Process(target=print).start()", "starts a process"),
    "dials": ("grpc.insecure_channel('127.0.0.1:9')", "opens a gRPC channel"),
    "serves": ("grpc.server(None)", "starts a gRPC server"),
    "binds_in_a_thread": (
        "t = threading.Thread(target=lambda: socket.socket().bind(('127.0.0.1', 0))); t.start(); t.join()",
        "binds a socket",
    ),
    "swallows": ("try:\n        subprocess.run(['true'])\n    except BaseException:\n        pass", "starts a process"),
}


def test_a_pure_test_that_reaches_outside_fails_naming_what_it_did(pytester):
    pytester.makeconftest(CONFTEST)
    tests = "".join(f"def test_{name}():\n    {body}\n" for name, (body, _) in REACHING_OUT.items())
    pytester.makepyfile(
        "import grpc, multiprocessing, os, socket, subprocess, threading, pytest\n"
        "pytestmark = pytest.mark.pure\n"
        "@pytest.fixture(scope='session')\n"
        "def server():\n"
        "    socket.socket().bind(('127.0.0.1', 0))\n"
        "def test_uses_a_server(server):\n"
        "    pass\n" + tests
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnhandledThreadExceptionWarning")
    result.assert_outcomes(failed=len(REACHING_OUT), errors=1)
    expected = [f"*test_{name} is marked pure but {refusal}*" for name, (_, refusal) in REACHING_OUT.items()]
    result.stdout.fnmatch_lines_random([*expected, "*test_uses_a_server is marked pure but binds a socket*"])


def test_an_unmarked_test_may_bind_a_socket_and_start_a_process(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "import socket, subprocess\n"
        "def test_reaches_out():\n"
        "    with socket.socket() as s:\n"
        "        s.bind(('127.0.0.1', 0))\n"
        "    assert subprocess.run(['true']).returncode == 0\n"
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
