// The findings' tables: pooled over the backends and per backend, with the streams counted apart
// and why, how each server writes its logprobs, and the findings' sentences.
import { badge, cell, h, table } from './dom.js';

// How each backend's server writes logprobs (a rounding one qualifies "logit-identical") and
// its path's newest selftest against seeded faults.
export function harnessBlock(report) {
  if (!report.resolution && !report.selftests) return null;
  return h('ul', { class: 'harness', 'data-testid': 'harness' }, report.backends.map((b) => {
    const r = (report.resolution || {})[b];
    const t = (report.selftests || {})[b];
    return h('li', null, h('strong', null, b), ': ', r ? r.describe : 'no logprob was read as text',
      r && !r.bit_exact ? [' ', badge('logit-identical here means equal as written', 'flagged')] : null, '; ',
      t ? [`harness power ${t.summary} (selftest ${t.id}) `, badge(t.passed ? 'passed' : 'missed', t.passed ? 'valid' : 'invalid')]
        : badge('no selftest of this path', 'flagged'));
  }));
}

export function findingsTable(rows) {
  const flags = (t) => {
    const out = [];
    const own = t.flagged - (t.not_solo || 0) - (t.ineffective || 0);
    if (own > 0) out.push(`${own} ${t.flagged_as === 'not_reused' ? 'not reused' : 'not batched'}`);
    if (t.not_solo) out.push(`${t.not_solo} not solo`);
    if (t.ineffective) out.push(`${t.ineffective} ineffective`);
    return out;
  };
  const note = (t) => {
    if (t.control && t.n === 0 && t.flagged > 0) return `<- control: ${flags(t).join(', ')}, not counted`;
    if (t.control && t.logit_identical === 0 && t.token_identical > 0) {
      return `<- control: logits diverged, tokens identical in ${t.token_identical}/${t.n}`;
    }
    if (t.control) return t.logit_identical === 0 ? '<- control: diverged' : '<- CONTROL IDENTICAL';
    const apart = [];
    if (t.failed) apart.push(`${t.failed} failed`);
    if (t.flagged) apart.push(...flags(t));
    return apart.length ? `(${apart.join(', ')}, not counted)` : '';
  };
  return table(['condition', 'logit-ident', 'token-ident', ''], rows.map((t) => h('tr', { class: t.control ? 'control' : null, 'data-condition': t.condition },
    h('td', null, t.condition), h('td', null, cell(t.logit_identical, t.n)), h('td', null, cell(t.token_identical, t.n)),
    h('td', null, note(t)))), 'findings');
}


export function render({ report }) {
  return h('section', { 'data-testid': 'findings' }, h('h2', null, 'Findings'),
    report.valid ? null : h('div', { class: 'banner bad' }, report.invalid_reason),
    harnessBlock(report),
    h('h3', null, `Pooled over ${report.backends.length} backend(s)`), findingsTable(report.pooled),
    report.backends.length > 1 ? report.backends.map((b) => [h('h3', null, b), findingsTable(report.per_backend[b] || [])]) : null,
    h('ol', null, report.findings.map((s) => h('li', null, s))));
}
