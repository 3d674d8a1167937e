// Drives a tool server with the published JavaScript @isdk/tool-rpc 0.1.1 client
// and checks every answer of the demo catalog (see server.mjs).
//
//   node client.mjs http://127.0.0.1:3100/api
//
// Prints `interop client: N checks passed` and exits 0, or prints the failing
// check and exits 1. It only relies on the two starting users; records it
// creates are addressed by the id the server returns.

import assert from 'node:assert/strict';
import { HttpClientToolTransport, ResClientTools } from '@isdk/tool-rpc';

const apiRoot = process.argv[2];
if (!apiRoot) {
  console.error('usage: node client.mjs <api root URL, e.g. http://127.0.0.1:3100/api>');
  process.exit(2);
}

let passed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    console.error(`FAIL ${name}`);
    console.error(err);
    process.exit(1);
  }
}

// Asserts that `promise` rejects with an error carrying the HTTP status in
// `code` (0.1.1 builds a common-error from the status; 404 -> NotFoundError).
async function rejectsWith(promise, status, messagePart) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code ?? err.status, status, `status of ${err}`);
    if (messagePart) assert.match(err.message, new RegExp(messagePart));
    return true;
  });
}

// Mounting ResClientTools sets the transport, fetches GET <apiRoot> and
// registers one ResClientTools proxy per discovered tool. REST verbs are only
// used for tools whose discovery entry has action "res"; every other tool is
// called with POST <apiRoot>/<name> and a JSON body.
const transport = new HttpClientToolTransport(apiRoot);
let apis;
await check('discovery', async () => {
  apis = await transport.mount(ResClientTools);
  for (const name of ['add', 'greeter', 'users', 'countdown', 'fail', 'sleep']) {
    assert.ok(apis[name], `tool ${name} is listed`);
    assert.ok(ResClientTools.get(name), `tool ${name} is registered`);
  }
  assert.deepEqual([apis.add.alias].flat(), ['plus']);
  assert.equal(apis.users.action, 'res');
  for (const m of ['get', 'post', 'put', 'delete', 'list', '$promote']) {
    assert.ok(apis.users.methods.includes(m), `users has method ${m}`);
  }
  assert.ok(apis.greeter.methods.includes('$hello'));
  assert.ok(apis.greeter.methods.includes('$mul'));
  assert.equal(apis.countdown.stream, true);
});

const add = ResClientTools.get('add');
const greeter = ResClientTools.get('greeter');
const users = ResClientTools.get('users');

await check('add(1, 2) = 3', async () => {
  assert.equal(await add.run({ a: 1, b: 2 }), 3);
});

await check('alias plus resolves locally (sent as POST /add)', async () => {
  assert.equal(await ResClientTools.run('plus', { a: 1, b: 2 }), 3);
});

// The 0.1.1 client resolves aliases itself and always sends the canonical
// name. To make the server resolve the alias, call the transport directly
// (still the library's own API): this sends POST <apiRoot>/plus.
await check('alias plus resolved by the server (POST /plus)', async () => {
  assert.equal(await transport.fetch('plus', { a: 2, b: 3 }), 5);
});

// `$`-methods get proxies without the `$`; they POST {...params, act: "$hello"}.
await check('greeter $hello', async () => {
  assert.equal(await greeter.hello({ name: 'Ann' }), 'hello Ann');
});

await check('greeter $mul', async () => {
  assert.equal(await greeter.mul({ a: 6, b: 7 }), 42);
});

// REST proxies: list -> GET /users, get -> GET /users/<id>,
// post -> POST /users {val}, put -> PUT /users {id, val} (id in the body),
// delete -> DELETE /users/<id>, promote -> POST /users {id, act: "$promote"}.
await check('users list', async () => {
  const list = await users.list();
  assert.ok(Array.isArray(list));
  assert.deepEqual(list.find((u) => u.id === '1'), { id: '1', name: 'Alice' });
  assert.deepEqual(list.find((u) => u.id === '2'), { id: '2', name: 'Bob' });
});

await check('users get 1', async () => {
  assert.deepEqual(await users.get({ id: '1' }), { id: '1', name: 'Alice' });
});

await check('users get 99 -> 404', async () => {
  await rejectsWith(users.get({ id: '99' }), 404, '99');
});

let carol;
await check('users post', async () => {
  carol = await users.post({ val: { name: 'Carol' } });
  assert.equal(carol.name, 'Carol');
  assert.equal(typeof carol.id, 'string');
  assert.ok(!['1', '2'].includes(carol.id), `new id, got ${carol.id}`);
});

await check('users put', async () => {
  const updated = await users.put({ id: carol.id, val: { name: 'Caroline' } });
  assert.deepEqual(updated, { id: carol.id, name: 'Caroline' });
});

await check('users $promote', async () => {
  assert.deepEqual(await users.promote({ id: '2' }), { id: '2', name: 'Bob', role: 'admin' });
});

await check('users delete', async () => {
  assert.deepEqual(await users.delete({ id: carol.id }), { deleted: carol.id });
  await rejectsWith(users.get({ id: carol.id }), 404);
});

await check('fail -> 500 boom', async () => {
  await rejectsWith(ResClientTools.run('fail', {}), 500, 'boom');
});

await check('countdown (JSON)', async () => {
  const ticks = await ResClientTools.run('countdown', { count: 3 });
  assert.deepEqual(ticks, [{ tick: 3 }, { tick: 2 }, { tick: 1 }]);
});

// With `stream: true` in the params the 0.1.1 client returns the raw fetch
// Response instead of parsing JSON.
await check('countdown (stream)', async () => {
  const res = await ResClientTools.run('countdown', { count: 3, stream: true });
  assert.equal(res.status, 200);
  const lines = (await res.text()).split('\n').filter((l) => l.trim() !== '');
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [{ tick: 3 }, { tick: 2 }, { tick: 1 }]);
});

await check('sleep 10ms', async () => {
  assert.deepEqual(await ResClientTools.run('sleep', { ms: 10 }), { slept: 10 });
});

console.log(`interop client: ${passed} checks passed`);
