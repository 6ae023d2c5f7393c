// Drives the MCP Inspector's web UI in Debian's headless chromium
// (puppeteer-core, never a downloaded browser) as a new user would:
// connect to the server the Inspector was started for, authorize at its
// authorization server (redirects in the real browser), open the tools,
// read the tools/list answer the UI shows, call notes_write, take the
// step-up the UI offers on a 403 insufficient_scope, clear the restored
// field, retype and call again. It prints one JSON object on stdout and
// saves a screenshot of the final (or failed) state.
//
// Environment:
//   INSPECTOR_URL   the web UI's address, with its API token
//   CHROMIUM        the browser (default /usr/bin/chromium)
//   NOTE_TEXT       the note to write
//   SCREENSHOT      where to save the screenshot (PNG)
//   USER_DATA_DIR   a fresh, empty chromium profile directory
//   STEP_TIMEOUT_MS bound of each wait (default 60000)
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';

const env = process.env;
const stepTimeout = Number(env.STEP_TIMEOUT_MS || 60000);
const noteText = env.NOTE_TEXT;
const inspectorOrigin = new URL(env.INSPECTOR_URL).origin;

const out = {
  steps: [],          // the steps that completed, in order
  authorizations: [], // the scope parameter of each /authorize navigation
  crossOrigin: [],    // every request of the page outside the Inspector's origin
  tools: [],          // tools/list as the UI's protocol view shows it: name=type[scopes]
  protocol: '',       // the era badge of the protocol view (LEGACY, MODERN)
  version: '',        // the protocol version the server card shows
  stepUpDialog: '',   // the text of the step-up dialog
  stepUpNotice: '',   // the notification after the step-up
  fieldRestored: '',  // the value of the text field after the redirect back
  result: null,       // the tools/call result the protocol view shows
  error: '',
};

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  pipe: true, // chromium exits with this process, however it ends
  userDataDir: env.USER_DATA_DIR,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage();
page.setDefaultTimeout(stepTimeout);
page.setDefaultNavigationTimeout(stepTimeout);
await page.setViewport({ width: 1400, height: 900 });
page.on('request', (r) => {
  const u = new URL(r.url());
  if (u.origin === inspectorOrigin || u.protocol === 'data:') return;
  out.crossOrigin.push(`${r.resourceType()} ${r.method()} ${u.origin}${u.pathname}`);
  if (u.pathname.endsWith('/authorize') && r.isNavigationRequest()) {
    out.authorizations.push(u.searchParams.get('scope') ?? '');
  }
});

const step = (name) => out.steps.push(name);
const xText = (tag, text) => `xpath/.//${tag}[normalize-space(.)=${JSON.stringify(text)}]`;
// until evaluates fn(arg) in the page every 250 ms until it returns a
// truthy value, which it returns, or fails after timeout. Each check is a
// fresh page.evaluate: a navigation (the OAuth redirects) that destroys the
// page's context between two checks costs one check, where a single
// waitForFunction task was seen in CI to stop resolving across the redirect
// back ("Connected" on the page, 90 s without an answer).
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(fn, arg, timeout = stepTimeout) {
  const deadline = Date.now() + timeout;
  let last = '';
  for (;;) {
    try {
      const v = await Promise.race([
        page.evaluate(fn, arg),
        sleep(10000).then(() => { throw new Error('page.evaluate took more than 10 s'); }),
      ]);
      if (v) return v;
    } catch (e) {
      last = String(e && e.message || e);
    }
    if (Date.now() >= deadline) {
      throw new Error(`waited ${timeout} ms for ${fn}${last ? ` (last error: ${last})` : ''}`);
    }
    await sleep(250);
  }
}
const bodyHas = (text) => until((t) => document.body.innerText.includes(t), text);
// React may replace an element between finding and clicking it; puppeteer
// then refuses the click before it is sent ("Node is detached from
// document", seen in CI right after the page opened), so the element is
// looked up again, a bounded number of times. A click that was sent is
// never repeated here.
const detached = (e) => /detached|not clickable|not an Element|Cannot find context/i.test(String(e && e.message || e));
async function click(selector) {
  for (let i = 0; ; i++) {
    const el = await page.waitForSelector(selector, { visible: true });
    try {
      await el.click();
      return;
    } catch (e) {
      if (i >= 4 || !detached(e)) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
// fill replaces the value of the input labelled label: it selects and
// deletes what is there (a field the UI restored after the redirect is
// not empty), checks that it is empty, types text and checks the value.
// React may re-render the input while typing; then it tries again, a
// bounded number of times.
async function fill(label, text) {
  for (let i = 0; i < 5; i++) {
    const el = await page.waitForSelector(`::-p-aria(${label})`, { visible: true });
    try {
      await el.click();
    } catch (e) {
      if (!detached(e)) throw e;
      continue;
    }
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyA');
    await page.keyboard.up('Control');
    await page.keyboard.press('Backspace');
    if ((await el.evaluate((e) => e.value)) !== '') continue;
    await el.type(text);
    if ((await el.evaluate((e) => e.value)) === text) return;
  }
  throw new Error(`could not set the ${label} field to ${JSON.stringify(text)}`);
}
// editorValues returns the JSON the protocol view's editors (Ace) hold,
// by their labels.
const editorValues = (label) => page.evaluate((l) => [...document.querySelectorAll('.ace_editor')]
  .filter((e) => (e.querySelector('textarea')?.getAttribute('aria-label') ?? '').startsWith(l))
  .map((e) => e.env?.editor?.getValue() ?? ''), label);

try {
  await page.goto(env.INSPECTOR_URL, { waitUntil: 'load' });
  await page.waitForSelector('input[role=switch]');
  step('opened');

  // Connect: 401, discovery, registration, then the browser goes to the
  // authorization server's /authorize (it approves at once) and back to
  // the Inspector's /oauth/callback with the code.
  await click('input[role=switch]');
  out.version = await until(() => /\bConnected\b/.test(document.body.innerText) && document.body.innerText.match(/MCP (\d{4}-\d{2}-\d{2})/)?.[1]);
  step('connected');

  // The Tools tab: a click that lands while React re-renders the page
  // right after connecting is lost (seen on a clean run: "Connected", then
  // 90 s without the list), so it is clicked again, a bounded number of
  // times, until the list shows; the list itself must still say 3 tools.
  for (let i = 0; ; i++) {
    await click(xText('*', 'Tools'));
    try {
      await until((t) => document.body.innerText.includes(t), 'Tools (', 15000);
      break;
    } catch (e) {
      if (i >= 4) throw e;
    }
  }
  await bodyHas('Tools (3)');
  step('tools listed');

  // The protocol view shows each request and answer; its editors hold
  // the tools/list answer as the UI received it.
  await click(xText('*', 'Protocol'));
  await until(() => [...document.querySelectorAll('.ace_editor textarea')]
    .some((t) => (t.getAttribute('aria-label') ?? '').startsWith('tools/list response JSON')));
  out.protocol = await page.evaluate(() => {
    const m = document.body.innerText.match(/Messages\s+(LEGACY|MODERN)/);
    return m ? m[1] : '';
  });
  const [list] = await editorValues('tools/list response JSON');
  for (const tool of JSON.parse(list).result.tools) {
    let n = tool.name;
    for (const s of tool._meta?.securitySchemes ?? []) n += `=${s.type}[${(s.scopes ?? []).join(' ')}]`;
    out.tools.push(n);
  }
  out.tools.sort();
  step('tools/list read');

  // notes_write with the first token (mcp:tools): 403 insufficient_scope,
  // and the UI offers a step-up.
  await click(xText('*', 'notes_write'));
  await fill('text', noteText);
  await click(xText('button', 'Execute Tool'));
  await bodyHas('Additional permissions required');
  out.stepUpDialog = await page.evaluate(() => document.querySelector('[role=dialog]')?.innerText ?? '');
  step('step-up offered');
  await Promise.all([
    page.waitForNavigation({ url: (u) => u.includes('/oauth/callback') }),
    click('xpath/.//*[@role="dialog"]//button[normalize-space(.)="Authorize"]'),
  ]);
  await bodyHas('Step-up authorization succeeded');
  out.stepUpNotice = await page.evaluate(() => document.body.innerText.match(/Step-up authorization succeeded[^\n]*/)[0]);
  step('stepped up');

  // Back on the tool (the UI restores it and the text typed before the
  // redirect): clear the field, retype, call again.
  if (!(await page.$('::-p-aria(text)'))) {
    await click(xText('*', 'Tools'));
    await click(xText('*', 'notes_write'));
  }
  const field = await page.waitForSelector('::-p-aria(text)', { visible: true });
  out.fieldRestored = await field.evaluate((e) => e.value);
  await fill('text', noteText);
  await click(xText('button', 'Execute Tool'));
  await bodyHas('Results');
  await bodyHas(JSON.stringify(noteText));
  // The answer as the protocol view holds it (newest first).
  await until(() => [...document.querySelectorAll('.ace_editor textarea')]
    .some((t) => (t.getAttribute('aria-label') ?? '').startsWith('tools/call response JSON')));
  const [answer] = await editorValues('tools/call response JSON');
  out.result = JSON.parse(answer).result;
  step('notes_write succeeded');
} catch (e) {
  out.error = String(e && e.stack || e);
  out.page = await page.evaluate(() => document.body.innerText).catch(() => '');
}
await page.screenshot({ path: env.SCREENSHOT }).catch((e) => { out.error += `\nscreenshot: ${e}`; });
await browser.close();
fs.writeSync(1, JSON.stringify(out) + '\n');
process.exit(out.error ? 1 : 0);
