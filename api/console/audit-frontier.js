// The frontier (audit/frontier.hpp): per configuration, identity under load against its
// throughput and cost, and a chart of the two.
import { makeChart } from './charts.js';
import { badge, h, table } from './dom.js';
import { pctOf } from './audit-searches.js';

export function render({ report }) {
  if (!(report.frontier || []).length) return null;
  const section = h('section', { 'data-testid': 'frontier' }, h('h2', null, 'Frontier'),
    table(['configuration', 'flags', 'logit-identical under load', 'token-identical under load', 'batched', 'tokens/s', 'cost', 'reproducible'],
      report.frontier.map((r) => h('tr', { 'data-backend': r.backend }, h('td', null, r.backend),
        // The report's own words for the settings (findings written before they carried them: each setting by name).
        h('td', { class: 'mono' }, r.flags || (r.settings ? Object.entries(r.settings).map(([k, v]) => `${k}=${v}`).join(' ') : '–')),
        h('td', null, pctOf(r.load_logit_identical, r.load_n)), h('td', null, pctOf(r.load_token_identical, r.load_n)),
        h('td', { class: 'num' }, `${r.load_batched}/${r.load_n}`), h('td', { class: 'num' }, r.tokens_per_s === null ? '–' : r.tokens_per_s.toFixed(1)),
        h('td', { class: 'num' }, r.cost === null ? '–' : Math.round(100 * r.cost) + '%'),
        h('td', null, badge(r.reproducible ? 'yes' : 'no', r.reproducible ? 'identical' : 'diverged'), r.note ? ' ' + r.note : '')))));
  if (report.frontier.some((r) => r.tokens_per_s !== null)) section.append(h('div', { 'data-testid': 'frontier-chart' }));
  return section;
}

export function draw({ report }, section) {
  const box = section.querySelector('[data-testid=frontier-chart]');
  if (!box) return;
  const rows = report.frontier.filter((r) => r.tokens_per_s !== null && r.load_n > 0).sort((a, b) => a.tokens_per_s - b.tokens_per_s);
  makeChart('frontier', box, {
    title: 'logit identity under load against throughput, per configuration',
    scales: { x: { time: false }, y: { range: [0, 100] } },
    axes: [{ label: 'tokens/s' }, { label: '% logit-identical' }],
    series: [{ label: 'tokens/s' }, { label: 'logit-identical %', stroke: '#1f4e79', width: 0, points: { show: true, size: 9 } }],
  }, [rows.map((r) => r.tokens_per_s), rows.map((r) => 100 * r.load_logit_identical / r.load_n)]);
}
