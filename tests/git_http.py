"""A git server over real HTTP for the tests of partial clones (issue 27): ``git http-backend`` behind a small
threaded HTTP server, as GitHub serves a repository: public (anyone reads) or private (reading needs the
token's basic header, ``x-access-token:TOKEN``, as Interlock's git sends it). It keeps each upload-pack
request body, so a test can tell a blobless fetch (``filter blob:none`` in the request) from a full one.
https://git-scm.com/docs/git-http-backend
"""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BACKEND = ["git", "http-backend"]  # a CGI program: the request in its environment and on standard input


class GitHTTP:
    def __init__(self, root: Path, token: str | None) -> None:
        self.root = root
        self.tokens = set() if token is None else {token}  # none: a public repository
        self.requests: list[bytes] = []  # upload-pack request bodies, in order
        self.refused = 0
        # a repository's path (``/owner/name.git``) -> the only tokens that reach it, as a private repository of
        # another account, which the job's own token does not reach
        self.only: dict[str, set[str]] = {}

    def authorized(self, header: str | None, path: str = "") -> bool:
        tokens = next((only for prefix, only in self.only.items() if path.startswith(prefix)), self.tokens)
        if not tokens:
            return True
        given = base64.b64encode  # the header git sends: basic base64("x-access-token:TOKEN")
        return any(header == f"basic {given(f'x-access-token:{token}'.encode()).decode()}" for token in tokens)


def _handler(server: GitHTTP) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self.backend(b"")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.endswith("/git-upload-pack"):
                server.requests.append(body)
            self.backend(body)

        def backend(self, body: bytes) -> None:
            if not server.authorized(self.headers.get("Authorization"), self.path):
                server.refused += 1
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            env = {
                "GIT_PROJECT_ROOT": str(server.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "REMOTE_USER": "x-access-token",
                "PATH": "/usr/bin:/bin",
            }
            done = subprocess.run(BACKEND, input=body, capture_output=True, env=env, check=False)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode(errors="replace").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                else:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def serve_git(root: Path, token: str | None = None) -> Iterator[tuple[str, GitHTTP]]:
    """Serve the bare repositories under ``root`` at ``http://127.0.0.1:PORT/``; the URL and the server's log."""
    state = GitHTTP(root, token)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()


def filtered(body: bytes) -> bool:
    """Whether an upload-pack request asked for a blobless pack (protocol v2's ``filter`` line)."""
    return b"filter blob:none" in body
