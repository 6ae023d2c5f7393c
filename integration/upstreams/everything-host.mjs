// everything-host.mjs starts the reference MCP "everything" server
// (@modelcontextprotocol/server-everything) in its Streamable HTTP mode,
// unchanged, but bound to 127.0.0.1: the package listens on every
// interface, and the tests' servers bind loopback only. PORT chooses the
// port, as for the package itself; PORT=0 lets the system choose one, and
// the line "everything-host listening on 127.0.0.1:<port>" on stderr
// says which (the package prints the PORT it was given).
//
//   PORT=3001 node everything-host.mjs [--issuer ISS --jwks URL [--audience AUD]]
//
// With --issuer and --jwks, it serves only requests that carry an
// assertion of mcpguard proxy (docs/proxy.md, "Verifying the assertion in
// the upstream"): a JWT in Authorization, verified with jose against the
// proxy's JWK Set (--jwks), its issuer (--issuer), typ at+jwt, ES256, and
// this server's own URL as audience (--audience, default
// http://127.0.0.1:<port>/mcp). Anything else, the client's own token
// included, gets 401 before the everything server sees it: called around
// the proxy, it serves nobody. This is the upstream of the README's trial.
import http from 'node:http';
import net from 'node:net';
import { parseArgs } from 'node:util';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const { values: opt } = parseArgs({
  options: { issuer: { type: 'string' }, jwks: { type: 'string' }, audience: { type: 'string' } },
});
if (!opt.issuer !== !opt.jwks || (opt.audience && !opt.issuer)) {
  console.error('everything-host: --issuer and --jwks go together (and --audience with them)');
  process.exit(2);
}
let audience = opt.audience;

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const [port, ...rest] = args;
    const cb = rest.find((a) => typeof a === 'function');
    return listen.call(this, { port: Number(port), host: '127.0.0.1' }, (...cbArgs) => {
      const a = this.address();
      audience ??= `http://127.0.0.1:${a.port}/mcp`;
      console.error(`everything-host listening on ${a.address}:${a.port}`);
      if (cb) cb(...cbArgs);
    });
  }
  return listen.apply(this, args);
};

if (opt.issuer) {
  const jwks = createRemoteJWKSet(new URL(opt.jwks));
  // verified reports whether authorization carries a valid assertion.
  const verified = async (authorization) => {
    const token = /^Bearer ([^ ]+)$/.exec(authorization ?? '')?.[1];
    if (!token) return false;
    try {
      await jwtVerify(token, jwks, {
        issuer: opt.issuer, audience, typ: 'at+jwt', algorithms: ['ES256'], requiredClaims: ['exp', 'iat', 'sub'],
      });
      return true;
    } catch {
      return false;
    }
  };
  // The everything server's express app is the handler of the one
  // server it creates: every request passes the check first.
  const createServer = http.createServer;
  http.createServer = function (...args) {
    const i = args.findIndex((a) => typeof a === 'function');
    if (i >= 0) {
      const app = args[i];
      args[i] = (req, res) => {
        verified(req.headers.authorization).then((ok) => {
          if (ok) return app(req, res);
          res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
          res.end('{"error":"invalid_token"}');
        });
      };
    }
    return createServer.apply(this, args);
  };
}
await import('@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js');
