// The console: a sessions list (#/) and a session page (#/s/<id>), both
// built from the operator API. Nothing here is trusted more than any other
// caller: the API decides what this identity may see and do.

import { call, stream, token, setToken, APIError, AuthError, sessionPath } from './api.js';
import { el, json, ago, time, badge } from './dom.js';
import { TurnView } from './turn.js';
import { renderWaterfall } from './waterfall.js';

const main = document.getElementById('main');
// The skip link moves focus to the page's content; the routes live in the
// hash, so it must not change it.
document.getElementById('skip').addEventListener('click', ev => { ev.preventDefault(); main.focus(); });
// announce tells a screen reader of a change it would not otherwise hear.
const announce = text => { document.getElementById('announce').textContent = text; };
let view = null; // the AbortController of the page on screen

function route() {
  view?.abort();
  view = new AbortController();
  renderAuth();
  const m = location.hash.match(/^#\/s\/(.+)$/);
  const page = m ? sessionPage(decodeURIComponent(m[1]), view.signal) : listPage(view.signal);
  page.catch(e => failed(e, view.signal));
}

function failed(e, signal) {
  if (signal.aborted && e.name === 'AbortError') return;
  if (e instanceof AuthError) return signIn(e.message);
  main.replaceChildren(el('p', { class: 'error', id: 'failure' }, e.message));
}

function renderAuth() {
  const box = document.getElementById('auth');
  box.replaceChildren();
  if (token()) {
    box.append(el('span', { class: 'muted' }, 'signed in with a token'),
      el('button', { id: 'signout', onclick: () => { setToken(''); route(); } }, 'Sign out'));
  }
}

// signIn asks for a JWT from the identity provider that the API's
// authorizer trusts; it is kept in sessionStorage for this tab only.
function signIn(why) {
  const input = el('textarea', { id: 'token', rows: 4, placeholder: 'eyJhbGciOi…', autocomplete: 'off', spellcheck: 'false' });
  const form = el('form', { class: 'card', id: 'signin', onsubmit: ev => {
    ev.preventDefault();
    const t = input.value.trim().replace(/^Bearer\s+/i, '');
    if (t) { setToken(t); route(); }
  } },
  el('h1', {}, 'Sign in'),
  el('p', {}, 'The operator API wants a token (', why, '). Paste a JWT (an ID or access token) from your identity provider, issued for this API\'s audience. It is kept in this tab only.'),
  el('label', { for: 'token' }, 'Token'), input, el('div', { class: 'row' }, el('button', { class: 'primary', type: 'submit' }, 'Sign in')));
  main.replaceChildren(form);
  input.focus();
}

const every = (ms, signal, fn) => {
  const tick = async () => {
    if (signal.aborted) return;
    try { await fn(); } catch (e) {
      if (signal.aborted) return;
      // A refusal ends the page; a network fault or a 5xx is retried.
      if (e instanceof APIError && e.status < 500) return failed(e, signal);
      console.warn('retrying:', e);
    }
    if (!signal.aborted) setTimeout(tick, ms);
  };
  return tick();
};

const costText = micro => '$' + (micro / 1e6).toFixed(6);
const usageText = u => u ? `${u.inputTokens} in / ${u.outputTokens} out · ${u.steps} steps` + (u.costMicroUSD ? ' · ' + costText(u.costMicroUSD) : '') : '';
const noUsage = { inputTokens: 0, outputTokens: 0, steps: 0 };
const capsText = c => [c?.inputTokens && `${c.inputTokens} input tokens`, c?.outputTokens && `${c.outputTokens} output tokens`,
  c?.cost && `$${c.cost}`].filter(Boolean).join(', ');
// limitText names the spend cap a limit suspension reached (the view's
// turn.limit, a turn.suspended fact's limit).
const limitMeasure = { cost: 'cost', inputTokens: 'input tokens', outputTokens: 'output tokens' };
const limitAmount = (l, v) => l.measure === 'cost' ? `$${Number(v).toFixed(6)}` : String(Math.round(v));
const limitText = l => `the ${l.scope} ${limitMeasure[l.measure] || l.measure} cap of ${limitAmount(l, l.cap)}, at ${limitAmount(l, l.usage)}`;
const statusBadge = (status, cause) => badge(status + (cause ? ': ' + cause : ''), status);

// ---- sessions list ----

async function listPage(signal) {
  const rows = el('tbody');
  const more = el('button', { hidden: true }, 'More');
  // The New session box starts empty and takes the agent of the newest
  // session listed: the console does not know this server's agents.
  let typed = false;
  const agent = el('input', { id: 'agent', placeholder: 'agent name', size: 12, oninput: () => { typed = true; } });
  const note = el('span', { class: 'error' });
  const all = []; // the sessions of the pages loaded, as the listing has them
  const fStatus = el('select', { id: 'filter-status', onchange: () => draw() }, el('option', { value: '' }, 'any status'));
  const fAgent = el('select', { id: 'filter-agent', onchange: () => draw() }, el('option', { value: '' }, 'any agent'));
  const fText = el('input', { id: 'filter-text', type: 'search', placeholder: 'id, agent, status or turn', oninput: () => draw() });
  const shown = el('span', { id: 'filter-count', class: 'muted', 'aria-live': 'polite' });
  main.replaceChildren(
    el('div', { class: 'row' }, el('h1', {}, 'Sessions'),
      el('form', { class: 'row push', onsubmit: async ev => {
        ev.preventDefault();
        try {
          const s = await call('POST', '/sessions', { agent: agent.value.trim() });
          location.hash = '#/s/' + encodeURIComponent(s.id);
        } catch (e) { note.textContent = e.message; }
      } }, note, el('label', { for: 'agent', class: 'sr' }, 'Agent of the new session'), agent, el('button', { type: 'submit' }, 'New session'))),
    el('form', { class: 'row', id: 'filters', role: 'search', onsubmit: ev => ev.preventDefault() },
      el('label', {}, 'Status ', fStatus), el('label', {}, 'Agent ', fAgent), el('label', {}, 'Search ', fText), shown),
    el('table', { id: 'sessions' },
      el('thead', {}, el('tr', {}, ['Session', 'Agent', 'Status', 'Turn', 'Updated', 'Usage'].map(h => el('th', {}, h)))),
      rows),
    more);
  // options keeps a select's choices to the values loaded, and its choice.
  const options = (sel, values) => {
    const have = new Set([...sel.options].map(o => o.value));
    for (const v of [...new Set(values)].sort()) if (!have.has(v)) sel.append(el('option', { value: v }, v));
  };
  const row = s => el('tr', { 'data-id': s.id, 'data-status': s.status, 'data-agent': s.agent },
    el('td', {}, el('a', { href: '#/s/' + encodeURIComponent(s.id), class: 'mono' }, s.id)),
    el('td', {}, s.agent), el('td', {}, statusBadge(s.status, s.cause)),
    el('td', { class: 'mono' }, s.turn || ''), el('td', { title: s.updated }, ago(s.updated)),
    el('td', { class: 'usage muted' }, usageText(s.usage)));
  const matches = s => {
    const q = fText.value.trim().toLowerCase();
    return (!fStatus.value || s.status === fStatus.value) && (!fAgent.value || s.agent === fAgent.value) &&
      (!q || [s.id, s.agent, s.status, s.cause, s.turn].some(v => v && v.toLowerCase().includes(q)));
  };
  const draw = () => {
    const keep = all.filter(matches);
    rows.replaceChildren(...keep.map(row));
    if (!keep.length) rows.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, all.length ? 'No session matches.' : 'No sessions yet.')));
    shown.textContent = all.length === keep.length ? `${all.length} sessions` : `${keep.length} of ${all.length} sessions`;
  };
  let next = '', pages = 1;
  // The listing carries each session's usage: one request per page, none
  // per row.
  const load = async (cursor, replace) => {
    const q = '/sessions?limit=25' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    const page = await call('GET', q, undefined, signal);
    if (replace) all.length = 0;
    all.push(...page.sessions);
    options(fStatus, all.map(s => s.status));
    options(fAgent, all.map(s => s.agent));
    if (!agent.value && !typed && all.length) {
      agent.value = all.reduce((a, b) => (b.created > a.created ? b : a)).agent;
    }
    draw();
    next = page.next;
    more.hidden = !next;
  };
  more.onclick = () => { pages++; load(next, false).catch(e => failed(e, signal)); };
  // Refresh the first page while it is the only one shown.
  await every(5000, signal, () => pages > 1 ? null : load('', true));
}

// ---- session page ----

async function sessionPage(id, signal) {
  const $ = {
    status: el('span', { id: 'status', role: 'status', 'aria-live': 'polite' }),
    facts: el('div', { class: 'facts' }),
    actions: el('div', { class: 'row' }),
    approvals: el('div', { id: 'approvals' }),
    callbacks: el('div', { id: 'callbacks' }),
    guardrails: el('div', { id: 'guardrails' }),
    uncertain: el('div', { id: 'uncertain' }),
    limit: el('div', { id: 'limit' }),
    timer: el('div', { id: 'timer' }),
    claims: el('div', { id: 'claims' }),
    schedule: el('div', { id: 'schedule' }),
    turnHead: el('div', { class: 'row muted' }),
    goBack: el('div', { id: 'goback' }),
    turns: el('ul', { id: 'turns', 'aria-label': 'Turns of this session' }),
    turn: el('div', { id: 'turn', 'aria-live': 'polite', 'aria-relevant': 'additions text' }),
    waterfall: el('div', { id: 'waterfall' }),
    parts: el('details', { id: 'parts' }),
    timeline: el('ol', { id: 'timeline' }),
  };
  const msg = el('input', { id: 'message', class: 'reason', placeholder: 'Send the session a message' });
  const msgNote = el('span', { class: 'error' });
  main.replaceChildren(
    el('div', { class: 'row' }, el('h1', { class: 'mono' }, id), $.status),
    el('div', { class: 'card' }, $.facts),
    $.actions,
    $.approvals, $.callbacks, $.guardrails, $.uncertain, $.limit, $.timer, $.claims,
    el('div', { class: 'split' },
      el('div', {}, el('h2', {}, 'Turns'), $.turns, $.turnHead, $.goBack, $.turn,
        el('form', { class: 'row', onsubmit: async ev => {
          ev.preventDefault();
          if (!msg.value.trim()) return;
          try { await call('POST', sessionPath(id, '/messages'), { text: msg.value }); msg.value = ''; msgNote.textContent = ''; refresh(); } catch (e) { msgNote.textContent = e.message; }
        } }, el('label', { for: 'message', class: 'sr' }, 'Message'), msg, el('button', { type: 'submit' }, 'Send'), msgNote),
        el('h2', {}, 'Step times'), $.waterfall, $.parts),
      el('div', {}, el('h2', {}, 'Schedule'), $.schedule, el('h2', {}, 'Timeline'), $.timeline)));

  let lastSeq = 0, shown = '', live = null, tv = null, pinned = '', lastStatus = '';
  const turns = []; // turn ids, in order of their turn.started facts
  const facts = []; // every fact read, in order

  // The turns, each a button that shows it; the latest is followed live.
  const renderTurns = () => {
    if ($.turns.children.length === turns.length && $.turns.dataset.shown === shown) return;
    $.turns.dataset.shown = shown;
    $.turns.replaceChildren(...turns.map((t, i) => el('li', {}, el('button', { type: 'button', 'data-turn': t,
      'aria-current': t === shown ? 'true' : 'false', title: t,
      onclick: () => { pinned = i === turns.length - 1 ? '' : t; showTurn(t); renderTurns(); } }, `Turn ${i + 1}`))));
  };

  // The stream's parts, each as its JSON, filled in while open.
  const partLine = p => el('pre', { class: 'part' }, JSON.stringify(p));
  const renderParts = () => {
    $.parts.replaceChildren(el('summary', {}, `Stream parts (${tv.parts.length}) as JSON`),
      ...($.parts.open ? tv.parts.map(partLine) : []));
  };
  $.parts.addEventListener('toggle', () => tv && renderParts());

  const showTurn = t => {
    if (t === shown) return;
    shown = t;
    live?.abort();
    live = new AbortController();
    signal.addEventListener('abort', () => live.abort(), { once: true });
    $.turn.replaceChildren();
    $.turnHead.replaceChildren(el('span', { class: 'mono' }, t));
    $.goBack.replaceChildren(goBack(t));
    tv = new TurnView($.turn);
    tv.onPart = p => {
      if ($.parts.open) $.parts.append(partLine(p));
      $.parts.firstElementChild.textContent = `Stream parts (${tv.parts.length}) as JSON`;
    };
    renderParts();
    stream(id, t, p => tv.add(p), live.signal).catch(e => {
      if (!live.signal.aborted) $.turn.append(el('div', { class: 'marker bad' }, 'Stream: ' + e.message));
    });
  };

  const turnEnded = t => facts.some(f => f.turn === t && ['turn.completed', 'turn.failed', 'turn.cancelled', 'turn.interrupted'].includes(f.type));
  // Going back to a turn: fork a new session from its end, rewind this
  // one to its end, or answer its messages again (a regenerate). Each
  // lists the side effects after the point, which it does not undo.
  const goBack = t => {
    const note = el('span', { class: 'muted', id: 'goback-note' });
    const run = (btn, path, point, fork) => async () => {
      btn.disabled = true;
      note.textContent = '';
      try {
        const r = await call('POST', sessionPath(id, path), point);
        const effects = r.effects.map(e => `${e.tool} ${e.execution}${e.completed ? '' : ' (may not have happened)'}`).join(', ');
        note.textContent = effects ? 'Side effects after that point, not undone: ' + effects : 'No side effect ran after that point.';
        if (fork) location.hash = '#/s/' + encodeURIComponent(r.session);
        else await refresh();
      } catch (e) { note.textContent = e.message; note.className = 'error'; }
      btn.disabled = false;
    };
    const b = (label, bid, title) => el('button', { type: 'button', id: bid, title }, label);
    const fork = b('Fork from here', 'fork-turn', 'a new session holding the conversation as this turn ended');
    const rewind = b('Go back to here', 'rewind-turn', 'this session continues from the end of this turn; later turns stay in the timeline');
    const again = b('Answer again', 'regenerate-turn', 'go back to the start of this turn and answer its messages afresh');
    fork.onclick = run(fork, '/fork', { turn: t }, true);
    rewind.onclick = run(rewind, '/rewind', { turn: t }, false);
    again.onclick = run(again, '/rewind', { turn: t, step: 0 }, false);
    const box = el('span', { class: 'row goback' }, fork, rewind, again, note);
    box.hidden = !turnEnded(t);
    box.dataset.turn = t;
    return box;
  };

  const act = async (btn, note, method, path, body) => {
    btn.disabled = true;
    note.textContent = '';
    try { await call(method, path, body); await refresh(); } catch (e) {
      note.textContent = e.message;
      btn.disabled = false;
    }
  };

  const renderState = s => {
    const st = s.status + (s.turn?.cause ? ': ' + s.turn.cause : '');
    if (st !== lastStatus) {
      $.status.replaceChildren(statusBadge(s.status, s.turn?.cause));
      if (lastStatus) announce('Session ' + st);
      lastStatus = st;
    }
    const f = (k, v) => el('div', {}, el('span', {}, k), v);
    $.facts.replaceChildren(
      f('Agent', s.agent), f('Turns', String(s.turns)),
      ...(s.from ? [f('Forked from', el('a', { href: '#/s/' + encodeURIComponent(s.from), class: 'mono', id: 'from-link' }, s.from))] : []),
      ...(s.parent ? [f('Parent', el('a', { href: '#/s/' + encodeURIComponent(s.parent.session), class: 'mono', id: 'parent-link' }, s.parent.session))] : []),
      f('Usage', el('span', { id: 'usage', title: s.usageStale ? 'the running turn\'s stream could not be read: its steps as its last suspension recorded them' : '' },
        usageText(s.usage) + (s.usageStale ? ' (as last recorded)' : ''))),
      ...(s.turn ? [f('Turn usage', el('span', { id: 'turn-usage' }, usageText(s.turn.usage || noUsage)))] : []),
      ...(s.compactions ? [f('Compactions', el('span', { id: 'compactions', title: 'older turns summarised to keep the model input within the agent\'s budget' }, String(s.compactions)))] : []),
      ...(s.turn?.version?.fingerprint ? [f('Turn version', el('span', { id: 'turn-version', class: s.turn.changed ? 'error' : 'mono',
        title: 'the agent\'s fingerprint and the build the turn started on' + (s.turn.changed ? '; it resumed on a changed agent' : '') },
        `${s.turn.version.fingerprint} · build ${s.turn.version.build}` +
        (s.turn.changed ? ` → resumed on a changed agent ${s.turn.latest.fingerprint} · build ${s.turn.latest.build}` : '') +
        onChangeText(s.turn)))] : []),
      ...((s.stale || []).map((c, i) => f('Stale call', el('span', { class: 'error', id: 'stale-' + i,
        title: 'a call the turn had waiting that a deploy changed under it' },
        `${c.tool} (${c.toolCallId}): ${staleText(c)}`)))),
      ...(capsText(s.caps) ? [f('Session caps', capsText(s.caps))] : []),
      ...(capsText(s.turn?.caps) ? [f('Turn caps', capsText(s.turn.caps))] : []),
      f('Inbox', String(s.inbox)), f('Updated', el('span', { title: s.updated }, ago(s.updated))),
      f('Last fact', `#${s.lastSeq} ${s.last || ''}`),
      ...(s.lastFailure ? [f('Last failure', el('span', { class: 'error' }, `${s.lastFailure.kind}: ${s.lastFailure.error}`))] : []));
    // Cancel: only while a turn is open.
    if (s.turn && !$.actions.querySelector('#cancel')) {
      const reason = el('input', { class: 'reason', id: 'cancel-reason', placeholder: 'reason for cancelling (optional)', 'aria-label': 'Reason for cancelling the turn' });
      const note = el('span', { class: 'error' });
      const btn = el('button', { class: 'danger', id: 'cancel' }, 'Cancel turn');
      btn.onclick = () => act(btn, note, 'POST', sessionPath(id, '/cancel'), { reason: reason.value });
      $.actions.replaceChildren(reason, btn, note);
    } else if (!s.turn) {
      $.actions.replaceChildren();
    }
    // Approvals: add new cards, drop answered ones, keep typed reasons.
    const pending = new Set(s.pending.map(p => p.approvalId));
    for (const c of [...$.approvals.children]) if (c.dataset.approval !== undefined && !pending.has(c.dataset.approval)) c.remove();
    for (const p of s.pending) {
      if ($.approvals.querySelector(`[data-approval="${CSS.escape(p.approvalId)}"]`)) continue;
      const reason = el('input', { class: 'reason', placeholder: 'reason (optional; the model sees it)', 'aria-label': `Reason for answering ${p.tool} (the model sees it)` });
      const note = el('span', { class: 'error' });
      const path = sessionPath(id, '/approvals/' + encodeURIComponent(p.approvalId));
      const answer = decision => ev => act(ev.target, note, 'POST', path, { decision, reason: reason.value });
      // Edit the input, or answer the call by hand: the JSON typed here.
      const typed = (area, key, decision) => ev => {
        let v;
        try { v = JSON.parse(area.value); } catch (e) { note.textContent = 'not JSON: ' + e.message; return; }
        act(ev.target, note, 'POST', path, { decision, [key]: v, reason: reason.value });
      };
      const input = el('textarea', { class: 'edit-input mono', rows: 6, 'aria-label': `Input to run ${p.tool} with` });
      input.value = JSON.stringify(p.input, null, 2);
      const output = el('textarea', { class: 'respond-output mono', rows: 3, placeholder: '{"result": "..."}', 'aria-label': `Result the model gets for ${p.tool}` });
      $.approvals.append(el('div', { class: 'card attention approval', 'data-approval': p.approvalId },
        el('div', { class: 'row' }, el('strong', {}, 'Approval needed: ' + p.tool), el('span', { class: 'muted mono' }, p.toolCallId),
          p.expires ? el('span', { class: 'muted' }, 'expires ' + new Date(p.expires).toLocaleString()) : null),
        el('pre', {}, json(p.input)),
        el('div', { class: 'row' }, reason,
          el('button', { class: 'approve', onclick: answer('approve') }, 'Approve'),
          el('button', { class: 'deny', onclick: answer('deny') }, 'Deny'), note),
        el('details', { class: 'edit' }, el('summary', {}, 'Edit the input, or answer by hand'),
          el('div', { class: 'muted' }, 'Run the tool with this input instead (its schema and rules check it again):'), input,
          el('div', { class: 'row' }, el('button', { class: 'edit', onclick: typed(input, 'input', 'edit') }, 'Approve as edited')),
          el('div', { class: 'muted' }, 'Or give the model this result; the tool never runs:'), output,
          el('div', { class: 'row' }, el('button', { class: 'respond', onclick: typed(output, 'output', 'respond') }, 'Answer by hand')))));
    }
    // Approvals pending in the open turn's child sessions, or deeper down
    // the chain: each links to the session that asked, where it is
    // answered (or answer it in the parent's chat).
    for (const c of [...$.approvals.querySelectorAll('[data-child-approval]')]) {
      if (!(s.childPending || []).some(p => p.approvalId === c.dataset.childApproval)) c.remove();
    }
    for (const p of s.childPending || []) {
      if ($.approvals.querySelector(`[data-child-approval="${CSS.escape(p.approvalId)}"]`)) continue;
      $.approvals.append(el('div', { class: 'card attention child-approval', 'data-child-approval': p.approvalId },
        el('div', { class: 'row' }, el('strong', {}, 'A child session needs an approval: ' + p.tool),
          el('a', { href: '#/s/' + encodeURIComponent(p.session || p.child), class: 'mono child-link' }, p.session || p.child))));
    }
    // The uncertain execution.
    const u = s.uncertain;
    if (u) tv?.uncertain(u.toolCallId);
    const card = $.uncertain.firstElementChild;
    if (!u) $.uncertain.replaceChildren();
    else if (card?.dataset.execution !== u.executionId) {
      const note = el('span', { class: 'error' });
      const settle = verdict => ev => act(ev.target, note, 'POST', sessionPath(id, '/executions/' + encodeURIComponent(u.executionId)), { verdict });
      $.uncertain.replaceChildren(el('div', { class: 'card attention execution', 'data-execution': u.executionId },
        el('div', { class: 'row' }, el('strong', {}, 'Uncertain execution: ' + u.tool),
          el('span', { class: 'muted mono' }, u.toolCallId), u.attempt > 1 ? el('span', { class: 'muted' }, 'attempt ' + u.attempt) : null),
        el('p', {}, `The invocation stopped while ${u.tool} was running: it may or may not have happened. `,
          'Rerun it once more (', u.idempotent ? 'idempotent' : 'not idempotent', '), or abandon it: the model is told its outcome is unknown.'),
        el('div', { class: 'row' },
          el('button', { class: 'primary rerun', onclick: settle('rerun') }, 'Rerun'),
          el('button', { class: 'abandon', onclick: settle('abandon') }, 'Abandon'), note)));
    }

    renderCallbacks(s);
    renderLimit(s);
    renderTimer(s);
    renderSchedule(s);
    renderClaims(s);
  };

  // Calls waiting for their callback: an outside system holds each one's
  // token; the owner completes it by hand (no token needed) with a result
  // or an error the model sees. Cards stay while their call waits, what
  // was typed in them kept; a heartbeat moves the deadline in place.
  const callbackTimes = cb => 'deadline ' + new Date(cb.deadline).toLocaleString() +
    (cb.beat ? ', last heartbeat ' + ago(cb.beat) : ', no heartbeat yet');
  const renderCallbacks = s => {
    const waiting = s.callbacks || [];
    for (const c of [...$.callbacks.children]) if (!waiting.some(cb => cb.toolCallId === c.dataset.callback)) c.remove();
    for (const cb of waiting) {
      const shown = $.callbacks.querySelector(`[data-callback="${CSS.escape(cb.toolCallId)}"]`);
      if (shown) { shown.querySelector('.callback-times').textContent = callbackTimes(cb); continue; }
      const path = sessionPath(id, '/callbacks/' + encodeURIComponent(cb.toolCallId));
      const note = el('span', { class: 'error' });
      const reason = el('input', { class: 'reason callback-reason', placeholder: 'reason (optional; recorded with it)', 'aria-label': `Reason for completing ${cb.tool} by hand` });
      const output = el('textarea', { class: 'callback-output mono', rows: 3, placeholder: '{"result": "..."}', 'aria-label': `Result the model gets for ${cb.tool}` });
      const error = el('input', { class: 'reason callback-error', placeholder: 'error the model sees', 'aria-label': `Error the model gets for ${cb.tool}` });
      const complete = ev => {
        let v;
        try { v = JSON.parse(output.value); } catch (e) { note.textContent = 'not JSON: ' + e.message; return; }
        act(ev.target, note, 'POST', path, { output: v, reason: reason.value });
      };
      const fail = ev => {
        if (!error.value.trim()) { note.textContent = 'Enter the error the model sees.'; return; }
        act(ev.target, note, 'POST', path, { error: error.value, reason: reason.value });
      };
      $.callbacks.append(el('div', { class: 'card attention callback', 'data-callback': cb.toolCallId },
        el('div', { class: 'row' }, el('strong', {}, 'Waiting for a callback: ' + cb.tool), el('span', { class: 'muted mono' }, cb.toolCallId),
          el('span', { class: 'muted callback-times' }, callbackTimes(cb))),
        el('p', {}, 'An outside system holds this call\'s token and completes it when it is done. Complete it by hand instead: ',
          'the model gets this result, or the error below, and the token is used up.'),
        output,
        el('div', { class: 'row' }, reason, el('button', { class: 'primary callback-complete', onclick: complete }, 'Complete by hand')),
        el('div', { class: 'row' }, error, el('button', { class: 'deny callback-fail', onclick: fail }, 'Fail the call'), note)));
    }
  };

  // Resource claims: the grants the session's calls hold (quarantined ones
  // wait for a verdict) and what a blocked turn waits for.
  const claimText = c => `${c.namespace}${c.instance ? '@' + c.instance : ''}:${c.key} (${c.access})`;
  const renderClaims = s => {
    const grants = s.grants || [];
    const b = s.blocked;
    if (!grants.length && !b) { $.claims.replaceChildren(); return; }
    const key = JSON.stringify([s.turn?.id, grants, b]);
    if ($.claims.firstElementChild?.dataset.key === key) return; // keep the card shown, and its notes
    $.claims.replaceChildren(el('div', { class: 'card claims' + (b || grants.some(g => g.quarantined) ? ' attention' : ''), 'data-key': key },
      el('strong', {}, 'Resource claims'),
      ...grants.map(g => {
        // A grant its ended turn left (cancelled mid-effect) waits for an
        // operator to say its effect is over.
        const ended = s.turn?.id !== g.turn;
        const note = el('span', { class: 'error' });
        const release = ev => act(ev.target, note, 'POST', sessionPath(id, '/grants/' + encodeURIComponent(g.id) + '/release'), {});
        return el('div', { class: 'row grant', 'data-grant': g.id },
          el('span', { class: 'mono' }, g.id), el('span', {}, g.quarantined ? 'quarantined' + (ended ? '' : ' until a verdict') : 'held'),
          el('span', { class: 'muted' }, g.claims.map(claimText).join(', ')),
          ended ? el('button', { class: 'release', onclick: release }, 'Release') : null, note);
      }),
      b ? el('p', { class: 'blocked' }, `${b.outcome === 'over-capacity' ? 'Over capacity' : 'Blocked'}: ${b.tool} needs ${b.claims.map(claimText).join(', ')}, held by `,
        (b.blockers || []).map(g => g.opaque ? 'a grant of another owner' : `${g.id} of session ${g.session}${g.quarantined ? ' (quarantined)' : ''}`).join(', ') || 'nobody',
        b.ahead ? `; ${b.ahead} earlier waiter(s) go first` : '') : null));
  };

  // keyed shows in box the card build makes for key, keeping the one shown
  // (and what was typed into it) while the key stays; no key empties box.
  const keyed = (box, key, build) => {
    if (!key) box.replaceChildren();
    else if (box.firstElementChild?.dataset.key !== key) box.replaceChildren(build(key));
  };
  const suspendedFor = (s, cause) => s.status === 'suspended' && s.turn?.cause === cause;

  // A turn suspended at a spend cap: raise caps (empty fields keep theirs).
  const renderLimit = s => keyed($.limit, suspendedFor(s, 'limit') ? `${s.turn.id} ${s.turn.since}` : '', key => {
    const num = (name, placeholder) => el('input', { id: 'raise-' + name, type: 'number', min: '0', step: 'any', placeholder, size: 9 });
    const inputs = {
      turn: { cost: num('turn-cost', 'USD'), inputTokens: num('turn-input-tokens', 'tokens'), outputTokens: num('turn-output-tokens', 'tokens') },
      session: { cost: num('session-cost', 'USD'), inputTokens: num('session-input-tokens', 'tokens'), outputTokens: num('session-output-tokens', 'tokens') },
    };
    const note = el('span', { class: 'error' });
    const btn = el('button', { class: 'primary', id: 'raise' }, 'Raise caps');
    btn.onclick = () => {
      const body = {};
      for (const [scope, fields] of Object.entries(inputs)) {
        for (const [k, input] of Object.entries(fields)) {
          if (input.value !== '') (body[scope] ||= {})[k] = Number(input.value);
        }
      }
      if (!body.turn && !body.session) { note.textContent = 'Enter a cap to raise.'; return; }
      act(btn, note, 'POST', sessionPath(id, '/limits'), body);
    };
    const line = (label, f) => el('div', { class: 'row' }, el('strong', {}, label),
      el('label', {}, 'cost ', f.cost), el('label', {}, 'input tokens ', f.inputTokens), el('label', {}, 'output tokens ', f.outputTokens));
    const caps = [capsText(s.turn.caps) && 'turn: ' + capsText(s.turn.caps), capsText(s.caps) && 'session: ' + capsText(s.caps)].filter(Boolean).join('; ');
    // The cap the turn reached: only raising it past the usage lets the
    // turn go on (the API refuses any other raise).
    const l = s.turn.limit;
    const named = l && inputs[l.scope]?.[l.measure];
    if (named) { named.classList.add('named'); named.placeholder = 'over ' + limitAmount(l, l.usage).replace('$', ''); }
    return el('div', { class: 'card attention limit', 'data-key': key },
      el('div', { class: 'row' }, el('strong', {}, 'Suspended at a spend cap')),
      ...(l ? [el('p', { id: 'limit-cap' }, `The turn reached ${limitText(l)}. Raise the ${l.scope} ${limitMeasure[l.measure] || l.measure} cap past ${limitAmount(l, l.usage)} to resume it.`)] : []),
      el('p', {}, `The turn has used ${usageText(s.turn.usage || noUsage)}; the session ${usageText(s.usage)}.`,
        caps ? ` Raised caps so far: ${caps}.` : '', ' Raise a cap to resume the turn (empty fields keep their cap), or cancel it.'),
      line('Turn', inputs.turn), line('Session', inputs.session), el('div', { class: 'row' }, btn, note));
  });

  // A turn waiting on a timer (wait_until): wake it now, or move its end.
  const renderTimer = s => keyed($.timer, suspendedFor(s, 'timer') ? `${s.turn.id} ${s.turn.wake}` : '', key => {
    const at = el('input', { id: 'timer-at', type: 'datetime-local' });
    const note = el('span', { class: 'error' });
    const now = el('button', { class: 'primary', id: 'timer-now' }, 'Wake now');
    now.onclick = () => act(now, note, 'POST', sessionPath(id, '/wake'), {});
    const move = el('button', { id: 'timer-move' }, 'Move');
    move.onclick = () => {
      const t = new Date(at.value); // a datetime-local value is local time
      if (!at.value || isNaN(t)) { note.textContent = 'Pick a date and time.'; return; }
      act(move, note, 'POST', sessionPath(id, '/wake'), { at: t.toISOString() });
    };
    return el('div', { class: 'card attention timer', 'data-key': key },
      el('div', { class: 'row' }, el('strong', {}, 'Waiting on a timer'),
        el('span', { id: 'timer-ends', title: s.turn.wake }, 'until ' + new Date(s.turn.wake).toLocaleString())),
      el('div', { class: 'row' }, now, el('label', {}, 'or end it at ', at), move, note));
  });

  // The schedule: what it posts and when, and an editor.
  const renderSchedule = s => {
    const sc = s.schedule;
    keyed($.schedule, sc ? JSON.stringify([sc.cron, sc.text, sc.next]) : 'none', key => {
      const cron = el('input', { id: 'schedule-cron', class: 'mono', placeholder: 'M H DoM Mon DoW (UTC)', value: sc?.cron || '', size: 16 });
      const text = el('input', { id: 'schedule-text', class: 'reason', placeholder: 'message to post', value: sc?.text || '' });
      const note = el('span', { class: 'error' });
      const save = el('button', { class: 'primary', id: 'schedule-save' }, sc ? 'Replace' : 'Set schedule');
      save.onclick = () => act(save, note, 'PUT', sessionPath(id, '/schedule'), { cron: cron.value.trim(), text: text.value })
        .then(() => { save.disabled = false; });
      const clear = sc ? el('button', { class: 'danger', id: 'schedule-clear' }, 'Clear') : null;
      if (clear) clear.onclick = () => act(clear, note, 'DELETE', sessionPath(id, '/schedule'));
      return el('div', { class: 'card', 'data-key': key },
        el('p', { id: 'schedule-now' }, sc
          ? [el('span', { class: 'mono' }, sc.cron), ' (UTC) posts “', sc.text, '”', sc.next ? el('span', { title: sc.next }, ' · next ' + new Date(sc.next).toLocaleString()) : '']
          : el('span', { class: 'muted' }, 'No schedule.')),
        el('div', { class: 'row' }, el('label', {}, 'Cron ', cron), el('label', { class: 'reason row' }, 'Message ', text)), el('div', { class: 'row' }, save, clear, note));
    });
  };

  // Every guardrail decision of the session, newest first: the ones that
  // did something stand out.
  const renderGuardrails = () => {
    const ds = facts.filter(f => f.type === 'guardrail.decided').reverse();
    $.guardrails.replaceChildren(ds.length === 0 ? '' : el('div', { class: 'card' }, el('h2', {}, 'Guardrails'),
      el('table', { class: 'guardrails' },
        el('tr', {}, ...['#', 'Guardrail', 'Stage', 'Decision', 'Reason'].map(h => el('th', {}, h))),
        ...ds.map(f => {
          const g = f.guard || {};
          return el('tr', { 'data-action': g.action, class: g.action === 'allow' ? 'muted' : '' },
            el('td', { class: 'muted' }, '#' + f.seq), el('td', { class: 'mono' }, g.guardrail),
            el('td', {}, g.stage === 'output' ? `output (step ${g.step ?? 0})` : 'input'),
            el('td', {}, el('strong', {}, g.action)),
            el('td', {}, (g.reason || '') + (g.error ? ` (failed: ${g.error})` : '')));
        }))));
  };

  const addFacts = fs => {
    for (const f of fs) {
      lastSeq = Math.max(lastSeq, f.seq);
      facts.push(f);
      if (f.type === 'turn.started') turns.push(f.turn);
      if (f.type === 'session.rewound' && f.rewind?.turn) turns.push(f.rewind.turn.id);
      $.timeline.prepend(el('li', { 'data-type': f.type, 'data-seq': f.seq },
        el('span', { class: 'muted' }, '#' + f.seq), el('span', { class: 'muted', title: f.time }, time(f.time)),
        el('strong', {}, f.type), el('span', {}, describe(f)),
        el('details', { class: 'raw' }, el('summary', {}, 'JSON'), el('pre', {}, json(f)))));
    }
    if (fs.some(f => f.type === 'guardrail.decided')) renderGuardrails();
  };

  const refresh = async () => {
    const [s, fs] = await Promise.all([
      call('GET', sessionPath(id), undefined, signal),
      call('GET', sessionPath(id, '/facts?after=' + lastSeq), undefined, signal),
    ]);
    addFacts(fs.facts);
    renderState(s);
    const t = pinned || s.turn?.id || turns[turns.length - 1];
    if (t) showTurn(t);
    for (const b of $.goBack.querySelectorAll('.goback')) b.hidden = !turnEnded(b.dataset.turn);
    renderTurns();
    if (tv) renderWaterfall($.waterfall, tv.steps, facts, shown);
    else if (!shown) $.turn.replaceChildren(el('p', { class: 'muted' }, 'No turn yet.'));
  };
  await every(1000, signal, refresh);
}

// onChangeText is the policy a turn runs under when it resumes on a
// changed agent, and what it did (pin: the build it runs on).
function onChangeText(t) {
  const p = t.version?.onChange;
  if (p === 'pin') return ` · policy pin: runs on build ${t.version.build}`;
  if (p === 'fail') return ' · policy fail';
  return t.changed ? ' · policy continue: runs on the new definition' : '';
}

// staleText says what became of a call a deploy made stale.
function staleText(c) {
  switch (c.cause) {
    case 'removed': return `its tool is gone; not run, the model got: ${c.detail}`;
    case 'schema': return `its input no longer fits the tool's schema; not run, the model got: ${c.detail}`;
    case 'changed': return `its tool changed since it was approved; ${c.detail}`;
  }
  return `${c.cause}: ${c.detail || ''}`;
}

function describe(f) {
  const who = f.actor ? `${f.actor.kind}${f.actor.kind === 'operator' ? ' ' + f.actor.id : ''}` : '';
  const parts = [];
  switch (f.type) {
    case 'session.created': parts.push(`agent ${f.agent}, owner ${f.owner}`); break;
    case 'message.received': parts.push(`“${f.message?.text ?? ''}”` + (f.message?.delivery && f.message.delivery !== 'enqueue' ? ` (${f.message.delivery})` : '')); break;
    case 'turn.suspended': parts.push(f.cause + (f.execution ? ` on ${f.execution.tool}` : '') + (f.limit ? `: ${limitText(f.limit)}` : '') +
      (f.block ? ` on ${f.block.tool}, by ${(f.block.blockers || []).length} grant(s)` : '')); break;
    case 'approval.requested': parts.push(`${f.approval?.tool}`); break;
    case 'approval.answered': parts.push(`${f.answer?.decision}${f.answer?.reason ? ': ' + f.answer.reason : ''}`); break;
    case 'execution.started': parts.push(`${f.execution?.tool}${f.execution?.idempotent ? ' (idempotent)' : ''}`); break;
    case 'execution.verdict': parts.push(`${f.settled?.verdict}`); break;
    case 'claim.granted': case 'claim.released': case 'claim.quarantined':
      parts.push((f.grant?.claims || []).map(c => `${c.namespace}${c.instance ? '@' + c.instance : ''}:${c.key} (${c.access})`).join(', ')); break;
    case 'turn.completed': case 'turn.cancelled': case 'turn.interrupted': parts.push(usageText(f.usage)); if (f.reason) parts.push(f.reason); break;
    case 'turn.failed': parts.push(f.failure ? `${f.failure.kind}: ${f.failure.error}` : ''); break;
    case 'limits.raised': parts.push([capsText(f.raise?.turn) && 'turn: ' + capsText(f.raise.turn), capsText(f.raise?.session) && 'session: ' + capsText(f.raise.session)].filter(Boolean).join('; ')); break;
    case 'timer.set': parts.push('ends ' + new Date(f.wake).toLocaleString()); break;
    case 'schedule.set': parts.push(`${f.schedule?.cron}: “${f.schedule?.text ?? ''}”`); break;
    case 'context.compacted': parts.push(`${f.compaction?.turns} turns summarised, ${f.compaction?.before} → ${f.compaction?.after} input tokens`); break;
    case 'usage.recorded': parts.push(usageText(f.usage) + ' billed after the turn ended'); break;
    case 'session.rewound': {
      const r = f.rewind || {}, p = r.point || {};
      parts.push((r.from ? `forked from ${r.from} at ` : 'back to ') +
        (p.before ? `before turn ${p.before}` : p.step !== undefined ? `turn ${p.turn} after step ${p.step}` : `the end of turn ${p.turn}`));
      if ((r.effects || []).length) parts.push(`${r.effects.length} side effect(s) after it, not undone`);
      break;
    }
    case 'message.steered': parts.push(`${(f.steered || []).length} message(s) steered in`); break;
    case 'turn.started': case 'turn.resumed':
      if (f.version) parts.push(`agent ${f.version.fingerprint}, build ${f.version.build}`);
      break;
    case 'call.stale':
      for (const c of f.stale || []) parts.push(`${c.tool} (${c.toolCallId}): ${c.cause}`);
      break;
    case 'guardrail.decided': {
      const g = f.guard || {};
      parts.push(`${g.guardrail} (${g.stage}${g.stage === 'output' ? ' step ' + (g.step ?? 0) : ''}): ${g.action}` +
        (g.reason ? ' — ' + g.reason : '') + (g.error ? ` [failed: ${g.error}]` : '') + (g.approval ? ` [approval ${g.approval}]` : ''));
      break;
    }
    case 'callback.opened': parts.push(`${f.callback?.tool || ''} ${f.callback?.toolCallId || ''}`); break;
    case 'callback.ended': parts.push(`${f.callback?.status}${f.callback?.error ? ': ' + f.callback.error : ''}${f.reason ? ' (' + f.reason + ')' : ''}`); break;
  }
  if (f.turn && f.type.startsWith('turn.')) parts.push(f.turn);
  parts.push(who);
  return parts.filter(Boolean).join(' · ');
}

window.addEventListener('hashchange', route);
route();
