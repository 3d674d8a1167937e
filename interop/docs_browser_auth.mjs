// The try-it page of an API behind a token, in headless Chromium (playwright-core).
//
//   node docs_browser_auth.mjs <api-url> <chromium> <authorization>
//
// The page opens without the token, says the API wants one, reads the API once the
// visitor types it, and sends it with the calls it runs; its curl line (and what
// its copy button copies) names the token as `$TOKEN` and never shows it.
// Ends with `docs page with auth: N checks passed` (exit 0), or the failing check (exit 1).

import { chromium } from 'playwright-core';

const [api, executablePath, authorization] = process.argv.slice(2);
if (!api || !executablePath || !authorization) {
  console.error('usage: node docs_browser_auth.mjs <api-url> <chromium> <authorization>');
  process.exit(2);
}
let passed = 0;
function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}${detail === undefined ? '' : `: ${detail}`}`);
  passed += 1;
  console.log(`ok ${passed} ${what}`);
}

const browser = await chromium.launch({ executablePath, headless: true });
const context = await browser.newContext();
await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(api).origin });
const page = await context.newPage();
page.setDefaultTimeout(10_000);
const errors = [];
page.on('pageerror', (err) => errors.push(err.message));
try {
  const answer = await page.goto(`${api}/docs`);
  check('the page opens without the token', answer && answer.status() === 200, answer && answer.status());
  const status = page.locator('#status');
  await page.waitForFunction(() => document.querySelector('#status')?.textContent.includes('401'));
  const said = await status.textContent();
  check('the page says the API wants a credential', said.includes('Authorization'), said);

  await page.getByLabel('Authorization').fill(authorization);
  await page.getByLabel('Authorization').press('Enter');
  const add = page.locator('article[data-op="add"]');
  await add.locator('form').waitFor();
  check('with the credential the tools are listed', true);
  check('the problem is gone', !(await status.textContent()).includes('401'));

  await add.locator('[data-path="/a"] input').fill('1');
  await add.locator('[data-path="/b"] input').fill('2');
  await add.locator('[data-action="run"]').click();
  await page.waitForFunction(() => ['ok', 'error'].includes(document.querySelector('article[data-op="add"] [data-result]')?.dataset.state));
  const value = await add.locator('[data-value]').textContent();
  check('a call carries the credential', value.trim() === '3', value);
  // The curl line names the credential without showing it: it is on the screen,
  // and the copied line ends up in terminals and shell histories.
  const [scheme, ...secret] = authorization.split(' ');
  const token = secret.join(' ');
  const curl = await add.locator('[data-curl]').textContent();
  check('the curl line does not show the token', !curl.includes(token), curl);
  check('the curl line reads it from $TOKEN', curl.includes(`-H "authorization: ${scheme} $TOKEN"`), curl);
  const note = add.locator('[data-curl-note]');
  check('the page says where the curl line takes the token from',
    (await note.isVisible()) && (await note.textContent()).includes('TOKEN'), await note.textContent());
  await add.locator('[data-action="copy"]').click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check('the copied line does not carry the token either', copied === curl && !copied.includes(token), copied);
  // A credential without a scheme is hidden whole (set without a `change`, which
  // would read the API again with it).
  await page.evaluate((value) => { document.getElementById('auth').value = value; }, token);
  await add.locator('[data-path="/a"] input').fill('2');
  const bare = await add.locator('[data-curl]').textContent();
  check('a bare credential is hidden too', !bare.includes(token) && bare.includes('-H "authorization: $TOKEN"'), bare);
  check('the page raised no error', errors.length === 0, errors.join('\n'));
  console.log(`docs page with auth: ${passed} checks passed`);
} catch (err) {
  console.log(`FAILED after ${passed} checks: ${err.message}`);
  const said = await page.locator('#status').textContent().catch(() => '');
  if (said) console.log(`the page says: ${said}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
