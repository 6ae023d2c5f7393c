// tenant-client.mjs is the official TypeScript SDK client (v1) calling
// tenant_notes of ts-upstream.mjs through mcpguard proxy with a bearer
// token, once per argument set, and printing one JSON object: the result
// (or error) of each call, in order (policy_test.go).
//
//   node tenant-client.mjs --url URL --token TOKEN --args JSON-ARRAY
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const { values: opt } = parseArgs({
  options: { url: { type: 'string' }, token: { type: 'string' }, args: { type: 'string' } },
});
const transport = new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers: { Authorization: `Bearer ${opt.token}` } },
});
const client = new Client({ name: 'tenant-client', version: '1.0.0' });
await client.connect(transport);
const out = [];
for (const args of JSON.parse(opt.args)) {
  try {
    const res = await client.callTool({ name: 'tenant_notes', arguments: args });
    out.push({ isError: !!res.isError, text: res.content?.[0]?.text ?? '' });
  } catch (e) {
    out.push({ error: String(e?.message ?? e) });
  }
}
await client.close();
console.log(JSON.stringify(out));
