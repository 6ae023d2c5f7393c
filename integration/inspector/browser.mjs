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
  // For the diagnosis of a failure: the page's navigations (origin and
  // path), console errors and warnings, uncaught exceptions, failed
  // requests and answers >= 400 it saw, and the notifications the UI
  // showed, each list bounded.
  navigations: [],
  console: [],
  notices: [],
  url: '',
};
const bounded = (list, entry) => { if (list.length < 50) list.push(entry); };
// posts counts the page's POST requests (fetch, XHR), wherever they go: a
// connection starts with one (to the server or through the Inspector's
// own API).
let posts = 0;

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
  if (r.method() === 'POST' && ['fetch', 'xhr'].includes(r.resourceType())) posts++;
  const u = new URL(r.url());
  if (r.isNavigationRequest() && r.frame() === page.mainFrame()) bounded(out.navigations, `${u.origin}${u.pathname}`);
  if (u.origin === inspectorOrigin || u.protocol === 'data:') return;
  out.crossOrigin.push(`${r.resourceType()} ${r.method()} ${u.origin}${u.pathname}`);
  if (u.pathname.endsWith('/authorize') && r.isNavigationRequest()) {
    out.authorizations.push(u.searchParams.get('scope') ?? '');
  }
});

page.on('console', (m) => {
  if (m.type() === 'error' || m.type() === 'warn') bounded(out.console, `console.${m.type()}: ${m.text()}`);
});
page.on('pageerror', (e) => bounded(out.console, `uncaught: ${e && e.message || e}`));
page.on('requestfailed', (r) => bounded(out.console, `request failed: ${r.method()} ${r.url().split('?')[0]}: ${r.failure()?.errorText}`));
page.on('response', (r) => {
  if (r.status() >= 400) bounded(out.console, `answer ${r.status()}: ${r.request().method()} ${r.url().split('?')[0]}`);
});
// In every document the page loads: the targets of the clicks the page
// receives (click() checks that its click landed on its element), and the
// text of every notification the UI shows (they close by themselves after
// a few seconds; waiting for one must not depend on polling it in time).
await page.evaluateOnNewDocument(() => {
  window.__clicks = [];
  document.addEventListener('click', (e) => { if (e.isTrusted) window.__clicks.push(e.target); }, true);
  window.__notices = [];
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (!(n instanceof Element)) continue;
        for (const a of [n, ...n.querySelectorAll('[role=alert]')]) {
          if (a.matches('[role=alert]') && window.__notices.length < 50) window.__notices.push(a.textContent);
        }
      }
    }
  }).observe(document, { childList: true, subtree: true });
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
// notice waits until the UI has shown a notification with text in it and
// returns the notification's text from there on.
const notice = (text) => until((t) => window.__notices?.map((n) => n.slice(n.indexOf(t))).find((n) => n.startsWith(t)), text);
// untilHere waits, in this process, until fn() is true.
async function untilHere(what, fn, timeout = stepTimeout) {
  const deadline = Date.now() + timeout;
  while (!fn()) {
    if (Date.now() >= deadline) throw new Error(`waited ${timeout} ms for ${what}`);
    await sleep(100);
  }
}

// clickable tells whether element e can take a click now, and where: it
// is attached and enabled, its ancestors are fully opaque (e itself may be
// an input drawn by its label), neither e nor an ancestor runs an
// animation or transition (the UI's dialogs fade and slide in for
// 200 ms), and the element at its centre is e, inside e or inside one of
// its labels.
// A click sent while e still moves lands beside it: CI lost the step-up
// dialog's Authorize click that way (its point taken 28 px above the
// button's final place, the click hit the dialog's text, no navigation).
function clickable(e) {
  if (!e.isConnected) return { gone: true };
  if (e.closest(':disabled, [aria-disabled=true], [data-disabled]')) return { why: 'disabled' };
  const moving = new Set(document.getAnimations().filter((a) => a.playState === 'running').map((a) => a.effect?.target));
  for (let n = e; n; n = n.parentElement) {
    if (moving.has(n)) return { why: `animating: ${n.tagName.toLowerCase()}.${n.className}` };
    if (n !== e && getComputedStyle(n).opacity !== '1') return { why: `opacity ${getComputedStyle(n).opacity}: ${n.tagName.toLowerCase()}.${n.className}` };
  }
  const r = e.getBoundingClientRect();
  if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
    e.scrollIntoView({ block: 'center', inline: 'center' });
    return { why: 'scrolled into view' };
  }
  const x = r.left + r.width / 2;
  const y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (!hit || ![e, ...(e.labels ?? [])].some((l) => l.contains(hit))) return { why: `covered by ${hit?.tagName.toLowerCase()}.${hit?.className}: ${hit?.textContent.slice(0, 60)}` };
  window.__clicks = [];
  return { ok: true, x, y, box: [r.left, r.top, r.width, r.height].join() };
}

// click clicks the element selector names, as a user would, once it can
// take the click (clickable, and at the same place in two checks 100 ms
// apart). React may replace the element meanwhile; then it is looked up
// again. The click is sent once and never repeated: if the page shows
// that it landed on another element, click fails and says where.
async function click(selector) {
  const deadline = Date.now() + stepTimeout;
  let el = null;
  let prev = '';
  let why = '';
  let s;
  for (;;) {
    el ??= await page.waitForSelector(selector, { visible: true, timeout: Math.max(1, deadline - Date.now()) });
    s = await el.evaluate(clickable).catch((e) => ({ gone: true, why: String(e && e.message || e) }));
    if (s.gone) {
      el = null;
      prev = '';
      why = s.why || 'detached';
    } else if (s.ok && s.box === prev) {
      break;
    } else {
      prev = s.ok ? s.box : '';
      why = s.why || 'moving';
    }
    if (Date.now() >= deadline) throw new Error(`${selector} could not take a click in ${stepTimeout} ms: ${why}`);
    await sleep(100);
  }
  await page.mouse.click(s.x, s.y);
  // Where the click landed (unknown when a navigation replaced the
  // document or React the element).
  const miss = await el.evaluate((e) => {
    const t = window.__clicks[0];
    if (!t || !e.isConnected || [e, ...(e.labels ?? [])].some((l) => l.contains(t))) return '';
    return `${t.tagName.toLowerCase()}.${t.className}: ${t.textContent.slice(0, 80)}`;
  }).catch(() => '');
  if (miss) throw new Error(`the click on ${selector} at ${Math.round(s.x)},${Math.round(s.y)} landed on ${miss}`);
}
// fill replaces the value of the input labelled label: it selects and
// deletes what is there (a field the UI restored after the redirect is
// not empty), checks that it is empty, types text and checks the value.
// React may re-render the input while typing; then it tries again, a
// bounded number of times.
async function fill(label, text) {
  const selector = `::-p-aria(${label})`;
  for (let i = 0; i < 5; i++) {
    await click(selector);
    const el = await page.waitForSelector(selector, { visible: true });
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
  // A click on the switch that the page took without acting on it (seen
  // once in CI: the click landed on the switch, then 90 s of
  // "Disconnected", not one request) is clicked again, at most 3 times,
  // and only while nothing shows that the first was acted on: no POST of
  // the page since, no /authorize, the switch off. A click that started a
  // connection is never repeated (a second would end it).
  for (let i = 0; ; i++) {
    const before = posts;
    await click('input[role=switch]');
    try {
      await untilHere('a request of the connection', () => posts > before || out.authorizations.length > 0, 15000);
      break;
    } catch (e) {
      const off = await page.evaluate(() => !document.querySelector('input[role=switch]')?.checked).catch(() => false);
      if (i >= 3 || posts > before || out.authorizations.length > 0 || !off) throw e;
      step('Connect clicked again');
    }
  }
  out.version = await until(() => /\bConnected\b/.test(document.body.innerText) && document.body.innerText.match(/MCP (\d{4}-\d{2}-\d{2})/)?.[1]);
  step('connected');

  // The Tools tab: a click lost right after connecting was seen once (a
  // clean run: "Connected", then 90 s without the list), most likely sent
  // while the tab bar still moved, which click() now waits out and
  // detects. A tab the UI did not switch to is still clicked again, a
  // bounded number of times, until the list shows (no request is involved,
  // nothing can be refused); each time is a step in the report. The list
  // itself must still say 3 tools.
  for (let i = 0; ; i++) {
    await click(xText('*', 'Tools'));
    try {
      await until((t) => document.body.innerText.includes(t), 'Tools (', 15000);
      break;
    } catch (e) {
      if (i >= 4) throw e;
      step('Tools clicked again');
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
  // Authorize: the browser goes to /authorize (the request listener sees
  // it) and back to the Inspector's /oauth/callback, which exchanges the
  // code and says so in a notification.
  await click('xpath/.//*[@role="dialog"]//button[normalize-space(.)="Authorize"]');
  await untilHere('the step-up /authorize navigation', () => out.authorizations.length >= 2);
  out.stepUpNotice = await notice('Step-up authorization succeeded');
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
  out.url = page.url().split('?')[0];
  out.notices = await page.evaluate(() => window.__notices).catch(() => []);
}
await page.screenshot({ path: env.SCREENSHOT }).catch((e) => { out.error += `\nscreenshot: ${e}`; });
await browser.close();
fs.writeSync(1, JSON.stringify(out) + '\n');
process.exit(out.error ? 1 : 0);
