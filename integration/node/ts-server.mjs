// A stateful MCP server of the TypeScript SDK (v1, @modelcontextprotocol/sdk)
// on Streamable HTTP, for mcpguard's session-binding tests: the guard runs
// in front of it (Middleware.Handler around a reverse proxy). Each session
// keeps what "remember" was given; "recall" answers it. It listens on
// 127.0.0.1 and prints "listening on port N"; GET /sessions lists the live
// session IDs.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const transports = new Map(); // session ID -> transport

function newSession() {
  let memory = "";
  const server = new McpServer({ name: "ts-server", version: "0" });
  server.registerTool("remember", { inputSchema: { text: z.string() } }, async ({ text }) => {
    memory = text;
    return { content: [{ type: "text", text: "ok" }] };
  });
  server.registerTool("recall", {}, async () => ({ content: [{ type: "text", text: memory }] }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  return { server, transport };
}

const http = createServer(async (req, res) => {
  if (req.url === "/sessions") {
    // The live sessions, for the tests (never behind the guard).
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify([...transports.keys()]));
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString("utf8");
  const body = raw ? JSON.parse(raw) : undefined;
  const sid = req.headers["mcp-session-id"];
  if (sid) {
    const t = transports.get(sid);
    if (!t) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
      return;
    }
    await t.handleRequest(req, res, body);
    return;
  }
  const { server, transport } = newSession();
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});

http.listen(0, "127.0.0.1", () => {
  console.log(`listening on port ${http.address().port}`);
});
