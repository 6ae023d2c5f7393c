// ts-upstream.mjs is an MCP server of the official TypeScript SDK behind
// mcpguard proxy: it accepts only the proxy's assertion, verified with
// jose against the proxy's JWK Set (docs/proxy.md, "Verifying the
// assertion in the upstream"), and refuses anything else, the client's own
// token included.
//
//   node ts-upstream.mjs --jwks URL --issuer ISS [--audience AUD]
//
// The audience defaults to the server's own URL, http://127.0.0.1:PORT/mcp.
// It listens on 127.0.0.1 (a free port), prints "listening on port N",
// and serves stateful sessions (GET streams, DELETE) at /mcp, with tools
// whoami (the verified caller), seen_headers (the request headers it
// received, assertion excepted), and tenant_notes, which trusts its
// "tenant" argument as a careless server would, and seen_tenants, every
// tenant value tenant_notes was ever called with (policy_test.go: the
// proxy's tenant rule must keep other tenants' values away from it).
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const { values: opt } = parseArgs({
  options: { jwks: { type: 'string' }, issuer: { type: 'string' }, audience: { type: 'string' } },
});
const jwks = createRemoteJWKSet(new URL(opt.jwks));
let audience = opt.audience;

// verify returns the caller of an assertion, or null.
async function verify(authorization) {
  const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  if (!token) return null;
  try {
    const { payload } = await jwtVerify(token, jwks, {
      issuer: opt.issuer, audience, typ: 'at+jwt', algorithms: ['ES256'], requiredClaims: ['exp', 'iat', 'sub', 'jti'],
    });
    return { token, clientId: payload.client_id, scopes: (payload.scope ?? '').split(' ').filter(Boolean), extra: payload };
  } catch {
    return null;
  }
}

const seenTenants = [];

function newServer() {
  const server = new McpServer({ name: 'ts-upstream', version: '1.0.0' });
  server.registerTool('whoami', { description: 'the verified caller' }, async (extra) => {
    const c = extra.authInfo.extra;
    return { content: [{ type: 'text', text: JSON.stringify({ iss: c.iss, sub: c.sub, client_id: c.client_id, tenant: c.tenant, scopes: extra.authInfo.scopes }) }] };
  });
  server.registerTool('seen_headers', { description: 'the request headers received' }, async (extra) => {
    const h = { ...extra.requestInfo.headers };
    delete h.authorization;
    return { content: [{ type: 'text', text: JSON.stringify(h) }] };
  });
  server.registerTool('tenant_notes', { description: 'notes of a tenant', inputSchema: { tenant: z.string() } }, async ({ tenant }) => {
    seenTenants.push(tenant);
    return { content: [{ type: 'text', text: `notes of ${tenant}` }] };
  });
  server.registerTool('seen_tenants', { description: 'every tenant tenant_notes was called with' }, async () => ({
    content: [{ type: 'text', text: JSON.stringify(seenTenants) }],
  }));
  return server;
}

const app = express();
app.use(express.json({ limit: '1mb' }));
const transports = new Map();
app.all('/mcp', async (req, res) => {
  const auth = await verify(req.headers.authorization);
  if (!auth) {
    res.status(401).json({ error: 'invalid_token' });
    return;
  }
  req.auth = auth;
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? transports.get(sid) : undefined;
  if (sid && !transport) {
    res.status(404).json({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    return;
  }
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});
const listener = app.listen({ port: 0, host: '127.0.0.1' }, () => {
  audience ??= `http://127.0.0.1:${listener.address().port}/mcp`;
  console.log(`listening on port ${listener.address().port}`);
});
