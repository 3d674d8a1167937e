// The try-it page (`GET <prefix>/docs`) in a real browser: headless Chromium,
// driven with playwright-core.
//
//   node docs_browser.mjs <api-url> <chromium> [screenshot.png ...]
//
// The server serves the demo catalog and the `shapes` and `ticker` tools of
// tests/http_docs_browser.rs. The script loads <api-url>/docs, runs `add` from its
// form, sends a bad value and finds the error at the field, sends a body from the
// JSON box, calls a REST verb and a service act, fills the `shapes` form (enum,
// array, reference, recursive type, oneOf, defaults), streams `countdown` and
// `ticker` (and cancels one), filters the list, and checks that the page logged no
// error and asked nothing of another origin. It prints one line per check and ends
// with `docs page: N checks passed` (exit 0), or prints the failing check and exits
// 1. The screenshots are of the top of the page, showing the demo catalog.

import { chromium } from 'playwright-core';

const [api, executablePath, ...screenshots] = process.argv.slice(2);
if (!api || !executablePath) {
  console.error('usage: node docs_browser.mjs <api-url> <chromium> [screenshot.png ...]');
  process.exit(2);
}
const origin = new URL(api).origin;
let passed = 0;

// JSON text with the keys of every object sorted.
const canonical = (v) => JSON.stringify(v, (_, x) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}${detail === undefined ? '' : `: ${detail}`}`);
  passed += 1;
  console.log(`ok ${passed} ${what}`);
}

const browser = await chromium.launch({ executablePath, headless: true });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
const page = await context.newPage();
page.setDefaultTimeout(10_000);
const problems = [];
const foreign = [];
try {
  // Chromium logs every answer of 400 and up; those of the calls the checks make
  // fail on purpose are expected, any other is a problem.
  const own = new Set([`${api}/docs`, `${api}/openapi.json`, api]);
  const expected = (msg) => msg.text().startsWith('Failed to load resource: the server responded with a status of 4')
    && !own.has(msg.location().url);
  page.on('console', (msg) => {
    if ((msg.type() === 'error' || msg.type() === 'warning') && !expected(msg)) problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith('data:') && new URL(url).origin !== origin) foreign.push(url);
  });

  const answer = await page.goto(`${api}/docs`);
  check('the page loads', answer && answer.status() === 200, answer && answer.status());
  const policy = answer.headers()['content-security-policy'] || '';
  check('the page comes with its content security policy', policy.includes("default-src 'none'") && policy.includes("connect-src 'self'"), policy);
  // Its script and styles run under a nonce, not 'unsafe-inline': had the browser
  // refused them, nothing below would be drawn, and the refusal would be logged.
  check('the policy allows no inline code but the nonced tags', !policy.includes('unsafe-inline') && /script-src 'nonce-[^']+'/.test(policy), policy);

  const op = (id) => page.locator(`article[data-op="${id}"]`);
  const field = (id, path) => op(id).locator(`[data-path="${path}"]`);
  const input = (id, path) => field(id, path).locator('input, select, textarea').first();
  const result = (id) => op(id).locator('[data-result]');
  const finished = (id) => page.waitForFunction(
    (sel) => ['ok', 'error', 'done', 'cancelled'].includes(document.querySelector(sel)?.dataset.state),
    `article[data-op="${id}"] [data-result]`);

  await op('add').locator('form').waitFor();
  const ids = await page.locator('article[data-op]').evaluateAll((els) => els.map((el) => el.dataset.op));
  for (const id of ['add', 'countdown', 'fail', 'sleep', 'greeter.hello', 'greeter.mul', 'users.list', 'users.get', 'users.post', 'users.put', 'users.delete', 'users.promote']) {
    check(`operation ${id} is listed`, ids.includes(id), ids.join(', '));
  }
  const addSection = page.locator('section[data-tool="add"]');
  check('add shows its description', (await addSection.textContent()).includes('Add two numbers.'));
  check('add shows its tag and annotations',
    (await addSection.locator('[data-tag="math"]').count()) === 1
      && (await addSection.locator('[data-annotation="readOnly"]').count()) === 1
      && (await addSection.locator('[data-alias="plus"]').count()) === 1);
  check('the fields are labelled', (await page.getByLabel(/^a\b/).first().getAttribute('name')) === '/a');

  // A call from the form.
  await input('add', '/a').fill('1');
  await input('add', '/b').fill('2');
  const curl = await op('add').locator('[data-curl]').textContent();
  check('the curl line is the same call', curl === `curl --json '{"a":1,"b":2}' ${api}/add`, curl);
  await op('add').locator('[data-action="run"]').click();
  await finished('add');
  check('add answers 3', (await result('add').locator('[data-value]').textContent()) === '3',
    await result('add').textContent());

  // A string where a number goes: the server's ARGUMENTS error, at the field.
  await input('add', '/a').fill('x');
  await op('add').locator('[data-action="run"]').click();
  await finished('add');
  check('a bad value answers ARGUMENTS', (await result('add').locator('[data-error-code]').textContent()) === 'ARGUMENTS',
    await result('add').textContent());
  check('the error names the path /a', (await result('add').locator('[data-error-path]').textContent()) === '/a');
  const message = await result('add').locator('[data-error-message]').textContent();
  check('the field a is highlighted', await field('add', '/a').evaluate((el) => el.classList.contains('invalid')));
  check('the field a is marked invalid', (await input('add', '/a').getAttribute('aria-invalid')) === 'true');
  check('the message is shown at the field', (await field('add', '/a').locator('.err').textContent()) === message, message);
  check('the field b is not highlighted', !(await field('add', '/b').evaluate((el) => el.classList.contains('invalid'))));

  // The JSON box: the form's body, edited by hand.
  await op('add').locator('[data-action="json-mode"]').check();
  const box = op('add').locator('textarea[data-json]');
  check('the JSON box holds the form body', JSON.parse(await box.inputValue()).a === 'x', await box.inputValue());
  await box.fill('{"a": 5}');
  await op('add').locator('[data-action="run"]').click();
  await finished('add');
  check('a missing field answers ARGUMENTS at /b', (await result('add').locator('[data-error-path]').textContent()) === '/b');
  check('the JSON box is highlighted with the path',
    (await op('add').locator('[data-part="body"] .field.invalid .err').textContent()).startsWith('at /b:'));
  await op('add').locator('[data-action="json-mode"]').uncheck();
  check('back in the form, the JSON values are in the fields',
    (await input('add', '/a').inputValue()) === '5' && (await input('add', '/b').inputValue()) === '');
  await input('add', '/b').fill('0.5');
  await op('add').locator('[data-action="run"]').click();
  await finished('add');
  check('add answers 5.5', (await result('add').locator('[data-value]').textContent()) === '5.5');

  // A REST verb with a path parameter, and a service act.
  await input('users.get', '/id').fill('1');
  await op('users.get').locator('[data-action="run"]').click();
  await finished('users.get');
  check('GET /users/1 answers user 1', JSON.parse(await result('users.get').locator('[data-value]').textContent()).id === '1');
  check('its curl line is a GET of the path', (await op('users.get').locator('[data-curl]').textContent()) === `curl ${api}/users/1`);
  await input('users.get', '/id').fill('99');
  await op('users.get').locator('[data-action="run"]').click();
  await finished('users.get');
  check('an unknown user answers its own code', (await result('users.get').locator('[data-error-code]').textContent()) === 'USER_NOT_FOUND');
  await input('users.put', '/val/name').fill('Alicia');
  await input('users.put', '/id').fill('1');
  check('the PUT curl line names its method', (await op('users.put').locator('[data-curl]').textContent())
    === `curl -X PUT --json '{"val":{"name":"Alicia"}}' ${api}/users/1`);
  await input('greeter.hello', '/name').fill('Ann');
  await op('greeter.hello').locator('[data-action="run"]').click();
  await finished('greeter.hello');
  check('greeter $hello answers', (await result('greeter.hello').locator('[data-value]').textContent()) === '"hello Ann"');

  // A stream: NDJSON items, shown as they arrive.
  await input('countdown', '/count').fill('3');
  await input('countdown', '/stream').check();
  check('the streaming curl line reads as it comes', (await op('countdown').locator('[data-curl]').textContent())
    === `curl -N --json '{"count":3,"stream":true}' ${api}/countdown`);
  await op('countdown').locator('[data-action="run"]').click();
  await finished('countdown');
  const items = await result('countdown').locator('[data-items] li').allTextContents();
  check('countdown streams its ticks', items.join(' ') === '{"tick":3} {"tick":2} {"tick":1}', items.join(' '));
  check('the stream says how many items came', (await result('countdown').locator('[data-count]').textContent()).startsWith('3 items'));

  // Every shape of form: an enum with its default, an array, a referenced object,
  // an optional flag left out, a default number, and a oneOf edited as JSON.
  check('an enum is a select with its default', (await input('shapes', '/mode').evaluate((el) => el.tagName)) === 'SELECT'
    && (await input('shapes', '/mode').locator('option:checked').textContent()) === 'slow');
  check('a default is filled in', (await input('shapes', '/limit').inputValue()) === '10');
  check('an optional flag without a default can be left out', (await input('shapes', '/verbose').evaluate((el) => el.tagName)) === 'SELECT'
    && (await input('shapes', '/verbose').inputValue()) === '');
  check('optional fields are marked', (await field('shapes', '/tags').locator('.opt').count()) === 1
    && (await field('shapes', '/point').locator(':scope > legend .req').count()) === 1);
  check('a oneOf is a JSON box', (await input('shapes', '/either').evaluate((el) => el.tagName)) === 'TEXTAREA');
  await field('shapes', '/tree/children').locator('[data-action="add-item"]').click();
  check('a recursive schema is drawn once, its inner levels as JSON',
    (await input('shapes', '/tree/children/0').evaluate((el) => el.tagName)) === 'TEXTAREA');
  await field('shapes', '/tree/children').locator('[data-action="remove-item"]').click();
  const addItem = field('shapes', '/tags').locator('[data-action="add-item"]');
  await addItem.click();
  await addItem.click();
  await input('shapes', '/tags/0').fill('a');
  await input('shapes', '/tags/1').fill('b');
  await field('shapes', '/tags').locator('[data-action="remove-item"]').first().click();
  check('an array item can be removed', (await input('shapes', '/tags/0').inputValue()) === 'b'
    && (await field('shapes', '/tags/1').count()) === 0);
  await input('shapes', '/point/x').fill('1');
  await input('shapes', '/point/y').fill('2');
  await input('shapes', '/either').fill('7');
  await op('shapes').locator('[data-action="run"]').click();
  await finished('shapes');
  const echoed = JSON.parse(await result('shapes').locator('[data-value]').textContent());
  check('the body is what the form shows', canonical(echoed)
    === canonical({ mode: 'slow', tags: ['b'], point: { x: 1, y: 2 }, limit: 10, either: 7 }), JSON.stringify(echoed));
  await input('shapes', '/point/x').fill('left');
  await op('shapes').locator('[data-action="run"]').click();
  await finished('shapes');
  const nested = await result('shapes').locator('[data-error-path]').textContent().catch(() => null);
  check('a nested bad value is reported at its field', nested === '/point/x'
    && await field('shapes', '/point/x').evaluate((el) => el.classList.contains('invalid')), await result('shapes').textContent());
  await input('shapes', '/either').fill('{nope');
  await op('shapes').locator('[data-action="run"]').click();
  check('bad JSON in a JSON box is caught before sending', (await result('shapes').getAttribute('data-state')) === 'error'
    && await field('shapes', '/either').evaluate((el) => el.classList.contains('invalid')));

  // A slow stream: its first item is on the page while the body is still open.
  await op('ticker').locator('[data-action="run"]').click();
  await result('ticker').locator('[data-items] li').first().waitFor();
  check('the first item shows before the stream ends', (await result('ticker').getAttribute('data-state')) === 'streaming'
    && (await result('ticker').locator('[data-items] li').count()) < 3);
  await finished('ticker');
  check('the stream ends with its three items', (await result('ticker').locator('[data-items] li').count()) === 3);
  check('a tool that always streams gets curl -N', (await op('ticker').locator('[data-curl]').textContent())
    === `curl -N --json '{}' ${api}/ticker`);
  await op('ticker').locator('[data-action="run"]').click();
  await result('ticker').locator('[data-items] li').first().waitFor();
  await op('ticker').locator('[data-action="cancel"]').click();
  await finished('ticker');
  check('Cancel ends a stream and keeps what came', (await result('ticker').getAttribute('data-state')) === 'cancelled'
    && (await result('ticker').locator('[data-items] li').count()) >= 1
    && await op('ticker').locator('[data-action="run"]').isEnabled());

  // The filter.
  await page.getByLabel('Filter').fill('greet');
  const visible = await page.locator('article[data-op]:visible').evaluateAll((els) => els.map((el) => el.dataset.op));
  check('the filter keeps the matching operations', visible.join(' ') === 'greeter.hello greeter.mul', visible.join(' '));
  await page.getByLabel('Filter').fill('');

  check('nothing was logged as an error', problems.length === 0, problems.join('\n'));
  check('nothing was asked of another origin', foreign.length === 0, foreign.join(' '));

  // A picture for the README: `add` answered and `countdown` streamed, at the top.
  await input('add', '/a').fill('1');
  await input('add', '/b').fill('2');
  await op('add').locator('[data-action="run"]').click();
  await finished('add');
  await page.setViewportSize({ width: 1280, height: 1320 });
  await page.locator(':focus').evaluate((el) => el.blur()).catch(() => {});
  // The picture shows the demo catalog alone, without the tools of the test.
  await page.locator('[data-tool="shapes"], [data-tool="ticker"]').evaluateAll((els) => els.forEach((el) => el.remove()));
  await page.evaluate(() => window.scrollTo(0, 0));
  for (const path of screenshots) await page.screenshot({ path });
  console.log(`docs page: ${passed} checks passed`);
} catch (err) {
  console.log(`FAILED after ${passed} checks: ${err.message}`);
  if (problems.length) console.log(`what the page logged:\n${problems.join('\n')}`);
  const said = await page.locator('#status').textContent().catch(() => '');
  if (said) console.log(`the page says: ${said}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
