// oidc-host.mjs runs panva's oidc-provider (OpenID Certified) on
// 127.0.0.1 as an independent authorization server for the example MCP
// server, configured as a team would for MCP: RFC 8707 resource
// indicators, RFC 9068 JWT (or opaque, introspected) access tokens,
// RFC 7591 dynamic registration, RFC 7662 introspection, RFC 7009
// revocation. Used by
// integration/oidcprovider_test.go; docs/providers.md shows the same
// settings as a recipe.
//
//   node oidc-host.mjs --format jwt|opaque [--scope-ceiling]
//
// --scope-ceiling leaves oidc-provider's default (a registered scope is a
// ceiling), to show why the MCP setting below is needed.
//
// It prints {"issuer": "..."} once listening, then answers one JSON
// command per stdin line with one JSON line on stdout:
//   {"cmd":"resource","url":"http://127.0.0.1:P/mcp"}  the MCP server's resource
//   {"cmd":"rotate"}  new signing key first, the old one still published
//
// There is no login page: the interaction step approves the development
// user "dev-user" and every scope requested (a test stand-in for a user).
import http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import Provider, { errors } from 'oidc-provider';
// oidc-provider's own development in-memory adapter (the package has no
// "exports" map, so the module is importable; the version is pinned by
// package-lock.json). See "storage" below for why the host creates it.
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

// stdout carries the JSON protocol only: oidc-provider's notices go to stderr.
console.log = console.info = console.warn = console.error;

const { values: opt } = parseArgs({
  options: { format: { type: 'string', default: 'jwt' }, 'scope-ceiling': { type: 'boolean', default: false } },
});

// The scopes of the MCP server (its protected-resource metadata lists
// them); every client may request them for that resource.
const RESOURCE_SCOPES = 'mcp:tools notes:read notes:write';
// A second resource this server also issues tokens for, so tests can get
// a token of the right issuer for the wrong audience.
const OTHER_RESOURCE = 'https://other.example.com/mcp';
let resource; // set by the "resource" command

// The key is encoded as a JWK by the generation itself. Generating a
// KeyObject and calling its export({ format: 'jwk' }) deadlocks Node 20
// now and then (seen on v20.20.2, the machine's node): when the export's
// string allocation starts a garbage collection, the collected key
// generation job's destructor waits for the key's mutex, which the export
// holds (gdb: ExportJWKEcKey -> ... -> Heap::CollectGarbage ->
// ~KeyGenJob -> uv_mutex_lock). The host then never printed its issuer
// and TestIntrospectionThroughProxy hung until the package timeout. A
// loop of 20,000 generations with --max-semi-space-size=1 hangs within
// the first few with export(), and completes in 2 s this way.
function newKey() {
  const { privateKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    publicKeyEncoding: { format: 'jwk' },
    privateKeyEncoding: { format: 'jwk' },
  });
  return { ...privateKey, kid: randomUUID(), alg: 'ES256', use: 'sig' };
}
let keys = [newKey()];

// One store for every Provider instance this host creates. Left to its
// default, each new Provider gets a fresh, empty in-memory store, so the
// "rotate" command (a new Provider with the new keys) used to drop every
// dynamically registered client, session, grant and authorization code:
// a TypeScript client that registered before a rotation running in a
// parallel subtest was then refused ("invalid_client: client is invalid"
// at its step-up authorization, "client authentication failed" at the
// token endpoint). On an idle machine the flows finished before the
// rotation; under load they straddled it.
const storage = createMemoryAdapter();

const clients = [
  { // the TypeScript SDK client, pre-registered (public, native, loopback redirect)
    client_id: 'mcpguard-ts', application_type: 'native', token_endpoint_auth_method: 'none',
    redirect_uris: ['http://127.0.0.1:3999/callback'], grant_types: ['authorization_code'], response_types: ['code'],
    scope: RESOURCE_SCOPES,
  },
  { // the MCP server itself, authenticating at the introspection endpoint
    client_id: 'mcpguard-introspect', client_secret: 'introspect-secret', token_endpoint_auth_method: 'client_secret_basic',
    redirect_uris: [], grant_types: [], response_types: [],
  },
  // Machine clients for tokens minted directly by the tests; the "short"
  // one gets 3-second tokens.
  ...['mcpguard-cc', 'mcpguard-cc-short'].map((id) => ({
    client_id: id, client_secret: 'cc-secret', token_endpoint_auth_method: 'client_secret_basic',
    redirect_uris: [], grant_types: ['client_credentials'], response_types: [], scope: RESOURCE_SCOPES,
  })),
];

function newProvider(issuer) {
  return new Provider(issuer, {
    clients,
    adapter: storage,
    jwks: { keys },
    cookies: { keys: ['mcpguard-integration-cookie-key'] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' }, // the keys are ES256
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES.split(' ')],
    pkce: { required: () => true },
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    // The example server reads the tenant from the "tenant" claim.
    extraTokenClaims: () => ({ tenant: 'tenant-a' }),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    // The MCP setting: a dynamically registered client may request every
    // scope the resource advertises. MCP clients register with the scope of
    // the first 401 challenge only, and oidc-provider treats a client's
    // registered scope as a ceiling, which would refuse their step-up.
    // Pre-registered clients keep the scope their operator gave them.
    extraClientMetadata: opt['scope-ceiling'] ? undefined : {
      properties: ['scope'],
      validator(ctx, key, value, metadata) {
        if (key === 'scope' && ctx?.oidc?.route === 'registration') metadata.scope = RESOURCE_SCOPES;
      },
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true }, // open RFC 7591 registration
      introspection: { enabled: true },
      revocation: { enabled: true }, // RFC 7009, for revocation seen through introspection
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined, // MCP clients always send resource
        useGrantedResource: () => true,
        getResourceServerInfo(ctx, indicator, client) {
          if (indicator !== resource && indicator !== OTHER_RESOURCE) throw new errors.InvalidTarget();
          return {
            scope: RESOURCE_SCOPES,
            audience: indicator, // RFC 8707: aud is the resource
            accessTokenTTL: client.clientId === 'mcpguard-cc-short' ? 3 : 600,
            accessTokenFormat: opt.format,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  });
}

// The test stand-in for the user: log in as dev-user, grant what is asked.
async function interaction(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params } = details;
  if (prompt.name === 'login') {
    return provider.interactionFinished(req, res, { login: { accountId: 'dev-user' } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

let provider;
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(provider, req, res).catch((e) => { res.statusCode = 500; res.end(String(e)); });
    return;
  }
  provider.callback()(req, res);
});
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = newProvider(issuer);
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    const c = JSON.parse(line);
    if (c.cmd === 'resource') {
      resource = c.url;
    } else if (c.cmd === 'rotate') {
      keys = [newKey(), keys[0]]; // sign with the new key, still publish the old
      provider = newProvider(issuer); // same issuer, clients and storage
    }
    process.stdout.write(JSON.stringify({ ok: true, kid: keys[0].kid }) + '\n');
  });
  rl.on('close', () => server.close(() => process.exit(0)));
});
