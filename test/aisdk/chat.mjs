// Drives baton's chat endpoint with the AI SDK's own client code: the
// AbstractChat class (what useChat wraps) with the stock
// DefaultChatTransport, and readUIMessageStream. Usage:
//
//   BATON_URL=http://127.0.0.1:8080 node chat.mjs 5|6|7 [header]
//
// header is the x-ai-sdk-version sent: the major by default, "none" to
// send none, or another major (to see a client reject chunks it lacks).
// It prints what it checked and exits non-zero on the first failure.
const major = Number(process.argv[2]);
const base = process.env.BATON_URL;
if (![5, 6, 7].includes(major) || !base) {
  console.error('usage: BATON_URL=<baton> node chat.mjs 5|6|7');
  process.exit(2);
}
const header = process.argv[3] ?? String(major);
const ai = await import(`ai${major}`);
const { AbstractChat, DefaultChatTransport, readUIMessageStream } = ai;

// State is a minimal ChatState, as a UI binding keeps it.
class State {
  constructor(messages = []) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage(m) { this.messages = [...this.messages, m]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(x) { return structuredClone(x); }
}

class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    const state = new State(messages);
    super({ ...init, state });
    this.errors = [];
  }
}

const transport = () => new DefaultChatTransport({
  api: `${base}/chat`,
  headers: header === 'none' ? {} : { 'x-ai-sdk-version': header },
  body: { agent: 'demo' },
});

function newChat(opts = {}) {
  const chat = new Chat({
    transport: transport(),
    sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => chat.errors.push(e),
    ...opts,
  });
  return chat;
}

async function until(what, ok, ms = 30000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function check(what, ok, detail) {
  if (!ok) {
    throw new Error(`${what} failed: ${JSON.stringify(detail, null, 1)}`);
  }
  console.log(`ai@${major}: ${what}`);
}

function noErrors(chat, what) {
  const errs = chat.errors.map((e) => String(e?.message ?? e));
  check(`${what}: no chunk rejected`, errs.length === 0 && chat.status !== 'error', { errs, status: chat.status });
}

const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const tool = (m, name) => m.parts.find((p) => p.type === `tool-${name}`);
const assistants = (chat) => chat.messages.filter((m) => m.role === 'assistant');
const ready = (chat) => () => chat.status === 'ready' || chat.status === 'error';

async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

// firstAnswer sends the demo's message and waits for the turn to suspend
// at its approval request.
async function firstAnswer(chat) {
  await chat.sendMessage({ text: 'Send the team a status update' });
  await until('the first answer', ready(chat));
  noErrors(chat, 'first answer');
  const [msg] = assistants(chat);
  check('a message gets a streamed answer', msg && textOf(msg).startsWith('Let me look up the weather in Lisbon'), chat.messages);
  check('the weather tool ran', tool(msg, 'get_weather')?.state === 'output-available', msg.parts);
  const email = tool(msg, 'send_email');
  const want = major === 5 ? 'input-available' : 'approval-requested';
  check(`the email waits for approval (${want})`, email?.state === want, msg.parts);
  const sess = await api('GET', `/sessions/${chat.id}`);
  check('GET /sessions/{chat id} shows the pending approval', sess.status === 200 && sess.body.pending?.length === 1, sess);
  return { msg, email, approvalId: sess.body.pending[0].approvalId };
}

// reconnect reads the open turn as a reloaded page would: a chat holding
// the messages up to the user's, resuming the stream.
async function reconnect(chat) {
  const fresh = newChat({ id: chat.id, messages: chat.messages.filter((m) => m.role === 'user') });
  await fresh.resumeStream();
  await until('the resumed stream', ready(fresh));
  noErrors(fresh, 'resumed stream');
  return fresh;
}

async function approve(decision) {
  const chat = newChat();
  const { msg, email, approvalId } = await firstAnswer(chat);
  const approved = decision === 'approve';
  let done = chat;
  if (major === 5) {
    const res = await api('POST', `/sessions/${chat.id}/approvals/${approvalId}`, { decision });
    check(`${decision} through the operator route`, res.status === 202, res);
    done = await reconnect(chat);
    await until('the rest of the turn', () => textOf(assistants(done)[0] ?? { parts: [] }).includes('Done:'));
  } else {
    check('the approval id is the operator route\'s', email.approval?.id === approvalId, email);
    await chat.addToolApprovalResponse({ id: email.approval.id, approved });
    await until('the automatic send', () => chat.status !== 'ready');
    await until('the rest of the turn', ready(chat));
    noErrors(chat, `after ${decision}`);
  }
  const msgs = assistants(done);
  check(`one assistant message across the suspension (${decision})`, msgs.length === 1 && msgs[0].id === msg.id, msgs.map((m) => m.id));
  const after = tool(msgs[0], 'send_email');
  const state = approved ? 'output-available' : major === 5 ? 'output-error' : 'output-denied';
  check(`${decision}: the email tool ends ${state}`, after?.state === state, after);
  check(`${decision}: the answer follows`, textOf(msgs[0]).includes('Done: the weather in Lisbon is clear'), textOf(msgs[0]));
  const sess = await api('GET', `/sessions/${chat.id}`);
  check(`${decision}: the turn completed`, sess.body.status === 'idle' && sess.body.turns === 1, sess.body);
}

// elsewhere approves through the operator route (as the console or the CLI
// does) while the chat shows the approval request; the chat resumes its
// stream and shows the rest in the same message.
async function elsewhere() {
  const chat = newChat();
  const { msg, approvalId } = await firstAnswer(chat);
  const res = await api('POST', `/sessions/${chat.id}/approvals/${approvalId}`, { decision: 'approve' });
  check('approve elsewhere through the operator route', res.status === 202, res);
  await chat.resumeStream();
  await until('the resumed stream', ready(chat));
  noErrors(chat, 'resumed after an approval elsewhere');
  const msgs = assistants(chat);
  check('the approval given elsewhere reaches the chat in its one message', msgs.length === 1 && msgs[0].id === msg.id &&
    tool(msgs[0], 'send_email')?.state === 'output-available' && textOf(msgs[0]).includes('Done: the weather in Lisbon is clear'), msgs);
  check('the replayed message holds each part once', msgs[0].parts.filter((p) => p.type === 'tool-get_weather').length === 1, msgs[0].parts);
}

async function reconnectMidTurn() {
  const t = transport();
  const chatId = ai.generateId();
  const user = { id: ai.generateId(), role: 'user', parts: [{ type: 'text', text: 'Send the team a status update' }] };
  const abort = new AbortController();
  const stream = await t.sendMessages({ chatId, messages: [user], trigger: 'submit-message', messageId: undefined, abortSignal: abort.signal });
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before any text');
    if (value.type === 'text-delta') break;
  }
  abort.abort();
  await reader.cancel().catch(() => {});
  const resumed = await t.reconnectToStream({ chatId });
  check('a reconnect mid-turn gets the stream', resumed != null, null);
  let last;
  for await (const m of readUIMessageStream({ stream: resumed, onError: (e) => { throw e; } })) last = m;
  check('the reconnect ends with the whole message', last && textOf(last) === 'Let me look up the weather in Lisbon before I write anything.It is clear in Lisbon. I will email the team a short update; an operator has to approve that.', last && textOf(last));
  check('the reconnected message has both tool calls', tool(last, 'get_weather')?.state === 'output-available' && tool(last, 'send_email') != null, last.parts);
  await api('POST', `/chat/${chatId}/stop`);
}

async function stop() {
  const chat = newChat();
  const sent = chat.sendMessage({ text: 'Send the team a status update' });
  await until('the first text', () => assistants(chat).some((m) => textOf(m).length > 0));
  const res = await api('POST', `/chat/${chat.id}/stop`);
  check('POST /chat/{id}/stop', res.status === 202, res);
  await sent;
  await until('the stopped stream to end', ready(chat));
  noErrors(chat, 'stopped turn');
  const sess = await api('GET', `/sessions/${chat.id}`);
  check('stop ends the turn', sess.body.status === 'idle' && !sess.body.turn, sess.body);
  const again = await transport().reconnectToStream({ chatId: chat.id });
  check('no turn is active after stop: 204', again === null, null);
}

// rendered is a message as an app shows it: the parts of a step that a
// data-guardrail part discarded are retracted (left out), from the step's
// step-start to the guardrail's part, which shows the reason instead.
function rendered(m) {
  const out = [];
  for (const p of m.parts) {
    if (p.type === 'data-guardrail' && p.data?.discarded) {
      const start = out.map((q) => q.type).lastIndexOf('step-start');
      if (start >= 0) out.length = start;
    }
    out.push(p);
  }
  return out;
}

// guarded asks the guarded demo agent for a door code: the answer streams
// live, the output guardrail then blocks it, and the client gets the
// retraction as a data-guardrail part; a reload shows no trace of it.
async function guarded() {
  const chat = newChat({ transport: new DefaultChatTransport({
    api: `${base}/chat`,
    headers: header === 'none' ? {} : { 'x-ai-sdk-version': header },
    body: { agent: 'guarded' },
  }) });
  await chat.sendMessage({ text: 'What is the door code?' });
  await until('the guarded turn to end', ready(chat));
  noErrors(chat, 'guarded turn');
  const msg = assistants(chat).at(-1);
  const g = msg?.parts.find((p) => p.type === 'data-guardrail');
  check('the client got the guardrail\'s retraction as a data part', g && g.data.action === 'block' && g.data.discarded === true &&
    g.data.reason === 'That answer held a door code, so it was withheld.', msg?.parts);
  check('the retracted answer had streamed live', textOf(msg).includes('The door code'), msg.parts);
  const shown = rendered(msg);
  check('rendered, the retracted text is gone and the reason shown', !shown.some((p) => p.type === 'text') &&
    shown.some((p) => p.type === 'data-guardrail'), shown);
  const res = await api('GET', `/chat/${chat.id}/messages`);
  const reloaded = (res.body?.messages ?? res.body ?? []).filter((m) => m.role === 'assistant').at(-1);
  check('a reload holds the reason and none of the retracted text', res.status === 200 && reloaded &&
    !JSON.stringify(reloaded).includes('4711') && reloaded.parts.some((p) => p.type === 'data-guardrail'), res.body);
}

try {
  await guarded();
  await approve('approve');
  await approve('deny');
  if (major !== 5) await elsewhere();
  await reconnectMidTurn();
  await stop();
  console.log(`ai@${major} (header ${header}): ok`);
} catch (e) {
  console.error(`ai@${major} (header ${header}): FAIL: ${e?.stack ?? e}`);
  process.exit(1);
}
