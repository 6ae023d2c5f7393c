#!/usr/bin/python3
"""A small stateful MCP server on stdio, standard library only (Debian's
python3, no pip): one JSON-RPC message per line on stdin and stdout.

Tools: "incr" counts per process; "whoami" reports the MCPGUARD_USER_*
variables and the working directory; "write" and "read" keep a note in
the working directory. It exists to test mcpguard proxy's stdio bridge
with a server in another language than the bridge's tests.
"""
import json
import os
import sys

PROTOCOL = "2025-11-25"
count = 0


def text(s):
    return {"content": [{"type": "text", "text": s}]}


def tool(name, args):
    global count
    if name == "incr":
        count += 1
        return text(str(count))
    if name == "whoami":
        return text(json.dumps({
            "sub": os.environ.get("MCPGUARD_USER_SUBJECT", ""),
            "iss": os.environ.get("MCPGUARD_USER_ISSUER", ""),
            "tenant": os.environ.get("MCPGUARD_USER_TENANT", ""),
            "client": os.environ.get("MCPGUARD_USER_CLIENT", ""),
            "cwd": os.getcwd(),
            "env": sorted(os.environ.keys()),
        }))
    if name == "write":
        with open("note.txt", "w") as f:
            f.write(args.get("text", ""))
        return text("ok")
    if name == "read":
        try:
            with open(args.get("path", "note.txt")) as f:
                return text(f.read())
        except OSError as e:
            return {"content": [{"type": "text", "text": e.strerror or "error"}], "isError": True}
    return None


TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("incr", "whoami", "write", "read")]


def handle(msg):
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        return None  # notifications
    if method == "initialize":
        result = {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "python-stdio", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        p = msg.get("params") or {}
        result = tool(p.get("name"), p.get("arguments") or {})
        if result is None:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool"}}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": mid, "result": result}


for line in sys.stdin:
    if not line.strip():
        continue
    out = handle(json.loads(line))
    if out is not None:
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
