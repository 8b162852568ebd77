// A certify job's certificate (audit/certify.hpp, docs/certify.md): a row per family (tested, the
// widths the server reported, the 95% bound), then the counterexamples, smallest first, each
// linked to its run, whose page draws the batch width at every decode step.
import { badge, h, num, table } from './dom.js';

const STATUS_BADGE = { passed: 'identical', refuted: 'diverged', not_tested: 'undecided', not_planned: 'undecided' };
const OUTCOME_BADGE = { certified: 'identical', refuted: 'diverged', incomplete: 'undecided', invalid: 'invalid' };

function widthText(f) {
  const widths = f.server_width_max < 0 ? null
    : f.server_width_min === f.server_width_max ? f.server_width_max.toFixed(2) : `${f.server_width_min.toFixed(2)}–${f.server_width_max.toFixed(2)}`;
  const cache = f.reused_tokens_max >= 0 ? `cache served up to ${f.reused_tokens_max} tokens` : null;
  return [widths, cache].filter(Boolean).join('; ') || '–';
}

function familyTable(cert) {
  return table(['family', 'status', 'compared', 'moved', 'in flight (client)', 'batch width (server)', '95% bound', 'note'],
    cert.families.map((f) => h('tr', { 'data-family': f.family }, h('td', null, f.family),
      h('td', null, badge(f.status.replace('_', ' '), STATUS_BADGE[f.status])), h('td', { class: 'num' }, f.compared),
      h('td', { class: 'num' }, f.divergent), h('td', { class: 'num' }, f.client_width_max > 0 ? f.client_width_max : '–'),
      h('td', null, widthText(f)), h('td', { class: 'num' }, f.status === 'passed' && f.bound95 >= 0 ? f.bound95.toFixed(3) : '–'),
      h('td', null, f.note || ''))));
}

function counterexampleRow(x, i, run, id) {
  const schedule = x.shared_prefix > 0 ? `warm-up then probe sharing ${x.shared_prefix} tokens, cache served ${x.reused_tokens >= 0 ? x.reused_tokens : '?'}`
    : x.requests > 1 ? `${x.client_width} at once, server width ${x.server_width >= 0 ? x.server_width.toFixed(2) : '?'}${x.batched ? '' : ' (not batched)'}` : 'alone';
  const step = x.step_width >= 0 ? `width ${x.step_width}${x.step_width_before >= 0 ? ` (was ${x.step_width_before})` : ''}${x.step_events ? ', ' + x.step_events : ''}` : '–';
  return h('tr', { 'data-counterexample': i + 1 }, h('td', { class: 'num' }, i + 1), h('td', null, x.family),
    h('td', null, `${x.condition}: ${schedule}${x.seeded ? ', seeded' : ''}`),
    h('td', null, `token ${x.first_difference}` + (x.first_token_difference >= 0 ? ` (a token changed at ${x.first_token_difference})` : '')),
    h('td', { class: 'num' }, num(x.max_abs_delta)), h('td', null, step),
    h('td', null, run ? h('a', { href: `#/audits/${id}/runs/${Number(run.id)}` }, `run ${run.id}`) : '–'));
}

export function render({ id, report, runs }) {
  const cert = report.certificate;
  if (!cert) return null;
  const runOf = (x) => runs.runs.find((r) => r.group === x.group && r.request === x.request);
  return h('section', { 'data-testid': 'certificate' },
    h('h2', null, `Certificate: '${cert.claim}' on ${cert.backend} `, badge(cert.outcome, OUTCOME_BADGE[cert.outcome])),
    h('p', null, cert.sentence),
    h('p', { class: 'muted' }, `Sized from ${cert.shape_source || "the job's settings"}: slots ${cert.shape.slots}, n_batch ${cert.shape.n_batch}, n_ubatch ${cert.shape.n_ubatch}, a slot's context ${cert.shape.n_ctx}; identity at the ${cert.level} level.`),
    familyTable(cert),
    cert.counterexamples.length ? [h('h3', null, `Counterexamples (${cert.counterexamples_total}, smallest first)`),
      table(['#', 'family', 'schedule', 'first difference', 'max |Δ|', 'decode step there', 'run'],
        cert.counterexamples.map((x, i) => counterexampleRow(x, i, runOf(x), id))),
      h('p', { class: 'muted' }, 'Each one as a script (curl and sh) to run against the server: logitaudit counterexamples DB --job ' + id + ' --out DIR.')] : null);
}
