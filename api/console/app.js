// The logitaudit console: a page per resource of the public REST API, nothing else, as ES modules
// the daemon serves as they are (no bundler). This one routes #/... to its page; dom.js holds the
// elements and the state, api.js the API, charts.js uPlot's charts, page-*.js the pages, and
// audit-*.js the parts of an audit's page, one per analysis of its findings.
import { ApiError, api, showAuth } from './api.js';
import { chartWidth, destroyCharts, stopTimers } from './charts.js';
import { $, h, put, state } from './dom.js';
import { pageAudit } from './page-audit.js';
import { pageAudits } from './page-audits.js';
import { pageCompare } from './page-compare.js';
import { pageRun } from './page-run.js';
import { pageSchedule, pageSchedules, pageSeries } from './page-schedules.js';
import { pageSubmit } from './page-submit.js';

function notFound(main, why) {
  put(main, h('h1', null, 'Not found'), h('p', { class: 'error', 'data-testid': 'not-found' }, why),
    h('p', null, h('a', { href: '#/audits' }, '← the audits')));
}
function showError(main, e) {
  put(main, h('h1', null, 'Something went wrong'), h('p', { class: 'error' }, e.message || String(e)),
    h('p', null, h('a', { href: '#/audits' }, '← the audits')));
}
async function route() {
  stopTimers();
  destroyCharts();
  const mine = ++state.render;
  // Each navigation renders into a new <main>: a page still loading for an earlier one
  // writes into a detached element and cannot mix into this one. Its number tells a reader
  // (the browser tests) which render a 'ready' belongs to: the page before a click is ready too.
  const main = h('main', { id: 'main', 'data-state': 'loading', 'data-render': String(mine) });
  $('#main').replaceWith(main);
  const raw = location.hash.slice(1) || '/audits';
  const [path, qs = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const q = new URLSearchParams(qs);
  const id = (s) => (/^[1-9][0-9]{0,17}$/.test(s) ? s : null);
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === (parts[0] || 'audits'));
  try {
    if (!state.info) { state.info = await api('/v1/info'); showAuth(); }
    if (parts[0] === 'audits' && parts.length === 1) await pageAudits(main, q);
    else if (parts[0] === 'audits' && parts.length === 2 && id(parts[1])) await pageAudit(main, parts[1]);
    else if (parts[0] === 'audits' && parts.length === 4 && parts[2] === 'runs' && id(parts[1]) && id(parts[3])) await pageRun(main, parts[1], parts[3]);
    else if (parts[0] === 'submit' && parts.length === 1) await pageSubmit(main);
    else if (parts[0] === 'schedules' && parts.length === 1) await pageSchedules(main);
    else if (parts[0] === 'schedules' && parts.length === 2 && id(parts[1])) await pageSchedule(main, parts[1]);
    else if (parts[0] === 'series' && parts.length === 1) await pageSeries(main, q);
    else if (parts[0] === 'compare' && parts.length === 1) await pageCompare(main, q);
    else notFound(main, 'There is no page at #' + raw + '.');
  } catch (e) {
    if (mine !== state.render) return;
    if (e instanceof ApiError && e.status === 404) notFound(main, e.message);
    else showError(main, e);
  }
  if (mine === state.render) main.dataset.state = 'ready';
}

window.addEventListener('hashchange', route);
window.addEventListener('resize', () => {
  for (const [name, c] of Object.entries(state.charts))
    if (c.plot && !name.startsWith('hist:')) c.plot.setSize({ width: chartWidth(c.plot.root.parentElement.parentElement), height: c.plot.height });
});
route();
