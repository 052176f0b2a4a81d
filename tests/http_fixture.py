"""A real HTTP server on 127.0.0.1 that plays OpenML's and UCI's APIs for fetch tests."""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeSources:
    def __init__(self):
        self.routes: dict[str, bytes] = {}
        self.failures: dict[str, list[int]] = {}  # path -> status codes to answer first
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
