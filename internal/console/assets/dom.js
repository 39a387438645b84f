// el builds an element: el('div', {class: 'x'}, 'text', child…). Text is
// always set as text, never parsed as HTML.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  e.append(...children.flat().filter(c => c !== undefined && c !== null && c !== false));
  return e;
}

export const json = v => JSON.stringify(v, null, 2);

export function ago(t) {
  if (!t) return '';
  const s = Math.round((Date.now() - new Date(t)) / 1000);
  if (s < 60) return s + 's ago';
  if (s < 3600) return Math.floor(s / 60) + 'm ago';
  if (s < 86400) return Math.floor(s / 3600) + 'h ago';
  return new Date(t).toLocaleString();
}

export const time = t => t ? new Date(t).toLocaleTimeString() : '';

export function badge(text, cls) {
  return el('span', { class: 'badge ' + (cls || text) }, text);
}
