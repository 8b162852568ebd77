// #/schedules and #/schedules/{id}: the nightly audits, and one schedule's timeline; #/series: the
// series the filters pick.
import { api, tokenFor } from './api.js';
import { h, meta, put, table, when } from './dom.js';
import { renderSeries } from './series.js';

// #/schedules
export async function pageSchedules(main) {
  await tokenFor(false);
  const data = await api('/v1/schedules');
  put(main, h('h1', null, 'Schedules'), data.schedules.length
    ? table(['id', 'cron', 'timezone', 'enabled', 'next fire', 'last fire', 'backends', 'tags'], data.schedules.map((s) => h('tr', null,
      h('td', null, h('a', { href: '#/schedules/' + Number(s.id) }, 'schedule ' + s.id)), h('td', { class: 'mono' }, s.cron), h('td', null, s.timezone),
      h('td', null, s.enabled ? 'yes' : 'no'),
      h('td', null, s.next_fire_unix ? when(new Date(s.next_fire_unix * 1000).toISOString()) : '–'),
      h('td', null, s.last_fire_unix ? when(new Date(s.last_fire_unix * 1000).toISOString()) : '–'),
      h('td', null, (s.spec.backends || []).map((b) => (typeof b === 'string' ? b : b.name)).join(', ')),
      h('td', null, (s.spec.tags || []).join(', ')))))
    : h('p', { class: 'muted' }, 'No schedules. POST /v1/schedules or `logitaudit schedule add` creates one.'));
}

// #/schedules/{id}
export async function pageSchedule(main, id) {
  await tokenFor(false);
  const [s, timeline] = await Promise.all([api(`/v1/schedules/${id}`), api(`/v1/schedules/${id}/timeline`)]);
  put(main, h('h1', null, `Schedule ${s.id}`),
    meta([['cron', h('span', { class: 'mono' }, `${s.cron} (${s.timezone})`)], ['enabled', s.enabled ? 'yes' : 'no'], ['missed fires', s.missed],
      ['next fire', s.next_fire_unix ? when(new Date(s.next_fire_unix * 1000).toISOString()) : '–']]));
  if (!timeline.series.length) main.append(h('p', { class: 'muted' }, 'It has fired no audit yet.'));
  timeline.series.forEach((series, i) => renderSeries(main, series, i));
}

// #/series?backend=&spec_hash=&schedule=
export async function pageSeries(main, q) {
  await tokenFor(false);
  const p = new URLSearchParams();
  for (const k of ['backend', 'spec_hash', 'schedule', 'audits']) if (q.get(k)) p.set(k, q.get(k));
  const data = await api('/v1/series?' + p);
  put(main, h('h1', null, 'Series'), h('p', { class: 'muted' }, p.toString() ? 'Filtered by ' + p.toString().replace(/&/g, ', ') : 'Every series.'));
  data.series.forEach((series, i) => renderSeries(main, series, i));
}

