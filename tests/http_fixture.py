"""A real HTTP server on 127.0.0.1 that plays OpenML's and UCI's APIs for fetch tests (and
serves files to the download tests).

``routes``: path -> body answered with 200; ``failures``: path -> status codes answered first,
one per request; ``cutoffs``: path -> how many requests (after any failures) get a cut-off
answer: the full ``Content-Length`` header, half the body, then the connection is closed;
``hits``: requests per path."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeSources:
    def __init__(self):
        self.routes: dict[str, bytes] = {}
        self.failures: dict[str, list[int]] = {}  # path -> status codes to answer first
        self.cutoffs: dict[str, int] = {}  # path -> requests answered with half the body
        self.hits: Counter[str] = Counter()
        sources = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                sources.hits[self.path] += 1
                pending = sources.failures.get(self.path)
                if pending:
                    self.send_error(pending.pop(0))
                    return
                body = sources.routes.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                if sources.cutoffs.get(self.path, 0) > 0:
                    sources.cutoffs[self.path] -= 1
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # the rest never comes
                    return
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def serve_files(server: FakeSources, directory, prefix: str = "/release") -> str:
    """Serve every file of ``directory`` at ``<prefix>/<name>``; return the base URL."""
    from pathlib import Path

    for path in Path(directory).iterdir():
        if path.is_file():
            server.routes[f"{prefix}/{path.name}"] = path.read_bytes()
    return server.url + prefix
