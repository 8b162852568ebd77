// #/audits: the audits, filtered and paged, with live progress while any is running.
import { tokenFor, api } from './api.js';
import { FINAL, STATUSES, auditLink, badge, h, put, short, state, when } from './dom.js';

function statusCell(a) {
  const p = a.progress;
  return h('td', null, badge(a.status),
    FINAL.has(a.status) && a.status === 'done' ? null : h('div', null, h('progress', { max: p.total || 1, value: p.done }),
      h('span', { class: 'muted' }, `${p.done}/${p.total}`, p.failed ? `, ${p.failed} failed` : '')));
}
function resultCell(a) {
  if (!a.result) return h('td', { class: 'muted' }, FINAL.has(a.status) ? 'no findings' : '–');
  return h('td', { class: 'chips' },
    a.result.valid ? badge('valid') : h('span', { title: a.result.invalid_reason }, badge('invalid')),
    a.result.predictions.map((p) => badge(`${p.id} ${p.outcome}`, p.outcome)));
}

// #/audits?status=&tag=&before=&limit=
export async function pageAudits(main, q) {
  await tokenFor(false);
  const params = new URLSearchParams();
  for (const k of ['status', 'tag', 'before', 'limit']) if (q.get(k)) params.set(k, q.get(k));
  const data = await api('/v1/audits?' + params);
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'any'),
    STATUSES.map((s) => h('option', { value: s, selected: q.get('status') === s }, s)));
  const tag = h('input', { name: 'tag', value: q.get('tag') || '', placeholder: 'any tag', size: 12 });
  const limit = h('select', { name: 'limit' }, [10, 25, 50, 100].map((n) =>
    h('option', { value: n, selected: String(q.get('limit') || 50) === String(n) }, n)));
  const filters = h('form', {
    class: 'filters',
    onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (status.value) p.set('status', status.value);
      if (tag.value) p.set('tag', tag.value);
      if (limit.value !== '50') p.set('limit', limit.value);
      location.hash = '#/audits?' + p;
    },
  }, h('label', null, 'Status', status), h('label', null, 'Tag', tag), h('label', null, 'Per page', limit),
  h('button', { type: 'submit' }, 'Filter'));

  const body = h('tbody');
  const fill = (audits) => put(body, ...audits.map((a) => h('tr', { 'data-audit': a.id },
    h('td', null, auditLink(a.id)), statusCell(a),
    h('td', null, a.backends.join(', ')),
    h('td', { class: 'chips' }, a.tags.map((t) => badge(t, 'tag'))),
    resultCell(a),
    h('td', { class: 'mono' }, short(a.predictions.hash, 10)),
    h('td', null, when(a.created_at)),
    h('td', null, a.schedule ? h('a', { href: '#/schedules/' + Number(a.schedule) }, 'schedule ' + a.schedule) : ''))));
  fill(data.audits);
  const pager = h('div', { class: 'pager' });
  if (q.get('before')) {
    const first = new URLSearchParams(params);
    first.delete('before');
    pager.append(h('a', { href: '#/audits?' + first, 'data-testid': 'first-page' }, '« newest'));
  }
  if (data.next) {
    const next = new URLSearchParams(params);
    next.set('before', new URLSearchParams(data.next.split('?')[1]).get('before'));
    pager.append(h('a', { href: '#/audits?' + next, 'data-testid': 'next-page' }, 'older »'));
  }
  put(main, h('h1', null, 'Audits'), filters,
    data.audits.length ? h('table', { 'data-testid': 'audits' },
      h('thead', null, h('tr', null, ['id', 'status', 'backends', 'tags', 'validity & predictions', 'predictions hash', 'created', ''].map((x) => h('th', null, x)))),
      body) : h('p', { class: 'muted' }, 'No audits match. ', h('a', { href: '#/submit' }, 'Submit one.')),
    pager);
  // Live progress while any audit on the page is not final.
  const mine = state.render;
  const refresh = async () => {
    if (mine !== state.render) return;
    const again = await api('/v1/audits?' + params).catch(() => null);
    if (!again || mine !== state.render) return;
    fill(again.audits);
    if (again.audits.some((a) => !FINAL.has(a.status))) state.timers.push(setTimeout(refresh, 1500));
  };
  if (data.audits.some((a) => !FINAL.has(a.status))) state.timers.push(setTimeout(refresh, 1500));
}
