// Drives baton's /mcp endpoint with the official TypeScript MCP SDK's
// client, as test/mcp_deployed_test.go (TestMCPTypeScriptClient) runs it:
// BATON_URL is the front door, TOKEN_ALICE and TOKEN_BOB two callers'
// bearer tokens. It prints one JSON object of what it saw; the Go test
// judges it (and the facts). It exits 1 on an unexpected error.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.env.BATON_URL + '/mcp');
const out = {};

async function connect(token) {
  const client = new Client({ name: 'baton-ts-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer ' + token } } });
  await client.connect(transport);
  return client;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// until polls tasks/get (raw, to keep the tasks extension's inputRequests)
// until the task has status want.
async function until(client, taskId, want) {
  for (let i = 0; i < 200; i++) {
    const t = await client.request({ method: 'tasks/get', params: { taskId } }, ResultSchema);
    if (t.status === want) return t;
    if (['completed', 'failed', 'cancelled'].includes(t.status)) throw new Error(`task ${taskId} is ${t.status}, want ${want}`);
    await sleep(100);
  }
  throw new Error(`task ${taskId} never reached ${want}`);
}

async function newTask(client, name, message) {
  const created = await client.request(
    { method: 'tools/call', params: { name, arguments: { message }, task: { ttl: 600000 } } },
    CreateTaskResultSchema,
  );
  return created.task;
}

try {
  let alice = await connect(process.env.TOKEN_ALICE);
  out.serverCapabilities = alice.getServerCapabilities();
  const tools = await alice.listTools();
  out.tools = tools.tools.map((t) => ({ name: t.name, taskSupport: t.execution?.taskSupport }));

  // A plain call: the turn's answer, with progress notifications on the way.
  const progress = [];
  const plain = await alice.callTool({ name: 'helper', arguments: { message: 'What is the weather in Paris?' } }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p.message),
  });
  out.plain = { text: plain.content[0]?.text, isError: plain.isError ?? false, session: plain.structuredContent?.session, progress };

  // A task that waits for an approval; the client goes away and comes back.
  const task = await newTask(alice, 'approver', 'Send the team a note');
  out.created = { taskId: task.taskId, status: task.status };
  await alice.close();
  alice = await connect(process.env.TOKEN_ALICE);
  const waiting = await until(alice, task.taskId, 'input_required');
  const keys = Object.keys(waiting.inputRequests ?? {});
  out.waiting = { statusMessage: waiting.statusMessage, keys, request: waiting.inputRequests?.[keys[0]] };
  await alice.request(
    { method: 'tasks/update', params: { taskId: task.taskId, inputResponses: { [keys[0]]: { action: 'accept', content: { decision: 'approve' } } } } },
    ResultSchema,
  );
  const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  out.result = { text: result.content[0]?.text, isError: result.isError ?? false };
  out.final = (await alice.experimental.tasks.getTask(task.taskId)).status;

  // Cancel a task that waits.
  const doomed = await newTask(alice, 'approver', 'Send another note');
  await until(alice, doomed.taskId, 'input_required');
  const cancelledTask = await alice.experimental.tasks.cancelTask(doomed.taskId);
  out.cancel = { taskId: doomed.taskId, status: cancelledTask.status, after: (await alice.experimental.tasks.getTask(doomed.taskId)).status };
  try {
    await alice.experimental.tasks.cancelTask(doomed.taskId);
    out.cancel.again = 'accepted';
  } catch (e) {
    out.cancel.again = String(e.code ?? '') + ' ' + e.message;
  }

  // Another caller's task id is unknown to bob.
  const bob = await connect(process.env.TOKEN_BOB);
  out.bob = {};
  for (const [name, call] of Object.entries({
    get: () => bob.experimental.tasks.getTask(task.taskId),
    result: () => bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    cancel: () => bob.experimental.tasks.cancelTask(task.taskId),
  })) {
    try {
      await call();
      out.bob[name] = 'answered';
    } catch (e) {
      out.bob[name] = String(e.code ?? '') + ' ' + e.message;
    }
  }
  await bob.close();
  await alice.close();
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(e?.stack ?? String(e));
  console.log(JSON.stringify(out));
  process.exit(1);
}
