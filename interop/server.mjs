// Demo tool server built with the published JavaScript @isdk/tool-rpc 0.1.1.
//
// It serves the same demo catalog as the Rust toolfunc example server, so that
// client.mjs (the 0.1.1 JS client) can be run against either one.
//
//   PORT=3100 node server.mjs      -> listening http://127.0.0.1:3100/api
//
// Note on tool-func 0.1.1: a `func` passed as a constructor option is turned
// into source text and recompiled, so it loses its closure. Every tool below is
// therefore a small subclass that implements `func` (or `$`-methods) as a class
// method instead.

import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { NotFoundError } from '@isdk/common-error';
import {
  HttpServerToolTransport,
  ResServerTools,
  RpcMethodsServerTool,
  ServerTools,
} from '@isdk/tool-rpc';

const PREFIX = '/api';
const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT || 3100);

// --- add (plain tool with an alias) ----------------------------------------
class AddTool extends ServerTools {
  func({ a, b }) {
    return a + b;
  }
}
new AddTool({
  name: 'add',
  alias: 'plus',
  description: 'Add two numbers.',
  params: { a: { type: 'number' }, b: { type: 'number' } },
  result: 'number',
  tags: ['math'],
  isApi: true,
}).register();

// --- greeter (RPC-methods service: the method is chosen by `act`) -----------
class Greeter extends RpcMethodsServerTool {
  $hello({ name }) {
    return `hello ${name}`;
  }

  $mul({ a, b }) {
    return a * b;
  }
}
new Greeter('greeter', { description: 'Service with $-methods.', isApi: true }).register();

// --- users (REST resource, in memory) ---------------------------------------
const users = new Map([
  ['1', { id: '1', name: 'Alice' }],
  ['2', { id: '2', name: 'Bob' }],
]);
let nextId = 3;

function findUser(id) {
  const user = users.get(id);
  if (!user) throw new NotFoundError(id, 'users'); // 404, data {what: id}
  return user;
}

class Users extends ResServerTools {
  list() {
    return [...users.values()];
  }

  get({ id }) {
    return findUser(id);
  }

  post({ val }) {
    const id = String(nextId++);
    const user = { ...val, id };
    users.set(id, user);
    return user;
  }

  put({ id, val }) {
    const user = { ...findUser(id), ...val, id };
    users.set(id, user);
    return user;
  }

  delete({ id }) {
    findUser(id);
    users.delete(id);
    return { deleted: id };
  }

  // Custom method: reached with `act: "$promote"`. Returns a promoted copy.
  $promote({ id }) {
    return { ...findUser(id), role: 'admin' };
  }
}
new Users('users', { description: 'User resource.', isApi: true }).register();

// --- countdown (streams when called with stream: true, else one value) ------
class Countdown extends ServerTools {
  func({ count, stream }) {
    const ticks = [];
    for (let n = count; n >= 1; n--) ticks.push({ tick: n });
    // With `stream` truthy the transport pipes a returned Node stream into the
    // response (chunked, no Content-Type); otherwise the value is sent as JSON.
    if (stream) return Readable.from(ticks.map((t) => `${JSON.stringify(t)}\n`));
    // Not streamed: the numbers alone, "completed in one go".
    return ticks.map((t) => t.tick);
  }
}
new Countdown({
  name: 'countdown',
  description: 'Counts down from count to 1; streams NDJSON lines when stream is true.',
  params: { count: { type: 'number' }, stream: { type: 'boolean' } },
  stream: true,
  isApi: true,
}).register();

// --- fail (plain Error -> HTTP 500 {"error":"boom"}) -------------------------
class Fail extends ServerTools {
  func() {
    throw new Error('boom');
  }
}
new Fail({ name: 'fail', description: 'Always throws an error.', isApi: true }).register();

// --- sleep -------------------------------------------------------------------
class Sleep extends ServerTools {
  async func({ ms }) {
    await delay(ms);
    return { slept: ms };
  }
}
new Sleep({
  name: 'sleep',
  description: 'Waits ms milliseconds, then returns {slept: ms}.',
  params: { ms: { type: 'number' } },
  isApi: true,
}).register();

// --- serve -------------------------------------------------------------------
const transport = new HttpServerToolTransport();
// Mounting the ServerTools base class serves every ServerTools instance above:
// discovery at GET /api, calls at /api/<tool>[/<id>].
transport.mount(ServerTools, PREFIX);
await transport.start({ port: PORT, host: HOST });
console.log(`listening http://${HOST}:${PORT}${PREFIX}`);

const stop = () => transport.stop(true).then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
