// The pre-registered predictions, registered with their hash before the first request.
import { badge, h, table, when } from './dom.js';

export function render({ job, report }) {
  return h('section', { 'data-testid': 'predictions' }, h('h2', null, 'Pre-registered predictions'),
    h('p', { class: 'muted' }, `Registered ${when(job.predictions.registered_at)} as `, h('span', { class: 'mono' }, job.predictions.hash), ', before the first request.'),
    table(['id', 'claim', 'level', 'expect', 'evidence', 'needed', 'result'], report.predictions.map((p) => h('tr', null,
      h('td', null, p.id), h('td', null, p.statement), h('td', null, p.level), h('td', null, p.expect),
      h('td', null, `${p.k}/${p.n}`, p.flagged ? ` (${p.flagged} counted apart)` : ''), h('td', null, Math.round(100 * p.at_least) + '%'),
      h('td', null, badge(p.outcome))))));
}
