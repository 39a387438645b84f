// The waterfall of a turn's steps: each step's model time (from the
// startedAt and finishedAt the runner writes in the step's
// message-metadata), the time after it until the next step began or the
// turn ended (its tool calls and the checkpoint that writes them), and the
// time the turn spent suspended in between (from the turn.suspended and
// turn.resumed facts).

import { el } from './dom.js';

const ms = d => d < 1000 ? Math.round(d) + ' ms' : (d / 1000).toFixed(d < 10000 ? 2 : 1) + ' s';
const at = t => new Date(t).getTime();
const ends = new Set(['turn.completed', 'turn.failed', 'turn.cancelled', 'turn.interrupted']);

// segments returns, for each timed step, its bars: [{kind, from, to}].
export function segments(steps, facts, turn) {
  const mine = facts.filter(f => f.turn === turn);
  const pauses = [];
  let since = null;
  for (const f of mine) {
    if (f.type === 'turn.suspended') since = at(f.time);
    else if (f.type === 'turn.resumed' && since !== null) { pauses.push([since, at(f.time)]); since = null; }
  }
  const end = mine.find(f => ends.has(f.type));
  if (since !== null) pauses.push([since, end ? at(end.time) : since]);
  const timed = steps.filter(s => s.startedAt && s.finishedAt);
  return timed.map((s, i) => {
    const bars = [{ kind: 'model', from: s.startedAt, to: s.finishedAt }];
    const next = timed[i + 1]?.startedAt ?? (end ? at(end.time) : null);
    if (next && next > s.finishedAt) {
      // The gap to the next step, less the suspensions inside it.
      let from = s.finishedAt;
      for (const [a, b] of pauses) {
        if (b <= from || a >= next) continue;
        if (a > from) bars.push({ kind: 'tools', from, to: a });
        bars.push({ kind: 'suspended', from: Math.max(a, from), to: Math.min(b, next) });
        from = Math.min(b, next);
      }
      if (next > from) bars.push({ kind: 'tools', from, to: next });
    }
    return bars;
  });
}

const label = { model: 'model', tools: 'tools + checkpoint', suspended: 'suspended' };

// renderWaterfall draws the steps in box, on one time axis.
export function renderWaterfall(box, steps, facts, turn) {
  const rows = segments(steps, facts, turn);
  if (!rows.length) { box.replaceChildren(el('p', { class: 'muted' }, 'No timed steps yet.')); return; }
  const t0 = rows[0][0].from;
  const t1 = Math.max(...rows.flat().map(b => b.to));
  const span = Math.max(t1 - t0, 1);
  box.replaceChildren(...rows.map((bars, i) => {
    const track = el('div', { class: 'track' });
    for (const b of bars) {
      const bar = el('span', { class: 'bar ' + b.kind, 'data-ms': b.to - b.from, title: `${label[b.kind]}: ${ms(b.to - b.from)}` });
      // CSSOM, not a style attribute: the page's CSP allows no inline style.
      bar.style.left = ((b.from - t0) / span * 100) + '%';
      bar.style.width = ((b.to - b.from) / span * 100) + '%';
      track.append(bar);
    }
    const sum = kind => bars.filter(b => b.kind === kind).reduce((n, b) => n + b.to - b.from, 0);
    const text = ['model', 'tools', 'suspended'].filter(k => bars.some(b => b.kind === k)).map(k => `${label[k]} ${ms(sum(k))}`).join(' · ');
    return el('div', { class: 'wf-row', 'data-step': i + 1 }, el('strong', {}, 'Step ' + (i + 1)), track, el('span', { class: 'muted' }, text));
  }), el('div', { class: 'legend' }, Object.entries(label).map(([k, v]) => el('span', {}, el('i', { class: k }), v))));
}
