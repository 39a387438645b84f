// The operator API, called as any other client calls it. The console is
// served at <base>/console/, so the API is at <base>, behind an API Gateway
// stage prefix as well as at the root.

const TOKEN = 'baton.token';
export const base = location.pathname.replace(/\/console(\/.*)?$/, '');

// APIError is an answer other than 2xx; AuthError is a 401: sign in.
export class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}
export class AuthError extends APIError {}

export const token = () => sessionStorage.getItem(TOKEN) || '';
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN, t); else sessionStorage.removeItem(TOKEN);
}

function headers(extra = {}) {
  const h = { ...extra };
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

const enc = encodeURIComponent;
export const sessionPath = (id, rest = '') => `/sessions/${enc(id)}${rest}`;

async function failure(r, what) {
  const body = await r.json().catch(() => ({}));
  const msg = body.error || `${what}: HTTP ${r.status}`;
  return new (r.status === 401 ? AuthError : APIError)(r.status, msg);
}

// call sends one JSON request and returns the decoded answer.
export async function call(method, path, body, signal) {
  const init = { method, signal, cache: 'no-store', headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const r = await fetch(base + path, init);
  if (!r.ok) throw await failure(r, `${method} ${path}`);
  return r.json();
}

const sleep = (ms, signal) => new Promise(res => {
  const t = setTimeout(res, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); res(); }, { once: true });
});

// stream reads a turn's stream as Server-Sent Events with fetch, so that the
// Authorization header can be sent, and calls onPart(part) for each part.
// It reconnects from the last event's id (Last-Event-ID) whenever the server
// ends an open stream, and resolves once the stream is closed or signal
// aborts.
export async function stream(session, turn, onPart, signal) {
  const path = sessionPath(session, `/turns/${enc(turn)}/stream`);
  let last = '';
  while (!signal.aborted) {
    const h = headers({ Accept: 'text/event-stream' });
    if (last) h['Last-Event-ID'] = last;
    let got = 0, closed = false;
    const began = Date.now();
    try {
      const r = await fetch(base + path, { headers: h, signal, cache: 'no-store' });
      if (!r.ok) throw await failure(r, 'stream');
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev = parseEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
          if (ev.event === 'close') { closed = true; continue; }
          if (!ev.data) continue;
          if (ev.id) last = ev.id;
          got++;
          onPart(JSON.parse(ev.data));
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      // A refusal is final; a broken connection or a 5xx is retried from
      // the last event.
      if (e instanceof APIError && e.status < 500) throw e;
    }
    if (closed) return;
    // A server with no hold answers at once: don't spin.
    if (got === 0 && Date.now() - began < 1000) await sleep(1000, signal);
  }
}

function parseEvent(block) {
  const ev = { event: '', id: '', data: '' };
  for (const line of block.split('\n')) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const field = line.slice(0, i), value = line.slice(i + 1).replace(/^ /, '');
    if (field === 'data') ev.data += (ev.data ? '\n' : '') + value;
    else if (field === 'event' || field === 'id') ev[field] = value;
  }
  return ev;
}
