// examples/browser/index.html in headless Chromium, driven with playwright-core:
// the page, served from an origin the example server names with `--cors-origin`,
// calls the server's tools with the Rust client built as WebAssembly; the same
// page from an origin not named is refused by the browser.
//
//   node browser_page.mjs <page-url> <chromium> <foreign-page-url>
//
// Prints one line per check and ends with `browser: N checks passed` (exit 0), or
// prints the failing check and exits 1.

import { chromium } from 'playwright-core';

const [pageUrl, executablePath, foreignUrl] = process.argv.slice(2);
if (!pageUrl || !executablePath || !foreignUrl) {
  console.error('usage: node browser_page.mjs <page-url> <chromium> <foreign-page-url>');
  process.exit(2);
}
let passed = 0;

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  passed += 1;
  console.log(`ok ${passed} ${what}`);
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  await page.goto(pageUrl);
  await page.waitForSelector('body[data-done]');
  const text = async (id) => (await page.textContent(`#${id}`)).trim();
  check('the page finished', (await page.getAttribute('body', 'data-done')) === 'yes', await text('error'));
  check('the page lists the remote tools', (await text('names')).includes('countdown'), await text('names'));
  check('the page shows add = 3', (await text('add')) === '3', await text('add'));
  check('the page shows the countdown', (await text('countdown')) === '3 2 1', await text('countdown'));
  check('the typed client got Alice', (await text('user')) === 'Alice', await text('user'));
  check('an unknown tool is NOT_FOUND', (await text('missing')).startsWith('NOT_FOUND'), await text('missing'));
  check('bad arguments are ARGUMENTS at /a', (await text('bad')).startsWith('ARGUMENTS at "/a"'), await text('bad'));
  check("the page's own tool ran", (await text('local')) === '5', await text('local'));
  check('no page error', problems.length === 0, problems);

  // What the wasm client costs a page per call, against the same call by hand
  // with `fetch` (the same headers and body), in the same page: printed, not
  // checked.
  const timing = await page.evaluate(async () => {
    const { api, tools } = window.toolfunc;
    const n = 300;
    const body = JSON.stringify({ a: 1, b: 2 });
    const byHand = async (i) => {
      const answer = await fetch(`${api}/add`, { method: 'POST', headers: { 'content-type': 'application/json', 'req-id': `r${i}` }, body });
      return answer.json();
    };
    for (let i = 0; i < 30; i += 1) { await tools.run('add', body); await byHand(i); }
    let start = performance.now();
    for (let i = 0; i < n; i += 1) await tools.run('add', body);
    const wasm = (performance.now() - start) / n;
    start = performance.now();
    for (let i = 0; i < n; i += 1) await byHand(i);
    const fetched = (performance.now() - start) / n;
    return { wasm, fetched };
  });
  console.log(`timing: add from the page ${timing.wasm.toFixed(3)} ms a call with the wasm client, ${timing.fetched.toFixed(3)} ms with fetch by hand (${(timing.wasm / timing.fetched).toFixed(2)}x)`);

  const foreign = await browser.newPage();
  foreign.setDefaultTimeout(20_000);
  foreign.on('console', () => {}); // the refused request is logged; expected
  await foreign.goto(foreignUrl);
  await foreign.waitForSelector('body[data-done]');
  check('a page of an origin not named is refused', (await foreign.getAttribute('body', 'data-done')) === 'failed'
    && (await foreign.textContent('#add')).trim() === '…', (await foreign.textContent('#error')).trim());

  console.log(`browser: ${passed} checks passed`);
} catch (err) {
  console.error(`FAILED after ${passed} checks: ${err.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
