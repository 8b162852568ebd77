// Attribution at the first divergence, per burst condition and backend (docs/explain.md).
import { h, num, table } from './dom.js';

const rate = (k, n) => (n ? (100 * k / n).toFixed(1) + '%' : '–');

export function render({ report }) {
  if (!(report.attributions || []).length) return null;
  return h('section', { 'data-testid': 'attribution' }, h('h2', null, 'Attribution at the first divergence'),
    table(['condition', 'backend', 'divergent', 'with steps', 'at the first token', 'at a width change', 'base rate', 'p (exact binomial)', 'at a finish', 'at a join'],
      report.attributions.map((t) => h('tr', { 'data-condition': t.condition },
        h('td', null, t.condition), h('td', null, t.backend), h('td', { class: 'num' }, t.divergent), h('td', { class: 'num' }, t.with_steps),
        h('td', { class: 'num' }, t.at_first_token), h('td', { class: 'num' }, `${t.at_width_change}/${t.tested}`),
        h('td', { class: 'num' }, rate(t.width_changes, t.positions)), h('td', { class: 'num' }, t.tested ? num(t.p_width_change, 4) : '–'),
        h('td', { class: 'num' }, `${t.at_finish} (${rate(t.finishes, t.positions)})`), h('td', { class: 'num' }, `${t.at_join} (${rate(t.joins, t.positions)})`)))));
}
