// The 1.x JavaScript client's background-task loop (wire reference §8.2, §8.3),
// written out with fetch, since only @isdk/tool-rpc 0.1.1 is published: POST a
// call; on HTTP 102, or 202 whose body has `status === 102`, poll
// `GET <api>/rpcTask/<req-id>` (rpc-fn/rpc-act/rpc-res-id headers, a `poll-` req-id)
// every `rpc-retry-after` ms (1000 without it) until an answer that is not
// "processing"; cancel fire-and-forget with `POST .../rpcTask/<id>` and act `$cancel`.
//
// Usage: node poll_loop_1x.mjs http://127.0.0.1:3000/api
// Prints one line per check and "checks passed" at the end; exits 1 on a failure.

const api = process.argv[2];
if (!api) {
  console.error('usage: node poll_loop_1x.mjs <api url>');
  process.exit(2);
}

let checks = 0;
function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL: ${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
    process.exit(1);
  }
  checks += 1;
  console.log(`ok: ${what}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const reqId = () => Math.random().toString(36).slice(2);

// What the 1.x client counts as "still running".
function processing(response, body) {
  return response.status === 102 || (response.status === 202 && body && body.status === 102);
}

async function readBody(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

// One call the way the 1.x client makes it, following the background loop.
async function call(name, params, { onAccepted } = {}) {
  let response = await fetch(`${api}/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'req-id': reqId() },
    body: JSON.stringify(params),
  });
  let body = await readBody(response);
  let polls = 0;
  let stillRunning = 0;
  if (!processing(response, body)) return { response, body, polls, stillRunning };
  const id = response.headers.get('req-id');
  check(Boolean(id), `${name}: a 202 names the task in req-id`);
  if (onAccepted) await onAccepted(id);
  let wait = Number(response.headers.get('rpc-retry-after')) || 1000;
  for (;;) {
    await sleep(wait);
    response = await fetch(`${api}/rpcTask/${encodeURIComponent(id)}`, {
      method: 'GET',
      headers: {
        'rpc-fn': 'rpcTask',
        'rpc-act': 'get',
        'rpc-res-id': id,
        'req-id': `poll-${reqId()}`,
      },
    });
    body = await readBody(response);
    polls += 1;
    if (!processing(response, body)) return { response, body, polls, stillRunning, id };
    stillRunning += 1;
    wait = Number(response.headers.get('rpc-retry-after')) || 1000;
  }
}

async function cancel(id) {
  // Fire-and-forget in the client; awaited here to check the answer.
  const response = await fetch(`${api}/rpcTask/${encodeURIComponent(id)}`, {
    method: 'POST',
    headers: {
      'rpc-fn': 'rpcTask',
      'rpc-act': '$cancel',
      'rpc-res-id': id,
      'req-id': `poll-${reqId()}`,
    },
  });
  return { response, body: await readBody(response) };
}

// A task that outlives its 1 s soft deadline by more than one poll interval: the
// loop must see "still running" (both status and code 102) and go on.
{
  const { response, body, polls, stillRunning } = await call('report', { ms: 2600 });
  check(response.status === 200, 'report: the poll loop ends with 200', response.status);
  check(body && body.ms === 2600, 'report: the result is the tool\'s own', body);
  check(polls >= 2 && stillRunning >= 1, 'report: a poll while running kept the loop going', { polls, stillRunning });
}

// A task that fails after the deadline: the error comes back on the poll.
{
  const { response, body } = await call('report', { ms: 1500, fail: true });
  check(response.status >= 400, 'failing report: the poll answers an error status', response.status);
  const message = typeof body?.error === 'string' ? body.error : body?.error?.message;
  check(typeof message === 'string' && message.length > 0, 'failing report: the error has a message', body);
}

// A cancelled task: `$cancel` answers success, and the task does not finish as done.
{
  let cancelled;
  const { response } = await call('report', { ms: 20000 }, {
    onAccepted: async (id) => {
      cancelled = await cancel(id);
    },
  });
  check(cancelled.response.status === 200 && cancelled.body?.success === true, 'cancel: {"success":true}', cancelled.body);
  check(response.status !== 200 && response.status !== 202, 'cancel: the task no longer answers as running or done', response.status);
}

// Unknown ids are 404.
{
  const response = await fetch(`${api}/rpcTask/no-such-task`, {
    headers: { 'rpc-fn': 'rpcTask', 'rpc-act': 'get', 'rpc-res-id': 'no-such-task' },
  });
  check(response.status === 404, 'unknown task: 404', response.status);
}

console.log(`poll loop 1.x: ${checks} checks passed`);
