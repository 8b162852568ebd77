// The fingerprints of each backend before and after the audit, with the machine each names.
import { h, machineText, short, table, when } from './dom.js';

export const late = true;  // a long table: after the charts have laid out the page

export function render({ fps }) {
  return h('section', null, h('h2', null, 'Fingerprints'),
    table(['backend', 'phase', 'taken', 'build', 'model', 'model sha256', 'slots', 'n_ctx', 'canary', 'machine'], fps.fingerprints.map((f) => h('tr', null,
      h('td', null, f.backend), h('td', null, f.phase), h('td', null, when(f.taken_at)), h('td', null, f.build_info), h('td', null, f.model),
      h('td', { class: 'mono' }, short(f.model_sha256, 16) || '–'), h('td', { class: 'num' }, f.total_slots ?? '–'), h('td', { class: 'num' }, f.n_ctx ?? '–'),
      h('td', { class: 'mono' }, short(f.canary && f.canary.logit_digest, 16) || '–'),
      h('td', { 'data-testid': 'machine' }, machineText(f.machine))))));
}
