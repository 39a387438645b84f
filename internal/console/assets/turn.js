// TurnView renders a turn from its stream parts (the AI SDK UI message
// stream protocol, see pkg/streams): steps with their text, reasoning
// (collapsed) and tool calls, abandoned steps marked, and the markers of
// suspensions, resumptions and the turn's end.

import { el, json } from './dom.js';

export class TurnView {
  constructor(root) {
    this.root = root;
    this.step = null;      // the step being streamed, null between steps
    this.blocks = new Map(); // text and reasoning blocks by id
    this.tools = new Map();  // tool cards by toolCallId
    this.approvals = new Map(); // toolCallId by approvalId
    this.ended = false;
    this.parts = [];  // every part, as the stream sent it
    this.steps = [];  // each finished step's message-metadata, in order
    this.onPart = null; // called with each part after it is shown
  }

  // container is the open step, or the turn itself between steps.
  container() { return this.step || this.root; }

  startStep() {
    this.step = el('section', { class: 'step open' });
    this.root.append(this.step);
    this.blocks.clear();
  }

  block(kind, id) {
    const key = kind + ':' + id;
    let b = this.blocks.get(key);
    if (!b) {
      if (kind === 'reasoning') {
        const body = el('div', { class: 'reasoning-text' });
        const d = el('details', { class: 'reasoning' }, el('summary', {}, 'Reasoning'), body);
        this.container().append(d);
        b = body;
      } else {
        b = el('div', { class: 'text' });
        this.container().append(b);
      }
      this.blocks.set(key, b);
    }
    return b;
  }

  tool(id, name) {
    let t = this.tools.get(id);
    if (!t) {
      const state = el('span', { class: 'badge state' }, 'called');
      const out = el('div', { class: 'out' });
      const card = el('div', { class: 'tool', 'data-call': id },
        el('div', { class: 'row' }, el('strong', {}, name || 'tool'), state, el('span', { class: 'muted mono' }, id)),
        el('div', { class: 'in' }), out);
      this.container().append(card);
      t = { card, state, out, input: card.querySelector('.in') };
      this.tools.set(id, t);
    }
    return t;
  }

  // uncertain marks a call whose execution may or may not have happened.
  uncertain(id) {
    const t = this.tools.get(id);
    if (t && t.state.textContent === 'called') this.setState(t, 'uncertain', 'suspended');
  }

  setState(t, text, cls) {
    t.state.textContent = text;
    t.state.className = 'badge state ' + (cls || text);
  }

  marker(text, bad) {
    this.container().append(el('div', { class: 'marker' + (bad ? ' bad' : '') }, text));
  }

  add(p) {
    this.parts.push(p);
    this.show(p);
    this.onPart?.(p);
  }

  show(p) {
    switch (p.type) {
      case 'start': break;
      case 'start-step': this.startStep(); break;
      case 'finish-step':
        this.step?.classList.remove('open');
        this.step = null;
        break;
      case 'reasoning-start': this.block('reasoning', p.id); break;
      case 'reasoning-delta': this.block('reasoning', p.id).append(p.delta || ''); break;
      case 'text-start': this.block('text', p.id); break;
      case 'text-delta': this.block('text', p.id).append(p.delta || ''); break;
      case 'message-metadata': if (p.messageMetadata) this.steps.push(p.messageMetadata); break;
      case 'reasoning-end': case 'text-end': break;
      case 'tool-input-available': {
        const t = this.tool(p.toolCallId, p.toolName);
        t.input.replaceChildren(el('div', { class: 'muted' }, 'input'), el('pre', {}, json(p.input)));
        break;
      }
      case 'tool-approval-request':
        this.approvals.set(p.approvalId, p.toolCallId);
        this.setState(this.tool(p.toolCallId), 'awaiting approval', 'suspended');
        break;
      case 'tool-approval-response': {
        // The response names the approval, not the call.
        const t = this.tool(p.toolCallId || this.approvals.get(p.approvalId));
        this.setState(t, p.approved ? 'approved' : 'denied');
        t.out.append(el('div', { class: 'answer' }, (p.approved ? 'Approved' : 'Denied') + (p.reason ? ': ' + p.reason : '')));
        break;
      }
      case 'data-edited': {
        // An operator's edit: the call ran with this input, not the model's.
        const t = this.tool(p.data?.toolCallId);
        t.input.replaceChildren(el('div', { class: 'muted' }, 'input, edited' + (p.data?.by ? ' by ' + p.data.by : '')),
          el('pre', { class: 'edited' }, json(p.data?.input)),
          el('details', {}, el('summary', { class: 'muted' }, 'the model\'s input'), el('pre', {}, json(p.data?.original))));
        break;
      }
      case 'tool-output-available': {
        const t = this.tool(p.toolCallId);
        this.setState(t, 'done');
        t.out.append(el('div', { class: 'muted' }, 'output'), el('pre', {}, json(p.output)));
        break;
      }
      case 'tool-output-error': {
        const t = this.tool(p.toolCallId);
        this.setState(t, 'error');
        t.out.append(el('pre', { class: 'error' }, p.errorText || 'error'));
        break;
      }
      case 'tool-output-denied':
        this.setState(this.tool(p.toolCallId), 'denied');
        break;
      case 'data-abandoned': {
        // The step that was cut short is the one still open.
        const why = 'Step abandoned: ' + (p.data?.reason || 'cut short');
        const s = this.step || [...this.root.querySelectorAll('.step.open')].pop();
        if (s) {
          s.classList.remove('open');
          s.classList.add('abandoned');
          s.append(el('div', { class: 'marker bad' }, why));
        } else {
          this.marker(why, true);
        }
        this.step = null;
        break;
      }
      case 'data-guardrail': { // a guardrail's decision; discarded retracts the open step
        const d = p.data || {};
        const why = `Guardrail ${d.guardrail} (${d.stage}): ${d.action}` + (d.reason ? ' — ' + d.reason : '');
        const s = d.discarded ? (this.step || [...this.root.querySelectorAll('.step.open')].pop()) : null;
        if (s) {
          s.classList.remove('open');
          s.classList.add('abandoned', 'retracted');
          s.append(el('div', { class: 'marker bad guardrail' }, why + ' (retracted)'));
          this.step = null;
        } else {
          this.marker(why, d.action === 'block');
        }
        break;
      }
      case 'data-callback': { // the call waits for its callback
        const t = this.tools.get(p.id);
        if (t && t.state.textContent === 'called') this.setState(t, 'awaiting callback', 'suspended');
        break;
      }
      case 'data-suspended': this.marker('Suspended: ' + (p.data?.cause || '')); break;
      case 'data-compacted': this.marker(p.data?.summary !== undefined
        ? `Context compacted: the turn's first ${p.data.steps} steps summarised, ${p.data.before} → ${p.data.after} input tokens`
        : `Context compacted: ${p.data?.turns ?? '?'} turns summarised, ${p.data?.before ?? '?'} → ${p.data?.after ?? '?'} input tokens`); break;
      case 'data-steered': for (const m of p.data?.messages || []) this.marker('Steered in: ' + m.text); break;
      case 'data-resumed': this.marker('Resumed (invocation ' + (p.data?.invocation ?? '?') + ')'); break;
      case 'error': this.marker('Error: ' + (p.errorText || ''), true); break;
      case 'finish':
        this.ended = true;
        this.root.append(el('div', { class: 'marker finish' }, 'Turn finished' + (p.finishReason ? ' (' + p.finishReason + ')' : '')));
        break;
      case 'data-redone':
        for (const id of p.data?.toolCallIds || []) {
          const t = this.tools.get(id);
          if (t) t.card.querySelectorAll('.data').forEach(d => d.classList.add('redone'));
        }
        this.marker('Calls cut short run again: what they showed before may not stand');
        break;
      default:
        if (p.type?.startsWith('data-') && p.toolCallId) {
          // A tool's own data part (baton.Emit): one line per type and id,
          // updated in place by a later part of the same id.
          const t = this.tool(p.toolCallId);
          const key = p.type + '#' + (p.id ?? this.parts.length);
          let d = [...t.card.querySelectorAll('.data')].find(x => x.dataset.key === key);
          if (!d) {
            d = el('div', { class: 'data', 'data-key': key });
            t.input.after(d);
          }
          d.classList.remove('redone');
          d.replaceChildren(el('span', { class: 'muted' }, p.type.slice(5) + ' '), el('code', {}, json(p.data)));
        } else if (!p.type?.startsWith('data-')) this.marker('(' + p.type + ')');
    }
  }
}
