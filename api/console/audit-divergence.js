// Where streams first diverge: per condition, a histogram of its compared runs' first logit and
// token differences.
import { makeChart } from './charts.js';
import { WHOLE, h } from './dom.js';

// The first-divergence positions of each condition's compared runs, as histograms.
function divergenceHistograms(container, runs) {
  const byCondition = new Map();
  let longest = 1;
  for (const r of runs) {
    if (r.digests) longest = Math.max(longest, r.digests.tokens);
    if (!r.verdict || r.condition === 'baseline') continue;
    if (!byCondition.has(r.condition)) byCondition.set(r.condition, []);
    byCondition.get(r.condition).push(r.verdict);
  }
  const quiet = [];
  const row = h('div', { class: 'hist-row' });
  container.append(row);
  for (const [condition, verdicts] of byCondition) {
    const logit = new Array(longest).fill(0), tok = new Array(longest).fill(0);
    let diverged = 0;
    for (const v of verdicts) {
      if (v.first_logit_difference >= 0) { logit[Math.min(v.first_logit_difference, longest - 1)]++; diverged++; }
      if (v.first_token_difference >= 0) tok[Math.min(v.first_token_difference, longest - 1)]++;
    }
    if (!diverged) { quiet.push(`${condition} (${verdicts.length})`); continue; }
    const x = logit.map((_, i) => i);
    makeChart('hist:' + condition, row, {
      width: 420, height: 180, title: `${condition}: first divergence (${diverged} of ${verdicts.length} runs)`,
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [{ label: 'position', incrs: WHOLE }, { label: 'runs', incrs: WHOLE }],
      series: [{ label: 'position' },
        { label: 'first logit difference', fill: 'rgba(230,120,0,.55)', stroke: '#e67800', paths: uPlot.paths.bars({ size: [0.45, 40], align: -1 }) },
        { label: 'first token difference', fill: 'rgba(198,40,40,.55)', stroke: '#c62828', paths: uPlot.paths.bars({ size: [0.45, 40], align: 1 }) }],
    }, [x, logit, tok]);
  }
  if (quiet.length) container.append(h('p', { class: 'muted' }, 'Identical at every position: ' + quiet.join(', ') + '.'));
}


export function render() {
  return h('section', { 'data-testid': 'divergence' }, h('h2', null, 'Where streams first diverge'));
}

export function draw({ runs }, section) { divergenceHistograms(section, runs.runs); }
