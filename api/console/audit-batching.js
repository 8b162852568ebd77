// The batching evidence: per burst condition, the bursts the server batched, its concurrency
// and the overlap; every burst beneath, with why it was or was not batched.
import { badge, h, num, table } from './dom.js';

function everyBurst(bursts) {
  return h('details', null, h('summary', null, `Every burst (${bursts.bursts.length})`),
    table(['condition', 'backend', 'width', 'launch spread', 'overlap', 'busy slots/decode', 'timed concurrency', 'batched', 'why'],
      bursts.bursts.map((b) => h('tr', null, h('td', null, b.condition), h('td', null, b.backend), h('td', { class: 'num' }, b.width),
        h('td', { class: 'num' }, (b.launch_spread_ns / 1e6).toFixed(2) + ' ms'), h('td', { class: 'num' }, Math.round(100 * b.overlap) + '%'),
        h('td', { class: 'num' }, num(b.busy_slots_per_decode)), h('td', { class: 'num' }, num(b.timed_concurrency)),
        h('td', null, b.verdict ? badge(b.verdict.batched ? 'batched' : 'not batched', b.verdict.batched ? 'batched' : 'flagged') : '–'),
        h('td', null, b.verdict ? b.verdict.reason : '')))));
}

export function render({ report, bursts }) {
  const section = h('section', { 'data-testid': 'batching' }, h('h2', null, 'Batching evidence'));
  const concurrent = report.pooled.filter((t) => t.batching && t.batching.bursts > 0);
  if (!concurrent.length) {
    section.append(h('p', { class: 'muted' }, 'No concurrent conditions in this audit.'));
    return section;
  }
  section.append(table(['condition', 'width', 'bursts batched', 'server concurrency (median)', 'overlap (median)'],
    concurrent.map((t) => h('tr', null, h('td', null, t.condition), h('td', { class: 'num' }, t.batching.width),
      h('td', null, `${t.batching.batched}/${t.batching.bursts} `, badge(t.batching.batched === t.batching.bursts ? 'batched' : 'flagged')),
      h('td', null, t.batching.median_measured === null ? 'not measured' : `${t.batching.measured_by.replace(/_/g, ' ')} ${num(t.batching.median_measured)} of ${t.batching.expected}`),
      h('td', { class: 'num' }, Math.round(100 * t.batching.median_overlap) + '%')))),
  everyBurst(bursts));
  return section;
}
