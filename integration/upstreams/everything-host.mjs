// everything-host.mjs starts the reference MCP "everything" server
// (@modelcontextprotocol/server-everything) in its Streamable HTTP mode,
// unchanged, but bound to 127.0.0.1: the package listens on every
// interface, and the tests' servers bind loopback only. PORT chooses the
// port, as for the package itself; PORT=0 lets the system choose one, and
// the line "everything-host listening on 127.0.0.1:<port>" on stderr
// says which (the package prints the PORT it was given).
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const [port, ...rest] = args;
    const cb = rest.find((a) => typeof a === 'function');
    return listen.call(this, { port: Number(port), host: '127.0.0.1' }, (...cbArgs) => {
      const a = this.address();
      console.error(`everything-host listening on ${a.address}:${a.port}`);
      if (cb) cb(...cbArgs);
    });
  }
  return listen.apply(this, args);
};
await import('@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js');
