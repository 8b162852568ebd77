// The migration matrix (audit/migration.hpp): per model, a row and a column per backend; a cell
// is the pair's streams of the same requests, solo | under load; the diagonal, each backend
// under load against its own solo streams.
import { badge, h, table } from './dom.js';

function agreementText(a) {
  if (!a.n) return '–';
  let t = `${a.logit_identical}/${a.n}`;
  if (a.first_difference >= 0) t += ` from ${a.first_difference} by ${Number(a.max_abs_delta.toPrecision(2))}`;
  if (a.token_identical < a.n) t += `, tokens ${a.token_identical}/${a.n}`;
  return t;
}
const agreementBadge = (a) => badge(agreementText(a), !a.n ? 'undecided' : a.logit_identical === a.n ? 'identical' : 'diverged');

function matrix(m) {
  return table(['', ...m.backends], m.backends.map((a) => h('tr', { 'data-backend': a }, h('th', null, a),
    ...m.backends.map((b) => {
      const c = m.cells.find((x) => (x.a === a && x.b === b) || (x.a === b && x.b === a));
      if (!c) return h('td', null, '–');
      return a === b ? h('td', { 'data-pair': 'itself' }, 'itself: ', agreementBadge(c.load))
        : h('td', { 'data-pair': b }, agreementBadge(c.solo), ' | ', agreementBadge(c.load));
    }))));
}

export function render({ report }) {
  if (!(report.migration || []).length) return null;
  return h('section', { 'data-testid': 'migration' }, h('h2', null, 'Migration matrix'),
    h('p', { class: 'muted' }, 'Logit-identical streams of the same requests, pair by pair: solo | under load, with where the first difference is and its size. The diagonal is each backend under load against its own solo streams.'),
    ...report.migration.map((m) => h('div', null, h('h3', null, m.model || 'one model'), matrix(m))));
}
