#!/usr/bin/env python3
"""A fake forge on loopback for scripts/demo.sh (python3 standard library
only): a real git server (`git http-backend`, git's own smart-HTTP CGI
program, behind HTTP basic auth) and the few GitHub REST endpoints
agent-task calls (commit statuses, pull requests: create, list, update,
get), checked against a bearer token. Every request is logged, one JSON
line each, to --log; nothing is validated against GitHub's OpenAPI
description here (the test suite's fake, tests/cli/common/fake_github.rs,
does that); this one only shows what a forge would receive.

    fake-forge.py --root DIR --token-file FILE --log FILE

serves the bare repositories under DIR at http://127.0.0.1:PORT/git/NAME
and the API at http://127.0.0.1:PORT/api, and prints one line,
{"listening": "http://127.0.0.1:PORT"}, once it accepts connections.
"""

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 64 << 20
NOW = "2026-12-04T23:00:00Z"


class State:
    def __init__(self, root, token, log):
        self.root = root
        self.token = token
        self.log_path = log
        self.lock = threading.Lock()
        self.pulls = {}

    def log(self, entry):
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


def handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
                    if len(out) > MAX_BODY:
                        raise ValueError("body too large")
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_BODY:
                raise ValueError("body too large")
            return self.rfile.read(n)

        def send(self, status, payload, ctype="application/json", extra=()):
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.route("GET")

        def do_POST(self):
            self.route("POST")

        def do_PATCH(self):
            self.route("PATCH")

        def route(self, method):
            url = urlsplit(self.path)
            body = self.body()
            if url.path.startswith("/git/"):
                return self.git(method, url, body)
            if url.path.startswith("/api/"):
                return self.api(method, url, body)
            self.send(404, {"message": "not found"})

        def git(self, method, url, body):
            user = None
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Basic "):
                try:
                    u, _, p = base64.b64decode(auth[6:]).decode().partition(":")
                    if p == state.token:
                        user = u
                except ValueError:
                    pass
            if user is None:
                state.log({"kind": "git", "method": method, "path": url.path, "status": 401})
                return self.send(401, b"", "text/plain", [("WWW-Authenticate", 'Basic realm="git"')])
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": state.root,
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_PROJECT_ROOT": state.root,
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": method,
                "PATH_INFO": url.path[len("/git"):],
                "QUERY_STRING": url.query,
                "REMOTE_USER": user,
                "REMOTE_ADDR": "127.0.0.1",
                "CONTENT_LENGTH": str(len(body)),
            }
            for h, var in (("Content-Type", "CONTENT_TYPE"),
                           ("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                           ("Git-Protocol", "HTTP_GIT_PROTOCOL")):
                if self.headers.get(h):
                    env[var] = self.headers[h]
            out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                 capture_output=True, check=False).stdout
            head, sep, payload = out.partition(b"\r\n\r\n")
            if not sep:
                head, _, payload = out.partition(b"\n\n")
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                k, _, v = line.partition(":")
                if k.lower() == "status":
                    status = int(v.split()[0])
                elif k:
                    headers.append((k, v.strip()))
            state.log({"kind": "git", "method": method, "path": url.path,
                       "service": parse_qs(url.query).get("service", [""])[0], "status": status})
            ctype = dict((k.lower(), v) for k, v in headers).get("content-type", "application/octet-stream")
            rest = [(k, v) for k, v in headers if k.lower() != "content-type"]
            self.send(status, payload, ctype, rest)

        def api(self, method, url, raw):
            path = url.path[len("/api"):]
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            if self.headers.get("Authorization") != f"Bearer {state.token}":
                state.log({"kind": "api", "method": method, "path": path, "status": 401})
                return self.send(401, {"message": "Bad credentials"})
            status, answer = 404, {"message": "Not Found"}
            m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/(statuses/([0-9a-f]{40})|pulls(?:/(\d+))?)", path)
            with state.lock:
                if m and m.group(4) and method == "POST":
                    b = body or {}
                    if b.get("state") in ("pending", "success", "failure", "error") and \
                            len(b.get("description") or "") <= 140:
                        status, answer = 201, {"id": 1, "state": b["state"], "context": b.get("context"),
                                               "description": b.get("description"), "created_at": NOW}
                    else:
                        status, answer = 422, {"message": "Validation Failed"}
                elif m and m.group(3) == "pulls" and method == "POST":
                    b = body or {}
                    n = len(state.pulls) + 1
                    pull = {"number": n, "state": "open", "title": b.get("title"), "body": b.get("body"),
                            "head": {"ref": b.get("head")}, "base": {"ref": b.get("base")},
                            "html_url": f"http://127.0.0.1/{m.group(1)}/{m.group(2)}/pull/{n}"}
                    state.pulls[n] = pull
                    status, answer = 201, pull
                elif m and m.group(3) == "pulls" and method == "GET":
                    q = parse_qs(url.query)
                    head = q.get("head", [""])[0].partition(":")[2]
                    st = q.get("state", ["open"])[0]
                    status, answer = 200, [p for p in state.pulls.values()
                                           if (not head or p["head"]["ref"] == head)
                                           and (st == "all" or p["state"] == st)]
                elif m and m.group(5) and int(m.group(5)) in state.pulls and method in ("PATCH", "GET"):
                    pull = state.pulls[int(m.group(5))]
                    for k in ("title", "body", "state"):
                        if method == "PATCH" and body and k in body:
                            pull[k] = body[k]
                    status, answer = 200, pull
            entry = {"kind": "api", "method": method, "path": path, "status": status}
            for k in ("state", "context", "description", "title", "head", "base"):
                if isinstance(body, dict) and k in body:
                    entry[k] = body[k]
            state.log(entry)
            self.send(status, answer)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    with open(a.token_file, encoding="ascii") as f:
        token = f.read().strip()
    state = State(os.path.abspath(a.root), token, a.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    print(json.dumps({"listening": f"http://127.0.0.1:{server.server_port}"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
