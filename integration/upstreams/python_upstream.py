"""python_upstream.py: an MCP server in Python's standard library
(http.server) behind mcpguard proxy. It accepts only the proxy's
assertion, verified with PyJWT (Debian's python3-jwt) against the proxy's
JWK Set (docs/proxy.md, "Verifying the assertion in the upstream"), and
refuses anything else, the client's own token included.

    python3 python_upstream.py JWKS_URL ISSUER [AUDIENCE]

The audience defaults to the server's own URL, http://127.0.0.1:PORT/mcp.

It listens on 127.0.0.1 (a free port), prints "listening on port N", and
answers Streamable HTTP POSTs with JSON (no sessions, no streams): initialize,
ping, tools/list, tools/call of whoami (the verified caller).
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt

JWKS_URL, ISSUER = sys.argv[1:3]
AUDIENCE = sys.argv[3] if len(sys.argv) > 3 else None
jwks = jwt.PyJWKClient(JWKS_URL)
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")


def caller(authorization):
    """Returns the verified claims of the proxy's assertion, or None."""
    if not authorization or not authorization.startswith("Bearer "):
        return None
    token = authorization[len("Bearer "):]
    try:
        header = jwt.get_unverified_header(token)
        if header.get("typ") != "at+jwt":
            return None
        key = jwks.get_signing_key_from_jwt(token)
        return jwt.decode(token, key.key, algorithms=["ES256"], issuer=ISSUER, audience=AUDIENCE,
                          options={"require": ["exp", "iat", "sub", "jti"]})
    except jwt.PyJWTError:
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(405)

    do_DELETE = do_GET

    def do_POST(self):
        claims = caller(self.headers.get("Authorization"))
        length = int(self.headers.get("Content-Length", "0"))
        if length > 1 << 20:
            self.answer(413)
            return
        body = self.rfile.read(length)
        if claims is None:
            self.answer(401, {"error": "invalid_token"})
            return
        msg = json.loads(body)
        if "id" not in msg:
            self.answer(202)
            return
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            v = params.get("protocolVersion")
            result = {"protocolVersion": v if v in VERSIONS else VERSIONS[0], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "python-upstream", "version": "1"}}
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call" and params.get("name") == "whoami":
            who = {"iss": claims["iss"], "sub": claims["sub"], "client_id": claims.get("client_id"),
                   "tenant": claims.get("tenant"), "scopes": claims.get("scope", "").split()}
            result = {"content": [{"type": "text", "text": json.dumps(who)}]}
        else:
            self.answer(200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
            return
        self.answer(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
AUDIENCE = AUDIENCE or f"http://127.0.0.1:{server.server_address[1]}/mcp"
print(f"listening on port {server.server_address[1]}", flush=True)
server.serve_forever()
