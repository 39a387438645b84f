// The waterfall of a turn's steps, from the times the runner writes in each
// step's message-metadata: the step's model time (startedAt to
// finishedAt); then, up to the next step (or the turn's end), the time its
// tools ran (the next step's toolsStartedAt to toolsFinishedAt), the
// checkpoint that wrote the step and its results (from the next step's
// checkpointAt to its start; for the last step, the turn's ending), the
// rest of the runner's work between them (the ledger's writes, checks),
// and the time the turn spent suspended (from the turn.suspended and
// turn.resumed facts). Steps written before the metadata carried the tool
// and checkpoint times show that gap as one bar.

import { el } from './dom.js';

const ms = d => d < 1000 ? Math.round(d) + ' ms' : (d / 1000).toFixed(d < 10000 ? 2 : 1) + ' s';
const at = t => new Date(t).getTime();
const ends = new Set(['turn.completed', 'turn.failed', 'turn.cancelled', 'turn.interrupted']);

// carve pushes onto out a bar of kind from..to, less the pauses inside
// it, which are pushed as suspended bars.
function carve(out, kind, from, to, pauses) {
  for (const [a, b] of pauses) {
    if (b <= from || a >= to) continue;
    if (a > from) out.push({ kind, from, to: a });
    out.push({ kind: 'suspended', from: Math.max(a, from), to: Math.min(b, to) });
    from = Math.min(b, to);
  }
  if (to > from) out.push({ kind, from, to });
}

// gap returns the bars of the time from a step's finish to the next step's
// start (or the turn's end): what the next step's metadata says of it.
function gap(s, next, to, pauses) {
  const out = [];
  const from = s.finishedAt;
  if (!s.checkpointAt || (next && !next.checkpointAt)) {
    carve(out, 'gap', from, to, pauses); // written before the times were
    return out;
  }
  const known = [];
  if (next?.toolsStartedAt) known.push({ kind: 'tools', from: next.toolsStartedAt, to: next.toolsFinishedAt });
  known.push({ kind: 'checkpoint', from: next ? next.checkpointAt : from, to });
  let at = from;
  for (const k of known) {
    const a = Math.min(Math.max(k.from, at), to), b = Math.min(Math.max(k.to, a), to);
    if (a > at) carve(out, 'other', at, a, pauses);
    // A run or a write under a millisecond still shows, as a sliver.
    if (b === a) out.push({ kind: k.kind, from: a, to: b });
    else carve(out, k.kind, a, b, pauses);
    at = Math.max(at, b);
  }
  if (to > at) carve(out, 'other', at, to, pauses);
  return out;
}

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
    const next = timed[i + 1];
    const to = next?.startedAt ?? (end ? at(end.time) : null);
    if (to) bars.push(...gap(s, next, Math.max(to, s.finishedAt), pauses));
    return bars;
  });
}

const label = { model: 'model', tools: 'tools', checkpoint: 'checkpoint', other: 'ledger and checks', suspended: 'suspended', gap: 'tools + checkpoint' };

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
    const text = Object.keys(label).filter(k => bars.some(b => b.kind === k)).map(k => `${label[k]} ${ms(sum(k))}`).join(' · ');
    return el('div', { class: 'wf-row', 'data-step': i + 1 }, el('strong', {}, 'Step ' + (i + 1)), track, el('span', { class: 'muted' }, text));
  }), el('div', { class: 'legend' }, Object.entries(label).filter(([k]) => rows.flat().some(b => b.kind === k)).map(([k, v]) => el('span', {}, el('i', { class: k }), v))));
}
