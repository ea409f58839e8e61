"""The HTTP server the realkube tests run in their pods (`python -c` of its source, on the python image)."""

from __future__ import annotations

_SOURCE = """
import http.server, os
class Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = os.environ[{variable!r}].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", {port}), Answer).serve_forever()
"""


def answering_server(variable: str, port: int = 8080) -> str:
    """The source of a server that answers every GET, on any path, with the value of its environment variable
    `variable`, over HTTP/1.1 connections it keeps alive (so a test can tell which pod or version a kept-alive
    connection reaches), and logs nothing."""
    return _SOURCE.format(variable=variable, port=port)
