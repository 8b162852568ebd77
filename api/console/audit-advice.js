// An advise job's advice (audit/advice.hpp, docs/advise.md): the certified configuration's
// command first, then every configuration in the order the load ranked them, each with its
// figures, its certify job (linked) and what decided it.
import { badge, h, table } from './dom.js';

const OUTCOME_BADGE = { certified: 'identical', refuted: 'diverged', incomplete: 'undecided', invalid: 'invalid', failed: 'invalid', not_tried: 'undecided' };
// The median of the rounds' costs, each round's two measured back to back (as
// advice_section::confirmed_cost); the medians' ratio where no round has both.
function confirmedCost(c) {
  const costs = [];
  for (let i = 0; i < Math.min(c.fastest_rounds.length, c.certified_rounds.length); i++)
    if (c.fastest_rounds[i] > 0 && c.certified_rounds[i] >= 0) costs.push(1 - c.certified_rounds[i] / c.fastest_rounds[i]);
  if (!costs.length) return 1 - c.certified / c.fastest;
  costs.sort((x, y) => x - y);
  const n = costs.length;
  return n % 2 ? costs[(n - 1) / 2] : (costs[n / 2 - 1] + costs[n / 2]) / 2;
}
const ms = (p50, p99) => (p50 < 0 ? '–' : `${p50.toFixed(1)} / ${p99.toFixed(1)}`);

export function render({ report }) {
  const a = report.advice_result;
  if (!a || !a.rows.length) return null;
  const chosen = a.chosen >= 0 ? a.rows[a.chosen] : null;
  const goodput = a.rows.some((r) => r.goodput_rps >= 0);
  const head = ['configuration', 'tokens/s', ...(goodput ? ['goodput (req/s)'] : []), 'cost', 'TTFT p50 / p99 (ms)', 'ITL p50 / p99 (ms)', 'outcome', 'certify job', 'evidence'];
  return h('section', { 'data-testid': 'advice' },
    h('h2', null, `Advice: '${a.claim}' `, badge(chosen ? 'certified' : 'none certified', chosen ? 'identical' : 'undecided')),
    chosen ? h('p', null, 'Start the server with ', h('code', { 'data-testid': 'advice-command' }, chosen.command),
      ` (${chosen.configuration}): ${chosen.tokens_per_s.toFixed(0)} tokens/s` +
      (chosen.cost > 0 ? `, ${Math.round(100 * chosen.cost)}% below the fastest configuration.` : ', the fastest configuration swept.'))
      : h('p', null, 'No configuration tried was certified; the table says what each certify job found.'),
    a.confirmation && a.confirmation.fastest > 0 && a.confirmation.certified >= 0
      ? h('p', { 'data-testid': 'advice-confirmation' }, `Measured again in ${a.confirmation.rounds} alternating rounds on fresh servers (`,
        h('a', { href: `#/audits/${Number(a.confirmation.audit)}` }, `audit ${a.confirmation.audit}`),
        `): ${a.confirmation.certified.toFixed(0)} against ${a.confirmation.fastest.toFixed(0)} by the medians, a cost of ${Math.round(100 * confirmedCost(a.confirmation))}% by the median round.`)
      : null,
    h('p', { class: 'muted' }, `Ranked by ${a.ranked_by} under ${a.load}. The advice holds for this host, this llama-server build and these model files only.`),
    table(head, a.rows.map((r) => h('tr', { 'data-configuration': r.configuration }, h('td', null, r.configuration),
      h('td', { class: 'num' }, r.tokens_per_s < 0 ? '–' : r.tokens_per_s.toFixed(0)),
      ...(goodput ? [h('td', { class: 'num' }, r.goodput_rps < 0 ? '–' : r.goodput_rps.toFixed(2))] : []),
      h('td', { class: 'num' }, r.cost < 0 ? '–' : Math.round(100 * r.cost) + '%'),
      h('td', { class: 'num' }, ms(r.ttft_p50_ms, r.ttft_p99_ms)), h('td', { class: 'num' }, ms(r.itl_p50_ms, r.itl_p99_ms)),
      h('td', null, badge(r.outcome.replace('_', ' '), OUTCOME_BADGE[r.outcome])),
      h('td', null, r.certify_audit ? h('a', { href: `#/audits/${Number(r.certify_audit)}` }, `audit ${r.certify_audit}`) : '–'),
      h('td', null, r.evidence || '')))));
}
