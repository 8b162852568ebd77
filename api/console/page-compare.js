// #/compare?a=&b=: two audits' baselines compared, with the fingerprint fields that differ.
import { api, tokenFor } from './api.js';
import { auditLink, badge, h, num, put, table } from './dom.js';

// #/compare?a=&b=
export async function pageCompare(main, q) {
  await tokenFor(false);
  const a = q.get('a') || '', b = q.get('b') || '';
  const form = h('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/compare?a=${Number(ev.target.elements.a.value)}&b=${Number(ev.target.elements.b.value)}`; } },
    h('label', null, 'Audit A', h('input', { name: 'a', type: 'number', min: 1, value: a, required: true })),
    h('label', null, 'Audit B', h('input', { name: 'b', type: 'number', min: 1, value: b, required: true })),
    h('button', { type: 'submit' }, 'Compare'));
  put(main, h('h1', null, 'Compare two audits\' baselines'), form);
  if (!a || !b) return;
  const c = await api(`/v1/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const differences = Object.entries(c.fingerprint_differences).filter(([, f]) => f.length).map(([backend, f]) => `${backend}: ${f.join(', ')}`);
  const notSolo = c.summary.not_solo ? ` ${c.summary.not_solo} more in both were not compared: a side was not alone.` : '';
  main.append(h('p', { 'data-testid': 'compare-summary' }, `${c.summary.compared} baselines in both: ${c.summary.logit_identical} logit-identical, ${c.summary.token_identical} token-identical.${notSolo} `,
    auditLink(c.a), ' against ', auditLink(c.b), '.'),
  differences.length ? h('div', { class: 'banner note', 'data-testid': 'fingerprint-differences' }, 'Fingerprints differ: ' + differences.join('; ')) : h('p', { class: 'muted' }, 'Same fingerprints.'),
  table(['backend', 'prompt', 'temperature', 'seed', 'in A', 'in B', 'logits', 'tokens', 'first logit diff', 'first token diff', 'max |Δ|', 'max ulp'],
    c.baselines.map((x) => h('tr', null, h('td', null, x.backend), h('td', { class: 'prompt', title: x.prompt }, x.prompt), h('td', { class: 'num' }, x.temperature),
      h('td', { class: 'num' }, x.seed ?? '–'), h('td', null, x.in_a ? 'yes' : 'no'), h('td', null, x.in_b ? 'yes' : 'no'),
      h('td', x.not_solo ? { title: x.not_solo } : null, 'logit_identical' in x ? badge(x.logit_identical ? 'identical' : 'diverged') : x.not_solo ? 'not solo' : '–'),
      h('td', null, 'token_identical' in x ? badge(x.token_identical ? 'identical' : 'diverged') : '–'),
      h('td', { class: 'num' }, x.first_logit_difference >= 0 ? x.first_logit_difference : ''), h('td', { class: 'num' }, x.first_token_difference >= 0 ? x.first_token_difference : ''),
      h('td', { class: 'num' }, 'max_abs_delta' in x ? num(x.max_abs_delta) : ''), h('td', { class: 'num' }, x.max_ulp ?? '')))));
}
