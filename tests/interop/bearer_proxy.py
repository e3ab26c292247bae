"""A loopback proxy that adds a bearer: the official MCP conformance suite
(`@modelcontextprotocol/conformance`) cannot send an Authorization header,
and `agent-task serve` never runs without one, so the suite talks to this
proxy, which forwards every request unchanged to the MCP URL with
`Authorization: Bearer <token>` added (and a `Host` naming the proxy set
to the upstream's, so the server's host allow-list sees its own name; any
other `Host` is forwarded as it came; the same for an `Origin` naming the
proxy).

Usage: bearer_proxy.py UPSTREAM_URL TOKEN_FILE

It binds 127.0.0.1 on an ephemeral port, prints one line
`{"url": "http://127.0.0.1:PORT<path and query of UPSTREAM_URL>"}` on
stdout, and serves until stdin closes or it is killed. Standard library
only; one thread per connection.
"""

import http.client
import http.server
import json
import sys
import threading
import urllib.parse

# Hop-by-hop headers (RFC 9110 §7.6.1) are not forwarded.
HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "authorization",
    "content-length",
}


def main():
    upstream = urllib.parse.urlsplit(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        token = f.read().strip()
    target_path = upstream.path + (f"?{upstream.query}" if upstream.query else "")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def forward(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            # The suite talks to the proxy's path; the upstream path and
            # query (the workspace's repository/profile) are the proxy's.
            parsed = urllib.parse.urlsplit(self.path)
            path = target_path if parsed.path in ("", "/", upstream.path) else self.path
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            headers["Authorization"] = f"Bearer {token}"
            # The proxy's own name becomes the upstream's; any other Host
            # (a DNS-rebinding probe's) is forwarded as it came.
            host = self.headers.get("host", "")
            if host in own_names:
                host = upstream.netloc
            headers["Host"] = host
            # Likewise an Origin naming the proxy is the upstream's origin
            # (a reverse proxy in front of `serve` gets the same effect
            # from `--public-name`); a foreign Origin is forwarded as it came.
            origin = self.headers.get("origin")
            if origin is not None and urllib.parse.urlsplit(origin).netloc in own_names:
                headers["Origin"] = f"{upstream.scheme}://{upstream.netloc}"
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
            try:
                conn.request(self.command, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except OSError as e:
                self.send_error(502, f"upstream: {e}")
                return
            finally:
                conn.close()
            self.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PUT = do_HEAD = do_OPTIONS = forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    own_names = {f"127.0.0.1:{port}", f"localhost:{port}"}
    print(json.dumps({"url": f"http://127.0.0.1:{port}{upstream.path}"}), flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Stop when the test closes our stdin (or kills us).
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
