// The dashboard's browser test, run by tests/cli/dashboard.rs: pinned
// puppeteer-core (tests/browser/package-lock.json, installed by
// scripts/install-interop.sh) driving the system's chromium.
//
// Environment: DASHBOARD_URL (http://HOST:PORT), DASHBOARD_TOKEN_FILE (the
// --ui-token-file: the token is read here, never passed in argv or a URL),
// DASHBOARD_FAILING_CHANGE (a Change whose test failed with hostile
// output), DASHBOARD_CLAIMED_CHANGE (a Change whose task the Rust test
// claims through the endpoint), DASHBOARD_SCREENSHOTS (a directory),
// DASHBOARD_CHROMIUM (the browser), DASHBOARD_PROFILE_DIR (a fresh
// --user-data-dir).
//
// Protocol: one JSON line on stdout per step ({"step":"overview"} once the
// logged-in overview is shown, {"step":"done",...} at the end); after the
// first, the script waits for the line `claimed` on stdin.
'use strict';
const puppeteer = require('puppeteer-core');
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const base = process.env.DASHBOARD_URL;
const token = fs.readFileSync(process.env.DASHBOARD_TOKEN_FILE, 'utf8').trim();
const failing = process.env.DASHBOARD_FAILING_CHANGE;
const claimedChange = process.env.DASHBOARD_CLAIMED_CHANGE;
const shots = process.env.DASHBOARD_SCREENSHOTS;

const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function say(v) {
  process.stdout.write(JSON.stringify(v) + '\n');
}

function check(cond, what) {
  if (!cond) {
    throw new Error('check failed: ' + what);
  }
}

async function main() {
  fs.mkdirSync(process.env.DASHBOARD_PROFILE_DIR, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: process.env.DASHBOARD_CHROMIUM,
    headless: true,
    pipe: true,
    userDataDir: process.env.DASHBOARD_PROFILE_DIR,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const dialogs = [];
  const consoleErrors = [];
  const urls = [];
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1360, height: 860 });
    page.on('dialog', async (d) => {
      dialogs.push(d.message());
      await d.dismiss();
    });
    page.on('console', (m) => {
      // A refused login answers 401 and Chromium asks for /favicon.ico
      // (404): "Failed to load resource" is expected; anything else (a
      // Content-Security-Policy violation, a script error) is not.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
        consoleErrors.push(m.text());
      }
    });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    page.on('request', (r) => urls.push(r.url()));
    page.on('framenavigated', (f) => urls.push(f.url()));

    // Without a cookie: the login form, never data.
    await page.goto(base + '/ui/', { waitUntil: 'load' });
    check(new URL(page.url()).pathname === '/ui/login', 'redirected to the login form: ' + page.url());
    check((await page.$('#token')) !== null, 'the token field');
    check(!(await page.content()).includes(failing), 'no data on the login page');
    await page.goto(base + '/ui/change/' + encodeURIComponent(failing), { waitUntil: 'load' });
    check(new URL(page.url()).pathname === '/ui/login', 'the explanation needs the cookie too');

    // A wrong token: the form again with its error.
    await page.type('#token', 'not-the-token-at-all');
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    check((await page.$('#login-error')) !== null, 'the wrong token is refused');

    // Log in.
    await page.type('#token', token);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('.login button[type=submit]')]);
    check(new URL(page.url()).pathname === '/ui/', 'logged in to the overview: ' + page.url());
    check((await page.evaluate(() => document.cookie)) === '', 'the session cookie is HttpOnly');
    await page.waitForSelector('article.change');
    const cards = await page.$$eval('article.change', (as) => as.map((a) => a.dataset.change));
    check(cards.includes(failing) && cards.includes(claimedChange), 'both Changes shown: ' + cards);
    const failedState = await page.$eval(
      'article.change[data-change="' + failing + '"] td.task-state',
      (td) => td.textContent,
    );
    check(failedState === 'failed', 'the failed task: ' + failedState);
    // The hostile title is text: no image element, its override inert.
    const title = await page.$eval(
      'article.change[data-change="' + claimedChange + '"] h3',
      (h) => ({ text: h.textContent, imgs: h.querySelectorAll('img').length }),
    );
    check(title.imgs === 0 && title.text.includes('<img src=x onerror=alert(2)>'), 'the title as text: ' + JSON.stringify(title));
    check(title.text.includes('\\u{202e}') && !title.text.includes('\u202e'), 'the override shown inert: ' + JSON.stringify(title));
    const unclaimed = await page.$eval(
      'article.change[data-change="' + claimedChange + '"] td.attempt-state',
      (td) => td.textContent,
    );
    check(unclaimed === '-', 'not claimed yet: ' + unclaimed);
    await page.evaluate(() => {
      window.__sameDocument = 'marker';
    });
    say({ step: 'overview' });

    // The Rust test claims the task through the endpoint.
    const line = await input.next();
    check(!line.done && line.value.trim() === 'claimed', 'the claim signal');
    await page.waitForFunction(
      (id) => {
        const td = document.querySelector('article.change[data-change="' + id + '"] td.attempt-state');
        return td !== null && td.textContent === 'leased';
      },
      { timeout: 20000, polling: 200 },
      claimedChange,
    );
    const same = await page.evaluate(() => window.__sameDocument);
    check(same === 'marker', 'the claim appeared without a reload');
    const holder = await page.$eval(
      'article.change[data-change="' + claimedChange + '"] td.attempt-state + td',
      (td) => td.textContent,
    );
    check(holder.length > 0 && holder !== '-', 'the holder shown: ' + holder);
    await page.screenshot({ path: path.join(shots, 'overview.png') });

    // The explanation: the failing test's tail, its <script> as text.
    await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }),
      page.click('article.change[data-change="' + failing + '"] h3 a'),
    ]);
    check(new URL(page.url()).pathname === '/ui/change/' + failing, 'the explanation: ' + page.url());
    const tail = await page.$eval('pre.tail[id^="stderr-"]', (p) => p.textContent);
    check(tail.includes('<script>alert(1)</script>'), 'the tail shows the script as text: ' + tail);
    check(tail.includes('\\x1b[31mRED\\x07'), 'the escape sequence shown inert: ' + tail);
    check(tail.includes('FAIL'), 'the failure in the tail: ' + tail);
    const scripts = await page.$$eval('script', (s) => s.length);
    check(scripts === 0, 'no script element on the explanation page: ' + scripts);
    const inPre = await page.$$eval('pre.tail *', (e) => e.length);
    check(inPre === 0, 'no element inside the tail');
    const summary = await page.$eval('#summary', (p) => p.textContent);
    check(summary.includes('keep the subject from qualifying'), 'the summary: ' + summary);
    await page.screenshot({ path: path.join(shots, 'explanation.png'), fullPage: true });

    // Log out: the cookie is gone and the pages are closed again.
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('.logout button')]);
    check(new URL(page.url()).pathname === '/ui/login', 'logged out: ' + page.url());
    await page.goto(base + '/ui/', { waitUntil: 'load' });
    check(new URL(page.url()).pathname === '/ui/login', 'no page after logout');
    await page.close();
  } finally {
    await browser.close();
  }
  const leaked = urls.filter((u) => u.includes(token));
  check(leaked.length === 0, 'the token in a URL: ' + leaked);
  say({ step: 'done', dialogs, console_errors: consoleErrors, requests: urls.length });
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
    process.exit(1);
  },
);
