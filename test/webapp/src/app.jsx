// A useChat app as a baton user would write it, for @ai-sdk/react 2, 3
// and 4 (AI SDK 5, 6 and 7): the same source, bundled once per major with
// '@ai-sdk/react' and 'ai' aliased to that major's packages (build.mjs).
//
// Query: ?api=<baton>&chat=<id>&v=<major>&who=<dev-server caller>[&token=<JWT>][&agent=<name>]
//
// A tool's progress (data-progress parts with an id) shows as one element
// per id, updated in place.
//
// What a real app needs beyond the stock transport, all shown here:
// - history: load GET /chat/{id}/messages before mounting useChat, so a
//   reload after a turn shows the reply (and resume: true picks up an open
//   turn's reply without repeating it: history leaves it to the stream);
// - stop: stop() aborts the fetch; POST /chat/{id}/stop stops the turn;
// - major 5 approves through the operator route, then resumes;
// - a response that ends at the server's hold, mid-turn, is resumed;
// - regenerate and edit are the stock calls (window.app.regenerate, edit);
// - a file is the stock file part (window.app.sendFile), shown as an image.
import React, { useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import * as ai from 'ai';

const q = new URLSearchParams(location.search);
const api = q.get('api');
const chatId = q.get('chat');
const major = Number(q.get('v'));
const headers = { 'x-ai-sdk-version': String(major) };
const autoSend = 'lastAssistantMessageIsCompleteWithApprovalResponses';
if (q.get('who')) headers['X-Baton-Operator'] = q.get('who');
if (q.get('token')) headers.Authorization = `Bearer ${q.get('token')}`;

// What the test reads back: when each word first showed, and every error.
window.probe = { loaded: Date.now(), seen: {}, errors: [], statuses: [] };

async function call(method, path, body) {
  const res = await fetch(`${api}${path}`, {
    method,
    headers: body ? { ...headers, 'Content-Type': 'application/json' } : headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

function App() {
  const [initial, setInitial] = useState(null);
  const [failure, setFailure] = useState(null);
  useEffect(() => {
    call('GET', `/chat/${chatId}/messages`).then(
      (r) => (r.status === 200 ? setInitial(r.body) : setFailure(`messages: ${r.status}`)),
      (e) => setFailure(String(e)),
    );
  }, []);
  if (failure) return <p id="error">{failure}</p>;
  if (!initial) return <p id="loading">loading…</p>;
  return <Chat initial={initial} />;
}

function Chat({ initial }) {
  const chat = useChat({
    id: chatId,
    messages: initial,
    resume: true,
    transport: new ai.DefaultChatTransport({ api: `${api}/chat`, headers, body: { agent: q.get('agent') ?? undefined } }),
    sendAutomaticallyWhen: ai[autoSend], // majors 6 and 7; undefined in 5
    onError: (e) => window.probe.errors.push(String(e?.message ?? e)),
    onData: (part) => { window.probe.data = [...(window.probe.data ?? []), part.type]; },
    // A response that ended without a finish while no call waits for a
    // person ended at the server's hold (BATON_HOLD): read on.
    onFinish: ({ message, finishReason, isAbort, isError }) => {
      const waits = message?.parts?.some((p) => p.type.startsWith('tool-') && ['input-available', 'approval-requested'].includes(p.state));
      if (!finishReason && !isAbort && !isError && !waits) {
        window.probe.resumes = (window.probe.resumes ?? 0) + 1;
        window.probe.reading = (window.probe.reading ?? 0) + 1; // until the resume below takes over
        setTimeout(() => resumeRef.current().finally(() => { window.probe.reading -= 1; }), 0);
      }
    },
  });
  const resumeRef = useRef();
  const { messages, status, error } = chat;

  // Stop that stops: abort the fetch, and stop the turn on the server.
  const stop = async () => {
    chat.stop();
    await call('POST', `/chat/${chatId}/stop`);
  };
  const answer = async (part, approved) => {
    if (major >= 6) {
      chat.addToolApprovalResponse({ id: part.approval.id, approved, reason: approved ? undefined : 'not now' });
      return;
    }
    // Major 5 has no approval chunks: answer through the operator route,
    // then read the rest of the turn with the chat's history up to it.
    try {
      const sess = await call('GET', `/sessions/${chatId}`);
      const pending = (sess.body?.pending ?? []).find((p) => p.toolCallId === part.toolCallId);
      const res = await call('POST', `/sessions/${chatId}/approvals/${pending.approvalId}`, { decision: approved ? 'approve' : 'deny' });
      if (res.status !== 202) throw new Error(`approval: ${res.status}`);
    } catch (e) {
      window.probe.errors.push(`answer through the operator route: ${e}`);
      return;
    }
    await resume();
  };
  // resume reads the rest of an open turn: the history up to it, then its
  // stream from the start (a major-5 app after an approval).
  // window.probe.reading counts the resumes under way, so a test sends
  // its next message only once none is (a resume's setMessages would
  // otherwise land on top of the new message).
  const resume = async () => {
    window.probe.reading = (window.probe.reading ?? 0) + 1;
    try {
      const history = await call('GET', `/chat/${chatId}/messages`);
      chat.setMessages(history.body);
      await chat.resumeStream();
    } finally {
      window.probe.reading -= 1;
    }
  };
  resumeRef.current = resume;
  // Regenerate an answer (the last without an id), and edit an earlier
  // user message: the AI SDK's own calls, which baton answers by going back.
  window.app = {
    send: (text) => chat.sendMessage({ text }), stop, resume,
    // A file attached as the AI SDK sends it: a file part with a data URL.
    sendFile: (text, mediaType, url, filename) => chat.sendMessage({ text, files: [{ type: 'file', mediaType, url, filename }] }),
    regenerate: (messageId) => chat.regenerate(messageId ? { messageId } : undefined),
    edit: (messageId, text) => chat.sendMessage({ text, messageId }),
  };

  useEffect(() => {
    window.probe.statuses.push(status);
  }, [status]);
  useEffect(() => {
    const now = Date.now();
    for (const m of messages) {
      for (const p of m.parts) {
        if (p.type !== 'text') continue;
        for (const w of p.text.split(/\s+/)) {
          if (w && !(w in window.probe.seen)) window.probe.seen[w] = now;
        }
      }
    }
  }, [messages]);

  return (
    <main>
      <h1>baton chat · AI SDK {major}</h1>
      <p>chat <code>{chatId}</code> · status <b id="status">{status}</b></p>
      {error && <p id="error">{String(error.message ?? error)}</p>}
      {messages.map((m) => (
        <section key={m.id} className={`msg ${m.role}`} data-role={m.role} data-id={m.id}>
          <b>{m.role}</b>
          {m.parts.map((p, i) => <Part key={i} part={p} answer={answer} />)}
        </section>
      ))}
      <form onSubmit={(e) => { e.preventDefault(); const t = e.target.text.value; e.target.text.value = ''; chat.sendMessage({ text: t }); }}>
        <input name="text" id="text" placeholder="Say something" />
        <button id="send" type="submit">Send</button>
        <button id="stop" type="button" onClick={stop}>Stop</button>
      </form>
    </main>
  );
}

function Part({ part, answer }) {
  if (part.type === 'text') return <p className="text">{part.text}</p>;
  if (part.type === 'reasoning') return <p className="reasoning"><i>{part.text}</i></p>;
  // A file: the history's is a short-lived presigned URL of baton's copy.
  if (part.type === 'file') {
    return part.mediaType?.startsWith('image/')
      ? <img className="file" src={part.url} alt={part.filename ?? 'image'} data-media-type={part.mediaType} />
      : <a className="file" href={part.url} data-media-type={part.mediaType}>{part.filename ?? 'file'}</a>;
  }
  // A tool's data parts (baton.Emit): one element per type and id, which
  // useChat updates in place as later parts of the same id arrive.
  if (part.type.startsWith('data-') && part.data?.of !== undefined) {
    return <div className="data" data-type={part.type} data-id={part.id}>{part.data.done} of {part.data.of}: {part.data.file}</div>;
  }
  if (!part.type.startsWith('tool-')) return null;
  const waiting = part.state === 'approval-requested' || (major === 5 && part.type === 'tool-send_email' && part.state === 'input-available');
  return (
    <div className="tool" data-tool={part.type.slice(5)} data-state={part.state}>
      <code>{part.type.slice(5)}({JSON.stringify(part.input)})</code> — <span className="state">{part.state}</span>
      {waiting && (
        <>
          <button className="approve" onClick={() => answer(part, true)}>Approve</button>
          <button className="deny" onClick={() => answer(part, false)}>Deny</button>
        </>
      )}
    </div>
  );
}

createRoot(document.getElementById('root')).render(<App />);
