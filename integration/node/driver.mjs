// driver.mjs runs one real TypeScript MCP SDK client through the whole
// authorization flow against an MCP server on loopback, without a browser,
// and prints what happened as one JSON object on stdout. The Go tests in
// integration/ (node_clients_test.go, oidcprovider_test.go) start the
// servers, run this, and check the result step by step.
//
//   node driver.mjs --sdk v1|v2 --url http://127.0.0.1:P/mcp
//                   [--revision 2025-11-25|2026-07-28]  (v2 only; v1 speaks 2025-11-25)
//                   [--cimd https://127.0.0.1:Q/client.json]  (else DCR, or --client-id)
//                   [--client-id ID]  (a pre-registered public client)
//                   [--notes-list]  (also call notes_list, a second step-up)
//                   [--tool NAME [--args JSON]]  (call NAME instead of whoami and notes_write)
//
// The flow: connect (401 → protected-resource metadata → authorization
// server metadata → registration → authorization code with PKCE and
// resource → token), tools/list, whoami, notes_write (403
// insufficient_scope → step-up authorization → retry), with --notes-list
// notes_list (the same), done. With --tool, the one call is NAME with the
// arguments --args (a JSON object), stepping up the same way when it is
// refused (the README's trial: echo of the everything server behind
// mcpguard proxy), reported as "call". Like an agent, it calls only tools
// that tools/list offered, and reports each with its _meta.securitySchemes.
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    sdk: { type: 'string' },
    url: { type: 'string' },
    revision: { type: 'string', default: '2025-11-25' },
    cimd: { type: 'string' },
    'client-id': { type: 'string' },
    'notes-list': { type: 'boolean', default: false },
    tool: { type: 'string' },
    args: { type: 'string', default: '{}' },
  },
});

// The two SDK lines export the same names from different places.
async function loadSDK(line) {
  if (line === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { UnauthorizedError } = await import('@modelcontextprotocol/sdk/client/auth.js');
    return { Client, StreamableHTTPClientTransport, UnauthorizedError, pkg: '@modelcontextprotocol/sdk' };
  }
  const m = await import('@modelcontextprotocol/client');
  return { ...m, pkg: '@modelcontextprotocol/client' };
}
const sdk = await loadSDK(opt.sdk);
// package.json is not in the packages' exports: read it from node_modules.
const { readFileSync } = await import('node:fs');
const version = JSON.parse(readFileSync(new URL(`./node_modules/${sdk.pkg}/package.json`, import.meta.url))).version;

const redirectUrl = 'http://127.0.0.1:3999/callback'; // nothing listens: we read the code from Location
const out = { client: `${sdk.pkg}@${version}`, revision: opt.revision, trace: [], authorizations: [], tokens: [] };

// Every request the SDK makes goes through this fetch, so the trace shows
// the discovery, registration and token requests and each MCP answer.
async function tracingFetch(input, init) {
  const res = await fetch(input, init);
  const entry = { method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input), status: res.status };
  const www = res.headers.get('www-authenticate');
  if (www) entry.wwwAuthenticate = www;
  if (entry.method === 'POST' && res.status === 201) { // an RFC 7591 registration
    const body = await res.clone().json();
    entry.registeredScope = body.scope ?? null;
    entry.clientId = body.client_id;
  }
  out.trace.push(entry);
  return res;
}

// A browser stand-in: follow the authorization server's redirects (and
// cookies, for servers with an interaction step) until the loopback
// callback, whose code we hand to the SDK. devas with auto-approve
// redirects at once; the oidc-provider host approves in its interaction.
async function followToCallback(authorizationUrl) {
  const cookies = new Map();
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    const loc = res.headers.get('location');
    if (res.status < 300 || res.status > 399 || !loc) {
      // An error page: keep its text, without the markup.
      const page = (await res.text()).replace(/<style[^]*?<\/style>/g, '').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
      throw new Error(`authorization stopped at ${url.origin}${url.pathname}: HTTP ${res.status}: ${page.slice(0, 300)}`);
    }
    url = new URL(loc, url);
    if (url.href.startsWith(redirectUrl)) {
      const q = url.searchParams;
      if (!q.get('code')) throw new Error(`authorization error: ${q.get('error')}: ${q.get('error_description')}`);
      return { code: q.get('code'), iss: q.get('iss') ?? undefined };
    }
  }
  throw new Error('too many redirects');
}

// The SDK's OAuthClientProvider, kept in memory.
const provider = {
  clientInfo: opt['client-id'] ? { client_id: opt['client-id'] } : undefined,
  tokenSet: undefined,
  verifier: undefined,
  pending: undefined, // { code, iss } from the last authorization
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: `mcpguard integration (${sdk.pkg})`,
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  clientMetadataUrl: opt.cimd,
  clientInformation() { return this.clientInfo; },
  saveClientInformation(info) { this.clientInfo = info; },
  tokens() { return this.tokenSet; },
  saveTokens(t) {
    this.tokenSet = t;
    out.tokens.push({ scope: t.scope ?? null, claims: jwtClaims(t.access_token) });
  },
  async redirectToAuthorization(u) {
    const q = new URL(u).searchParams;
    out.authorizations.push({
      clientId: q.get('client_id'), scope: q.get('scope'), resource: q.get('resource'),
      codeChallengeMethod: q.get('code_challenge_method'), hasCodeChallenge: !!q.get('code_challenge'),
    });
    this.pending = await followToCallback(u);
  },
  // v2 binds the callback to the discovered authorization server (SEP-2352).
  saveDiscoveryState(s) { this.discovery = s; },
  discoveryState() { return this.discovery; },
  saveCodeVerifier(v) { this.verifier = v; },
  codeVerifier() { return this.verifier; },
};

// jwtClaims returns the payload of a JWT access token (unverified: for the
// report only), or null for an opaque token.
function jwtClaims(tok) {
  const parts = tok.split('.');
  if (parts.length !== 3) return null;
  const c = JSON.parse(Buffer.from(parts[1], 'base64url'));
  return { aud: c.aud, scope: c.scope, client_id: c.client_id, sub: c.sub };
}

// withAuth runs op; when the SDK stops for a user authorization
// (UnauthorizedError after redirectToAuthorization), it completes it with
// transport.finishAuth and runs op again.
async function withAuth(transport, op) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (e) {
      if (!(e instanceof sdk.UnauthorizedError) || !provider.pending || attempt > 2) throw e;
      const { code, iss } = provider.pending;
      provider.pending = undefined;
      await transport.finishAuth(code, iss);
    }
  }
}

const text = (r) => r.content?.map((c) => c.text).join('') ?? '';
const clientOptions = opt.sdk === 'v2' && opt.revision === '2026-07-28'
  ? { versionNegotiation: { mode: { pin: '2026-07-28' } } }
  : {};
let client;
let transport;
try {
  // connect; after the first authorization the transport is spent, so a
  // fresh client and transport connect with the stored tokens.
  const connect = async () => {
    transport = new sdk.StreamableHTTPClientTransport(new URL(opt.url), { authProvider: provider, fetch: tracingFetch });
    client = new sdk.Client({ name: 'mcpguard-integration', version: '0' }, clientOptions);
    await client.connect(transport);
  };
  try {
    await connect();
  } catch (e) {
    if (!(e instanceof sdk.UnauthorizedError) || !provider.pending) throw e;
    const { code, iss } = provider.pending;
    provider.pending = undefined;
    await transport.finishAuth(code, iss);
    await connect();
  }
  out.protocolVersion = client.protocolVersion ?? transport.protocolVersion ?? null;
  out.clientId = provider.clientInfo?.client_id;
  const listed = (await withAuth(transport, () => client.listTools())).tools;
  // "name=type[scopes]" per SEP-1488 scheme, as the Go side prints them.
  out.tools = listed.map((t) => t.name + (t._meta?.securitySchemes ?? [])
    .map((s) => `=${s.type}[${(s.scopes ?? []).join(' ')}]`).join('')).sort();
  const call = (name, args) => {
    if (!listed.some((t) => t.name === name)) throw new Error(`Tool '${name}' not listed by tools/list`);
    return withAuth(transport, () => client.callTool({ name, arguments: args }));
  };
  if (opt.tool) {
    const r = await call(opt.tool, JSON.parse(opt.args));
    out.call = { tool: opt.tool, isError: !!r.isError, text: text(r) };
  } else {
    out.whoami = text(await call('whoami', {}));
    const w = await call('notes_write', { text: 'hello from ' + sdk.pkg });
    out.notesWrite = { isError: !!w.isError, text: text(w) };
  }
  if (opt['notes-list']) {
    const l = await call('notes_list', {});
    out.notesList = { isError: !!l.isError, text: text(l) };
  }
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = `${e?.name}: ${e?.message}`;
} finally {
  await client?.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
