// Opens cors.html (TestBrowserCORS) in Debian's headless chromium
// (puppeteer-core, never a downloaded browser) and waits until the page
// sets window.mcpResult. It records the browser's network traffic through
// the DevTools protocol, CORS preflights included (the page itself cannot
// see them), and prints one JSON object on stdout: the page's result and
// the requests.
//
// Environment:
//   PAGE_URL        the page, with its query
//   CHROMIUM        the browser (default /usr/bin/chromium)
//   USER_DATA_DIR   a fresh, empty chromium profile directory
//   STEP_TIMEOUT_MS bound of the wait (default 60000)
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';

const env = process.env;
const timeout = Number(env.STEP_TIMEOUT_MS || 60000);
const out = { page: null, requests: [], console: [], error: '' };

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  pipe: true,
  userDataDir: env.USER_DATA_DIR,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => out.console.push(m.text()));
  // Network events of the page's target: requestWillBeSent for every
  // request (a preflight has type "Preflight"), responseReceived with
  // the status and headers the network saw.
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  // With the cache disabled the browser also skips its CORS preflight
  // cache: every non-simple request is preflighted, not only the first
  // to each URL.
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const byID = new Map();
  cdp.on('Network.requestWillBeSent', (e) => {
    const u = new URL(e.request.url);
    const r = { id: e.requestId, type: e.type, method: e.request.method, url: u.origin + u.pathname, status: 0,
      origin: e.request.headers.Origin ?? e.request.headers.origin ?? '',
      requestHeaders: e.request.headers['Access-Control-Request-Headers'] ?? e.request.headers['access-control-request-headers'] ?? '' };
    if (e.redirectResponse) {
      const prev = byID.get(e.requestId);
      if (prev) prev.status = e.redirectResponse.status;
    }
    byID.set(e.requestId, r);
    out.requests.push(r);
  });
  cdp.on('Network.responseReceived', (e) => {
    const r = byID.get(e.requestId);
    if (r) {
      r.status = e.response.status;
      r.type = e.type;
    }
  });
  await page.goto(env.PAGE_URL, { waitUntil: 'load', timeout });
  await page.waitForFunction(() => window.mcpResult !== undefined, { timeout });
  out.page = JSON.parse(await page.evaluate(() => window.mcpResult));
} catch (e) {
  out.error = String(e && e.stack || e);
}
await browser.close();
for (const r of out.requests) delete r.id;
fs.writeSync(1, JSON.stringify(out) + '\n');
process.exit(out.error ? 1 : 0);
