"""Serves the view's pages on 127.0.0.1 with the standard library's threaded HTTP server.

`/` is the overview, `/jobs/<job id>` a job's page. Each request reads Armada afresh (the
reader follows job sets incrementally), so the page is as current as Armada's APIs. The page shows
what Armada tells the reader's credentials, so every request first passes an `HttpGuard`: its Host
must name this machine (no DNS rebinding), and beside `armada-flyte dev --auth` it must carry one of
the server's credentials (the browser asks for them).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from http import HTTPStatus
from typing import Any, Iterable, Iterator, Optional
from urllib.parse import unquote, urlsplit

from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.errors import ArmadaFlyteError
from armada_flyte.http_guard import GuardedHttpServer, GuardedRequestHandler, HttpGuard
from armada_flyte.view.armada_reader import ArmadaReader
from armada_flyte.view.pages import job_html, overview_html
from armada_flyte.view.snapshot import Gatherer, JobSetSource
from armada_flyte.view.task_errors import TaskErrors

log = logging.getLogger(__name__)

HOST = "127.0.0.1"


class ViewServer:
    """The page server: `start()` listens and serves in a thread of its own, `stop()` ends it."""

    def __init__(self, gatherer: Gatherer, port: int = 0, guard: HttpGuard = HttpGuard()):
        self._gatherer = gatherer
        self._port = port
        self._guard = guard
        self._server: Optional[GuardedHttpServer] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> ViewServer:
        gatherer = self._gatherer

        class Handler(_PageHandler):
            pages = gatherer

        try:
            self._server = GuardedHttpServer((HOST, self._port), Handler, self._guard)
        except OSError as exc:
            raise ArmadaFlyteError(
                f"the view can't listen on {HOST}:{self._port}: {exc.strerror}; choose another port (0: a free one)"
            ) from None
        self._thread = threading.Thread(target=self._server.serve_forever, name="armada-flyte-view", daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the view is not started")
        return f"http://{HOST}:{self._server.server_address[1]}/"

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _PageHandler(GuardedRequestHandler):
    pages: Gatherer

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = urlsplit(self.path).path
        if path == "/":
            self._send(HTTPStatus.OK, overview_html(self.pages.overview()))
        elif path.startswith("/jobs/") and len(path) > len("/jobs/"):
            self._send(HTTPStatus.OK, job_html(self.pages.job_page(unquote(path[len("/jobs/") :]))))
        else:
            self._send(HTTPStatus.NOT_FOUND, '<!doctype html><p>Not found. <a href="/">All jobs</a></p>')

    def _send(self, status: HTTPStatus, page: str) -> None:
        body = page.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        log.debug("view: " + format, *args)


@contextlib.contextmanager
def serving(
    settings: ConnectorConfig,
    job_sets: JobSetSource,
    *,
    node_groups: Optional[NodeGroups] = None,
    queues: Iterable[str] = (),
    port: int = 0,
    guard: HttpGuard = HttpGuard(),
    source: str = "",
) -> Iterator[ViewServer]:
    """The view of the Armada `settings` point at, on 127.0.0.1:`port` (0: a free port), until the block ends;
    `guard` says which requests it answers (default: any whose Host names this machine)."""
    reader = ArmadaReader(settings)
    task_errors = TaskErrors(BlobSettings.from_settings(settings.blob))  # a0's error.pb, where the blob store is known
    try:
        with ViewServer(Gatherer(reader, job_sets, node_groups, queues, source, task_errors), port, guard) as server:
            yield server
    finally:
        reader.close()
