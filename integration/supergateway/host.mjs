// host.mjs starts supergateway (pinned in this directory's lockfile) with
// the arguments given, unchanged, but bound to 127.0.0.1: it listens on
// every interface, and the tests' servers bind loopback only. --port 0
// lets the system choose the port, and the line
// "supergateway-host listening on 127.0.0.1:<port>" on stderr says which.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const [port, ...rest] = args;
    const cb = rest.find((a) => typeof a === 'function');
    return listen.call(this, { port: Number(port), host: '127.0.0.1' }, (...cbArgs) => {
      const a = this.address();
      console.error(`supergateway-host listening on ${a.address}:${a.port}`);
      if (cb) cb(...cbArgs);
    });
  }
  return listen.apply(this, args);
};
await import('supergateway/dist/index.js');
