#!/usr/bin/env python3
"""A minimal Iceberg REST catalog (the read endpoints of the Iceberg REST spec,
`open-api/rest-catalog-open-api.yaml`) over a hadoop-layout warehouse, for tests.

Usage: rest_catalog_server.py <warehouse> <token> [--ttl SECONDS]

Serves on 127.0.0.1 (port chosen by the OS, printed as the first line of stdout):
  GET  /v1/config                               -> {"defaults": {}, "overrides": {}}
  POST /v1/oauth/tokens                         -> a bearer token for client
                                                   credentials "<id>:<token>"
  GET  /v1/namespaces/<ns>/tables/<table>       -> LoadTableResult of the current
                                                   <warehouse>/<ns>/<table>/metadata
  HEAD /v1/namespaces/<ns>/tables/<table>       -> 204 / 404
Every request but the token exchange needs "Authorization: Bearer <token>" (401
otherwise). Stops by itself after --ttl seconds (default 600) or when stdin closes.
"""

import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    warehouse, token = os.path.abspath(argv[1]), argv[2]
    ttl = float(argv[argv.index("--ttl") + 1]) if "--ttl" in argv else 600.0

    def table_metadata(ns, table):
        metadata_dir = os.path.join(warehouse, ns, table, "metadata")
        hint = os.path.join(metadata_dir, "version-hint.text")
        if not os.path.exists(hint):
            return None, None
        with open(hint) as f:
            version = int(f.read().strip())
        path = os.path.join(metadata_dir, f"v{version}.metadata.json")
        with open(path) as f:
            return "file://" + path, json.load(f)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, body=None):
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status, kind, message):
            self.reply(status, {"error": {"message": message, "type": kind, "code": status}})

        def authorized(self):
            if self.headers.get("Authorization") == f"Bearer {token}":
                return True
            self.error(401, "NotAuthorizedException", "bad or missing bearer token")
            return False

        def table_path(self):
            parts = urllib.parse.urlparse(self.path).path.strip("/").split("/")
            # v1/namespaces/<ns>/tables/<table> (an optional prefix before namespaces)
            if "namespaces" in parts and "tables" in parts:
                i = parts.index("namespaces")
                ns = urllib.parse.unquote(parts[i + 1]).replace("\x1f", ".")
                return ns, urllib.parse.unquote(parts[parts.index("tables") + 1])
            return None

        def do_POST(self):
            if self.path.endswith("/oauth/tokens"):
                length = int(self.headers.get("Content-Length", 0))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                secret = form.get("client_secret", [""])[0]
                if secret != token:
                    return self.error(401, "NotAuthorizedException", "bad credentials")
                return self.reply(
                    200,
                    {"access_token": token, "token_type": "bearer", "issued_token_type":
                     "urn:ietf:params:oauth:token-type:access_token"},
                )
            self.error(404, "NoSuchResourceException", self.path)

        def do_HEAD(self):
            if not self.authorized():
                return
            found = self.table_path()
            exists = found and table_metadata(*found)[0] is not None
            self.send_response(204 if exists else 404)
            self.end_headers()

        def do_GET(self):
            if not self.authorized():
                return
            if urllib.parse.urlparse(self.path).path.endswith("/v1/config"):
                return self.reply(200, {"defaults": {}, "overrides": {}})
            found = self.table_path()
            if not found:
                return self.error(404, "NoSuchResourceException", self.path)
            location, metadata = table_metadata(*found)
            if metadata is None:
                return self.error(404, "NoSuchTableException", f"{found[0]}.{found[1]}")
            self.reply(200, {"metadata-location": location, "metadata": metadata, "config": {}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Timer(ttl, server.shutdown).start()

    def watch_stdin():
        sys.stdin.read()
        server.shutdown()

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
