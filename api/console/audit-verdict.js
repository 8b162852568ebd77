// The verdict an audit's page opens with: the answer before the evidence (audit/verdict.hpp).
import { VERDICT_BAD, VERDICT_LABELS, h } from './dom.js';

export function render({ report }) {
  if (!(report.verdict || []).length) return null;
  return h('section', { 'data-testid': 'verdict' }, h('h2', null, 'Verdict'),
    h('dl', { class: 'meta verdict' }, report.verdict.map((l) => [h('dt', null, VERDICT_LABELS[l.topic] || l.topic),
      h('dd', { 'data-topic': l.topic, 'data-answer': l.answer, class: VERDICT_BAD.has(l.answer) ? 'bad' : null }, l.text)])));
}
