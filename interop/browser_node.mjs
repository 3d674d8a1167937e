// The browser client (examples/browser, built as WebAssembly for Node by its
// build.sh) against the example server, from Node, whose `fetch` it calls as a
// page's.
//
//   node browser_node.mjs <examples/browser/pkg/node/toolfunc_browser.js> <api-url>
//
// Prints one line per check and ends with `node: N checks passed` (exit 0), or
// prints the failing check and exits 1.

import { createRequire } from 'node:module';

const [module, api] = process.argv.slice(2);
if (!module || !api) {
  console.error('usage: node browser_node.mjs <toolfunc_browser.js> <api-url>');
  process.exit(2);
}
const { Tools, runLocal, localTools } = createRequire(import.meta.url)(module);
let passed = 0;

function check(what, ok, detail) {
  if (!ok) throw new Error(`${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
  passed += 1;
  console.log(`ok ${passed} ${what}`);
}

// The error a call fails with.
async function failure(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('the call did not fail');
}

try {
  const tools = await Tools.connect(api);
  const names = tools.names();
  check('discovery lists the demo', ['add', 'countdown', 'users', 'report'].every((n) => names.includes(n)), names);
  const add = JSON.parse(tools.definitions()).find((d) => d.name === 'add');
  check('definitions carry the parameters', add && add.params.properties.a !== undefined, add);

  check('run: add', JSON.parse(await tools.run('add', JSON.stringify({ a: 1, b: 2 }))) === 3);

  const ticks = [];
  const count = await tools.runStream('countdown', JSON.stringify({ count: 3 }), (item) => ticks.push(JSON.parse(item).tick));
  check('runStream: countdown, item by item', count === 3 && ticks.join() === '3,2,1', ticks);

  check('the typed client: UsersClient::get', JSON.parse(await tools.user('1')).name === 'Alice');

  const missing = await failure(tools.run('nope', '{}'));
  check('an unknown tool: NOT_FOUND', missing.code === 'NOT_FOUND' && missing.status === 404, { code: missing.code, status: missing.status });

  const bad = await failure(tools.run('add', JSON.stringify({ a: 'x', b: 1 })));
  check('bad arguments: ARGUMENTS at their path', bad.code === 'ARGUMENTS' && bad.path === '/a', { code: bad.code, path: bad.path });

  const gone = await failure(tools.user('99'));
  check("a service's own error: its code and data", gone.code === 'USER_NOT_FOUND' && JSON.parse(gone.data).what === '99', { code: gone.code });

  const report = JSON.parse(await tools.run('report', JSON.stringify({ ms: 1500 })));
  check('a call moved to the background is polled to its answer', report && typeof report === 'object', report);

  const started = Date.now();
  const late = await failure(tools.runWithin('sleep', JSON.stringify({ ms: 5000 }), 300));
  const took = Date.now() - started;
  check("a timeout is kept on the page's timers: TIMEOUT, on time", late.code === 'TIMEOUT' && took < 2000, { code: late.code, took });

  const review = JSON.parse(await tools.prompt('review', JSON.stringify({ code: 'x = 1' })));
  check('a prompt', review.length === 2 && review[0].role === 'user', review);

  const readme = JSON.parse(await tools.read('demo://readme'));
  check('a resource', readme[0].text.includes('toolfunc demo'), readme);

  check("the module's own tools run by name", JSON.parse(await runLocal('add', JSON.stringify({ a: 2, b: 3 }))) === 5);
  check("a local tool awaiting a JavaScript promise runs on the event loop", JSON.parse(await runLocal('add_later', JSON.stringify({ a: 4, b: 5 }))) === 9);
  const exported = JSON.parse(localTools());
  check("the module's own tools export for a model", exported.some((t) => t.function.name === 'add'), exported.length);

  console.log(`node: ${passed} checks passed`);
} catch (err) {
  console.error(`FAILED after ${passed} checks: ${err.message}`);
  process.exit(1);
}
