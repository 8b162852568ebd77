// #/audits/{id}: an audit's head (its status, with live progress while it runs), then each of its
// parts: the answer before the evidence, the tables, the charts, and the long tables last. The
// parts are listed once, in the order they stand on the page; each is a module with render(ctx)
// (an element, or null when the audit has nothing of the kind) and, for a chart, draw(ctx, el)
// once it is on the page.
import { api, tokenFor } from './api.js';
import * as advice from './audit-advice.js';
import * as attribution from './audit-attribution.js';
import * as batching from './audit-batching.js';
import * as certificate from './audit-certificate.js';
import * as divergence from './audit-divergence.js';
import * as fingerprints from './audit-fingerprints.js';
import * as frontier from './audit-frontier.js';
import * as load from './audit-load.js';
import * as migration from './audit-migration.js';
import * as predictions from './audit-predictions.js';
import * as runs from './audit-runs.js';
import * as searches from './audit-searches.js';
import * as tallies from './audit-tallies.js';
import * as verdict from './audit-verdict.js';
import { FINAL, badge, h, meta, put, state, when } from './dom.js';

const PARTS = [verdict, advice, certificate, load, frontier, migration, tallies, predictions, searches, attribution, batching, divergence,
  fingerprints, runs];

function head(job, onCancel) {
  return [
    h('h1', null, `Audit #${job.id} `, badge(job.status)),
    FINAL.has(job.status) ? null : h('p', null, h('progress', { max: job.progress.total || 1, value: job.progress.done }),
      `${job.progress.done}/${job.progress.total} requests`, job.progress.failed ? `, ${job.progress.failed} failed` : ''),
    meta([
      ['backends', job.backends.join(', ')],
      ['tags', job.tags.join(', ') || '–'],
      ['created', when(job.created_at)], ['started', when(job.started_at)], ['finished', when(job.finished_at)],
      ['spec hash', h('span', { class: 'mono' }, job.spec_hash, ' ', h('a', { href: `#/series?spec_hash=${encodeURIComponent(job.spec_hash)}&backend=${encodeURIComponent(job.backends[0] || '')}` }, 'series'))],
      ['predictions', h('span', { 'data-testid': 'prediction-hash' }, h('span', { class: 'mono' }, job.predictions.hash), ` registered ${when(job.predictions.registered_at)}, before the first request`)],
      job.schedule ? ['schedule', h('a', { href: '#/schedules/' + Number(job.schedule) }, 'schedule ' + job.schedule)] : null,
      job.error ? ['error', h('span', { class: 'error' }, job.error)] : null,
    ]),
    h('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/compare?a=${job.id}&b=${Number(ev.target.elements.b.value)}`; } },
      h('label', null, 'Compare baselines with audit', h('input', { name: 'b', type: 'number', min: 1, required: true, size: 6 })),
      h('button', { type: 'submit' }, 'Compare'),
      FINAL.has(job.status) ? null : h('button', { type: 'button', onclick: onCancel }, 'Cancel'))];
}

// The audit's head until it ends (long polls: the answer comes as soon as more requests are
// done, or when it ends); null when another page was asked for meanwhile.
async function followed(main, id) {
  let job = await api(`/v1/audits/${id}`);
  const box = h('div');
  const show = () => put(box, head(job, async () => {
    await tokenFor(true);
    job = await api(`/v1/audits/${job.id}/cancel`, { method: 'POST' });
    show();
  }));
  show();
  put(main, box);
  const mine = state.render;
  while (mine === state.render && !FINAL.has(job.status)) {
    job = await api(`/v1/audits/${id}?wait=20&done=${job.progress.done}`);
    if (mine !== state.render) return null;
    show();
  }
  return job;
}

export async function pageAudit(main, id) {
  await tokenFor(false);
  const job = await followed(main, id);
  if (!job) return;
  if (!job.result) {
    main.append(h('p', { class: 'muted' }, `This audit has no findings (${job.status}).`));
    return;
  }
  const [report, runList, bursts, fps] = await Promise.all([
    api(`/v1/audits/${id}/report`), api(`/v1/audits/${id}/runs`), api(`/v1/audits/${id}/bursts`), api(`/v1/audits/${id}/fingerprints`)]);
  state.report = report;
  const ctx = { id, job, report, runs: runList, bursts, fps };
  const shown = PARTS.map((part) => ({ part, el: part.render(ctx) })).filter((p) => p.el);
  // The charts before the long tables: each chart lays out what is on the page so far.
  main.append(...shown.filter((p) => !p.part.late).map((p) => p.el));
  for (const p of shown) if (p.part.draw) p.part.draw(ctx, p.el);
  main.append(...shown.filter((p) => p.part.late).map((p) => p.el));
}
