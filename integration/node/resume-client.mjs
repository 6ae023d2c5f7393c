// resume-client.mjs is one real TypeScript MCP SDK client (v1 or v2, MCP
// 2025-11-25) calling one tool with a bearer token, with progress, and
// printing what happened as one JSON object on stdout: the result, the
// progress notifications, every resumption token (SSE event ID) the
// transport reported for the call (onresumptiontoken), and the errors
// the transport reported (a dropped stream shows there). Reconnection is
// the SDK's own (reconnectionOptions): stdio_resume_test.go cuts the
// call's connection mid-stream and checks that the SDK resumed it.
//
//   node resume-client.mjs --sdk v1|v2 --url URL --token TOKEN --tool NAME [--args JSON]
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    sdk: { type: 'string' },
    url: { type: 'string' },
    token: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '{}' },
  },
});

async function loadSDK(line) {
  if (line === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return { Client, StreamableHTTPClientTransport, pkg: '@modelcontextprotocol/sdk' };
  }
  const m = await import('@modelcontextprotocol/client');
  return { ...m, pkg: '@modelcontextprotocol/client' };
}
const sdk = await loadSDK(opt.sdk);
const { readFileSync } = await import('node:fs');
const version = JSON.parse(readFileSync(new URL(`./node_modules/${sdk.pkg}/package.json`, import.meta.url))).version;

const out = { client: `${sdk.pkg}@${version}`, progress: [], resumptionTokens: [], errors: [] };
let client;
try {
  const transport = new sdk.StreamableHTTPClientTransport(new URL(opt.url), {
    requestInit: { headers: { Authorization: `Bearer ${opt.token}` } },
    // The SDK's reconnection, sooner than its default first delay (1 s);
    // the server sends no retry field.
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 2, maxRetries: 5 },
  });
  client = new sdk.Client({ name: 'mcpguard-resume', version: '0' });
  client.onerror = (e) => out.errors.push(String(e?.message ?? e));
  await client.connect(transport);
  out.protocolVersion = client.protocolVersion ?? transport.protocolVersion ?? null;
  out.sessionId = transport.sessionId ?? null;
  const options = {
    timeout: 30000, // an answer that never comes fails here, before the test's bound
    onprogress: (p) => out.progress.push(p.progress),
    onresumptiontoken: (t) => out.resumptionTokens.push(t),
  };
  const params = { name: opt.tool, arguments: JSON.parse(opt.args) };
  // v1 takes a result schema before the options; v2 does not.
  const r = opt.sdk === 'v1' ? await client.callTool(params, undefined, options) : await client.callTool(params, options);
  out.call = { isError: !!r.isError, text: r.content?.map((c) => c.text).join('') ?? '' };
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = `${e?.name}: ${e?.message}`;
} finally {
  await client?.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
