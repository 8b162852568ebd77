// Load curves (docs/load.md): per backend and condition, a table of the levels and two charts on
// one x axis (the level): the probes' identity with its interval, and the latencies. A curve is
// the answer of an audit that has one: it leads the page.
import { makeChart } from './charts.js';
import { badge, h, num, table } from './dom.js';

const fix = (x, d) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
const ms = (l) => (l && l.n ? `${num(l.p50)} / ${num(l.p99)}` : '–');

function levelRow(l) {
  const m = l.measurement;
  return h('tr', { 'data-level': m.label },
    h('td', null, m.label),
    h('td', null, m.reached ? badge('reached', 'batched') : h('span', { title: m.not_reached }, badge('not reached', 'flagged'))),
    h('td', null, l.probes ? `${l.logit_identical}/${l.probes}` : '–', l.flagged ? ` (${l.flagged} counted apart)` : ''),
    h('td', null, l.probes ? `${Math.round(100 * l.logit_low)}–${Math.round(100 * l.logit_high)}%` : '–'),
    h('td', null, l.probes ? `${l.token_identical}/${l.probes}` : '–'),
    h('td', { class: 'num' }, l.probes ? fix(l.mean_width, 1) : '–'),
    h('td', { class: 'num' }, fix(m.offered_rps, 2)), h('td', { class: 'num' }, fix(m.achieved_rps, 2)),
    h('td', { class: 'num' }, fix(m.request_throughput, 2)), h('td', { class: 'num' }, fix(m.output_throughput, 0)),
    h('td', { class: 'num' }, ms(m.ttft_ms)), h('td', { class: 'num' }, ms(m.itl_ms)), h('td', { class: 'num' }, ms(m.tpot_ms)),
    h('td', { class: 'num' }, ms(m.e2el_ms)),
    h('td', { class: 'num' }, `${fix(m.mean_in_flight, 1)} / ${m.max_in_flight}`),
    h('td', { class: 'num', title: 'requests_processing + requests_deferred, read every 250 ms, beside the generator\'s count then' },
      m.server_in_flight >= 0 ? `${fix(m.server_in_flight, 2)} (${fix(m.sampled_in_flight, 2)})` : '–'),
    h('td', { class: 'num' }, fix(m.arrival_lateness_us && m.arrival_lateness_us.p99, 0)));
}

export function render({ report }) {
  const curves = report.load_curves || [];
  if (!curves.length) return null;
  const section = h('section', { 'data-testid': 'load-curves' }, h('h2', null, 'Load curves'));
  for (const c of curves)
    section.append(h('h3', null, `${c.backend}, ${c.condition} (${c.arrival} arrivals)`),
      table(['level', 'reached', 'logit-identical', '95% interval', 'token-identical', 'batch width', 'offered req/s', 'achieved req/s',
        'served req/s', 'output tok/s', 'TTFT p50 / p99 ms', 'ITL p50 / p99 ms', 'TPOT p50 / p99 ms', 'E2E p50 / p99 ms',
        'in flight mean / max', 'server holds (ours)', 'lateness p99 µs'], c.levels.map(levelRow)),
      h('div', { class: 'load-charts', 'data-testid': 'load-charts' }));
  return section;
}

function drawCurve(c, box) {
  const key = `${c.backend}:${c.condition}`;
  const levels = c.levels;
  const xs = levels.map((_, i) => i);
  const labels = levels.map((l) => l.measurement.label);
  const axisX = { label: 'load level', values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) && labels[t] !== undefined ? labels[t] : '')), splits: () => xs };
  const reachedOr = (l, v) => (l.measurement.reached && l.probes ? v : null);
  const cursor = { sync: { key: uPlot.sync('load:' + key).key } };
  const level = { label: 'level', value: (u, v) => (v === null ? '' : labels[v] || '') };
  const scaleX = { time: false, range: [-0.5, levels.length - 0.5] };
  makeChart('load-identity:' + key, box, {
    title: 'probes logit-identical to their solo baseline, per level (95% interval)',
    cursor, scales: { x: scaleX, y: { range: [0, 100] } }, axes: [axisX, { label: '%' }],
    series: [level, { label: 'logit-identical', stroke: '#1f4e79', width: 2, points: { show: true, size: 8 } },
      { label: 'interval low', stroke: 'rgba(31,78,121,.35)', dash: [4, 4] }, { label: 'interval high', stroke: 'rgba(31,78,121,.35)', dash: [4, 4] },
      { label: 'token-identical', stroke: '#2e7d32', width: 1.5, points: { show: true, size: 6 } }],
  }, [xs, levels.map((l) => reachedOr(l, 100 * l.logit_identical / l.probes)), levels.map((l) => reachedOr(l, 100 * l.logit_low)),
    levels.map((l) => reachedOr(l, 100 * l.logit_high)), levels.map((l) => reachedOr(l, 100 * l.token_identical / l.probes))]);
  makeChart('load-latency:' + key, box, {
    title: 'latency per level (every request of the level)', cursor, scales: { x: scaleX }, axes: [axisX, { label: 'ms' }],
    series: [level, { label: 'TTFT p50', stroke: '#e67800', width: 2, points: { show: true } }, { label: 'TTFT p99', stroke: '#e67800', dash: [5, 4] },
      { label: 'E2E p50', stroke: '#6a1b9a', width: 2, points: { show: true } }, { label: 'E2E p99', stroke: '#6a1b9a', dash: [5, 4] },
      { label: 'TPOT p50', stroke: '#00838f', width: 1.5, points: { show: true } }],
  }, [xs, levels.map((l) => l.measurement.ttft_ms.p50), levels.map((l) => l.measurement.ttft_ms.p99),
    levels.map((l) => l.measurement.e2el_ms.p50), levels.map((l) => l.measurement.e2el_ms.p99), levels.map((l) => l.measurement.tpot_ms.p50)]);
}

export function draw({ report }, section) {
  const boxes = section.querySelectorAll('[data-testid=load-charts]');
  report.load_curves.forEach((c, i) => drawCurve(c, boxes[i]));
}
