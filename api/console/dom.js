// The console's elements and the words it formats numbers, times and machines with; the state
// every page shares. Every string from the server reaches the page as text (textContent, never
// markup).
// What the pages share: the daemon's /v1/info, each chart and what it plots, the pending timers,
// and the number of the current render (a page still loading for an earlier one stops).
export const state = { info: null, charts: {}, timers: [], render: 0 };
window.__console = state;  // what each chart plots, for the tests and the curious

export const STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled', 'interrupted'];
export const FINAL = new Set(['done', 'failed', 'cancelled', 'interrupted']);
// The verdict's topics as the text report labels them, and the answers that warn.
export const VERDICT_LABELS = { certificate: 'Certificate', solo: 'Solo', concurrency: 'Concurrency', cache_reuse: 'Cache reuse', seeded_sampling: 'Seeded', fix: 'Fix', comparator: 'Comparator', undecided: 'Undecided' };
export const VERDICT_BAD = new Set(['moves', 'mixed', 'vacuous', 'invalid', 'unproven', 'open']);
export const TOKEN_KEY = 'logitaudit.token';

// h('a', {href: '#/x', class: 'y'}, 'text', child, [more]): an element whose children are
// nodes or text. Text is always a text node, so server strings cannot become markup.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value' && (tag === 'input' || tag === 'textarea' || tag === 'select')) el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
export const $ = (sel, root = document) => root.querySelector(sel);
// el.replaceChildren without the nulls of conditional parts (it would print "null").
export const put = (el, ...kids) => el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
export const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];  // axis steps of positions and audits
export const badge = (text, kind) => h('span', { class: 'badge ' + (kind || text) }, text);
export const pct = (k, n) => (n ? Math.round((100 * k) / n) + '%' : '–');
export const cell = (k, n) => `${k}/${n} (${pct(k, n).padStart(4)})`;
// The machine a fingerprint names, in one line: CPU, cores, the ggml variant, devices, labels.
export function machineText(m) {
if (!m || !Object.keys(m).length) return '–';
const parts = [m.cpu_model, m.logical_cores && `${m.logical_cores} cores`, m.ggml_cpu_variant && `ggml ${m.ggml_cpu_variant}`,
  m.devices && m.devices !== 'none' && `devices ${m.devices}`];
const shown = new Set(['cpu_model', 'logical_cores', 'ggml_cpu_variant', 'devices', 'cpu_vendor', 'arch', 'cpu_features', 'ggml_cpu_features', 'kernel']);
for (const [k, v] of Object.entries(m)) if (!shown.has(k)) parts.push(`${k} ${v}`);
return parts.filter(Boolean).join(', ');
}

export const short = (s, n = 12) => (s && s.length > n ? s.slice(0, n) + '…' : s || '');
export const when = (s) => (s ? s.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '–');
export const num = (x, d = 3) => (x === null || x === undefined ? '–' : Number(x).toPrecision(d));
export const auditLink = (id) => h('a', { href: '#/audits/' + Number(id) }, '#' + Number(id));

export function table(headers, rows, cls) {
  return h('table', { class: cls },
    h('thead', null, h('tr', null, headers.map((x) => (typeof x === 'string' ? h('th', null, x) : x)))),
    h('tbody', null, rows));
}
export function meta(pairs) {
  return h('dl', { class: 'meta' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}
