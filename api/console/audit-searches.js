// Threshold searches (audit/search.hpp): per width, the trials, the streams' identity with its
// interval, and the decision against the solo reference.
import { badge, h, num, table } from './dom.js';

export const pctOf = (k, n) => (n ? `${k}/${n} (${Math.round((100 * k) / n)}%)` : '–');
const decision = (d, p) => badge(d.replace('_', ' ').toUpperCase() + (d === 'different' ? ` p=${num(p, 2)}` : ''),
  d === 'same' ? 'identical' : d === 'different' ? 'diverged' : 'flagged');

function searchTable(s) {
  return table(['width', 'trials', 'batched', 'logit-identical', '95% interval', 'logits', 'token-identical', 'tokens'], [
    h('tr', null, h('td', null, '1 (solo reference)'), h('td', null, '–'), h('td', null, '–'),
      h('td', null, pctOf(s.reference_logit_identical, s.reference_n)), h('td', null, '–'), h('td', null, ''),
      h('td', null, pctOf(s.reference_token_identical, s.reference_n)), h('td', null, '')),
    ...s.widths.map((w) => h('tr', { 'data-width': w.width }, h('td', { class: 'num' }, w.width), h('td', { class: 'num' }, w.trials),
      h('td', { class: 'num' }, w.batched_trials), h('td', null, pctOf(w.logit_identical, w.n)),
      h('td', null, w.n ? `${Math.round(100 * w.logit_interval[0])}–${Math.round(100 * w.logit_interval[1])}%` : '–'),
      h('td', null, decision(w.logit, w.logit_p)), h('td', null, pctOf(w.token_identical, w.n)), h('td', null, decision(w.token, w.token_p))))]);
}

export function render({ report }) {
  if (!(report.searches || []).length) return null;
  return h('section', { 'data-testid': 'searches' }, h('h2', null, 'Threshold search'),
    report.searches.map((s) => [
      h('h3', null, `${s.backend}, ${s.condition}: logit threshold ${s.logit_threshold ? 'C=' + s.logit_threshold : 'none found'}, token threshold ${s.token_threshold ? 'C=' + s.token_threshold : 'none found'}`),
      searchTable(s)]));
}
