// Every run of the audit, filtered by condition, each linked to its stream.
import { badge, h, num, put, table } from './dom.js';

export const late = true;  // a long table: after the charts have laid out the page

function runRow(id, r) {
  const v = r.verdict;
  return h('tr', { 'data-run': r.id },
    h('td', null, h('a', { href: `#/audits/${id}/runs/${Number(r.id)}` }, r.id)), h('td', null, r.backend), h('td', null, r.condition),
    h('td', { class: 'num' }, r.replicate), h('td', { class: 'prompt', title: r.prompt }, r.prompt),
    h('td', null, r.status === 'ok' ? '' : badge('failed')),
    h('td', null, v ? badge(v.logit_identical ? 'identical' : 'diverged') : r.condition === 'baseline' ? 'baseline' : '–'),
    h('td', null, v ? badge(v.token_identical ? 'identical' : 'diverged') : ''),
    h('td', { class: 'num' }, v && v.first_logit_difference >= 0 ? v.first_logit_difference : ''),
    h('td', { class: 'num' }, v && v.first_token_difference >= 0 ? v.first_token_difference : ''),
    h('td', { class: 'num' }, v ? num(v.max_abs_delta) : ''),
    h('td', null, v && v.flag !== 'none' ? h('span', { title: v.flag_reason || '' }, badge(v.flag.replace('_', ' '), 'flagged')) : ''));
}

export function render({ id, runs }) {
  const conditions = [...new Set(runs.runs.map((r) => r.condition))];
  const filter = h('select', { 'aria-label': 'condition' }, h('option', { value: '' }, 'every condition'), conditions.map((c) => h('option', { value: c }, c)));
  const body = h('tbody');
  const fill = () => put(body, ...runs.runs.filter((r) => !filter.value || r.condition === filter.value).map((r) => runRow(id, r)));
  filter.addEventListener('change', fill);
  fill();
  return h('section', { 'data-testid': 'runs' }, h('h2', null, `Runs (${runs.runs.length})`), h('label', null, 'Condition', filter),
    table(['run', 'backend', 'condition', 'rep', 'prompt', '', 'logits', 'tokens', 'first logit diff', 'first token diff', 'max |Δ|', 'evidence'], body));
}
