// A series' timeline (audit/history.hpp): per condition, one chart of its identical rate over
// the audits, with interval bands, annotations at fingerprint changes and classified steps, a
// tooltip with each audit's identity, click to open an audit, drag to zoom, and cursors and zoom
// synced; its transitions beneath.
import { makeChart, markerPlugin } from './charts.js';
import { WHOLE, auditLink, badge, h, machineText, put, short, state, table, when } from './dom.js';

// Fingerprint changes (explained or not), classified steps and invalid audits, as chart marks.
function seriesMarks(tl) {
  const marks = [];
  tl.forEach((a, i) => {
    const t = a.transition;
    if (t && (t.kind !== 'unchanged' || t.changed_fields.length)) {
      const color = t.kind === 'unchanged' || t.kind === 'explained' ? '#1f4e79' : t.kind === 'unexplained_step' ? '#c62828' : '#9a6700';
      const label = t.changed_fields.length ? `${t.kind === 'unchanged' ? 'fingerprint' : t.classification}: ${t.changed_fields.join(', ')}` : t.classification;
      marks.push({ x: i, label, color, row: marks.length % 2 });
    }
    if (!a.valid) marks.push({ x: i, label: 'invalid', color: '#c62828', row: 2 });
  });
  return marks;
}

// What the tooltip says of audit `a` for condition `cond`.
function tipContent(a, cond) {
  const f = a.fingerprint.after || a.fingerprint.before || {};
  const c = a.conditions.find((k) => k.condition === cond);
  return [h('b', null, `audit #${a.audit} · ${when(a.time)}`),
    h('div', null, c ? `logit ${c.logit_identical}/${c.n}, token ${c.token_identical}/${c.n}` : 'condition not in this audit'),
    h('div', null, 'build: ', f.build_info || '–'), h('div', null, 'model: ', f.model || '–', ' ', short(f.model_sha256, 12)),
    h('div', null, 'quantisation: ', f.model_ftype || '–', ', slots ', f.total_slots ?? '–'),
    h('div', { class: 'mono' }, 'settings ', short(f.generation_settings_hash, 12), ' canary ', short(f.canary && f.canary.logit_digest, 12)),
    h('div', null, 'machine: ', machineText(f.machine)),
    a.transition ? h('div', null, a.transition.sentence) : null, a.valid ? null : h('div', { class: 'error' }, a.invalid_reason)];
}

// The rates and their intervals of one condition, audit by audit (null where it did not run).
function conditionData(tl, cond) {
  const pick = (a, f) => { const c = a.conditions.find((k) => k.condition === cond); return c ? f(c) : null; };
  return [tl.map((_, i) => i),
    tl.map((a) => pick(a, (c) => c.logit_rate)), tl.map((a) => pick(a, (c) => c.logit_interval && c.logit_interval[1])), tl.map((a) => pick(a, (c) => c.logit_interval && c.logit_interval[0])),
    tl.map((a) => pick(a, (c) => c.token_rate)), tl.map((a) => pick(a, (c) => c.token_interval && c.token_interval[1])), tl.map((a) => pick(a, (c) => c.token_interval && c.token_interval[0]))];
}

// The hooks of one chart: the tooltip of the audit under the mouse, and the zoom passed to the
// charts of the same series.
function seriesHooks(tl, cond, view, linked) {
  return {
    setCursor: [(u) => {
      const i = u.cursor.idx;
      // The synced charts move their cursors along; only the chart under the mouse tells.
      if (!view.hovering || i === null || i === undefined || !tl[i]) { view.tip.classList.remove('on'); return; }
      put(view.tip, tipContent(tl[i], cond));
      view.tip.classList.add('on');
      // Beside the cursor, on the side with room.
      const left = u.valToPos(i, 'x') + u.over.offsetLeft;
      view.tip.style.left = (left > view.box.clientWidth / 2 ? left - view.tip.offsetWidth - 12 : left + 12) + 'px';
      view.tip.style.top = (u.over.offsetTop + 8) + 'px';
    }],
    setScale: [(u, key) => {
      if (key !== 'x' || linked.syncing) return;
      linked.syncing = true;
      for (const other of linked.group) if (other !== u) other.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
      linked.syncing = false;
    }],
  };
}

// A click (not a drag) opens the audit under the cursor; a double click zooms out, so a click
// waits a moment to be sure it is not one.
function openOnClick(plot, tl, view) {
  let down = null;
  plot.over.addEventListener('mousedown', (ev) => { down = ev.clientX; });
  plot.over.addEventListener('mouseenter', () => { view.hovering = true; });
  plot.over.addEventListener('mouseleave', () => { view.hovering = false; view.tip.classList.remove('on'); });
  let pending = null;
  plot.over.addEventListener('click', (ev) => {
    if (down !== null && Math.abs(ev.clientX - down) > 3) return;
    const i = plot.cursor.idx;
    if (i === null || i === undefined || !tl[i]) return;
    clearTimeout(pending);
    pending = setTimeout(() => { location.hash = '#/audits/' + Number(tl[i].audit); }, 300);
    state.timers.push(pending);
  });
  plot.over.addEventListener('dblclick', () => clearTimeout(pending));
}

function conditionChart(section, tl, cond, index, marks, linked) {
  const view = { tip: h('div', { class: 'tip' }), hovering: false, box: null };
  const { plot, box } = makeChart(`series:${index}:${cond}`, section, {
    height: 190, title: `${cond}: identical rate`,
    // Half an audit of room at each end, once: a padded bound is not a whole number.
    scales: { x: { time: false, range: (u, min, max) => [Number.isInteger(min) ? min - 0.5 : min, Number.isInteger(max) ? max + 0.5 : max] }, y: { range: [0, 1.05] } },
    axes: [{ label: 'audit', incrs: WHOLE, values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) && tl[t] ? '#' + tl[t].audit : '')) },
      { label: 'identical', values: (u, ticks) => ticks.map((t) => Math.round(t * 100) + '%') }],
    series: [{ label: 'audit', value: (u, v) => (v === null || !tl[v] ? '–' : '#' + tl[v].audit) },
      { label: 'logit', stroke: '#1f4e79', width: 2, points: { show: true, size: 6 } },
      { label: 'logit high', stroke: 'transparent', points: { show: false } }, { label: 'logit low', stroke: 'transparent', points: { show: false } },
      { label: 'token', stroke: '#e67800', width: 2, points: { show: true, size: 6 } },
      { label: 'token high', stroke: 'transparent', points: { show: false } }, { label: 'token low', stroke: 'transparent', points: { show: false } }],
    bands: [{ series: [2, 3], fill: 'rgba(31,78,121,.15)' }, { series: [5, 6], fill: 'rgba(230,120,0,.15)' }],
    legend: { show: true, live: true },
    cursor: { sync: { key: 'series-' + index }, drag: { x: true, y: false }, y: false },
    plugins: [markerPlugin(marks), { hooks: seriesHooks(tl, cond, view, linked) }],
  }, conditionData(tl, cond));
  view.box = box;
  box.append(view.tip);
  box.dataset.audits = tl.map((a) => a.audit).join(',');
  openOnClick(plot, tl, view);
  linked.group.push(plot);
}

export function renderSeries(container, series, index) {
  const tl = series.timeline;
  const section = h('section', { 'data-series': series.name },
    h('h2', null, series.name, ' ', badge(series.state, series.state === 'stable' ? 'valid' : series.state === 'unstable' ? 'invalid' : 'flagged')),
    h('p', { class: 'muted' }, `${series.audits_total} audits; shown: the newest ${tl.length}. Segments: `,
      series.segments.map((s) => `#${s.first_audit}–#${s.last_audit} (${s.audits}${s.opened_by.length ? ', opened by ' + s.opened_by.join(', ') : ''})`).join('; ') || '–'));
  container.append(section);
  if (!tl.length) { section.append(h('p', null, 'No audits yet.')); return; }
  const marks = seriesMarks(tl);
  state.charts['marks:' + index] = marks;
  const conditions = [];
  for (const a of tl) for (const c of a.conditions) if (!conditions.includes(c.condition)) conditions.push(c.condition);
  const linked = { group: [], syncing: false };
  for (const cond of conditions) conditionChart(section, tl, cond, index, marks, linked);
  section.append(h('p', { class: 'muted' }, 'Drag across a chart to zoom (all charts follow); double-click to zoom out; click a point to open its audit. Bands: Jeffreys intervals at ',
    String(series.thresholds ? series.thresholds.confidence : ''), '.'));
  const changes = tl.filter((a) => a.transition && (a.transition.kind !== 'unchanged' || a.transition.changed_fields.length));
  if (changes.length)
    section.append(h('h3', null, 'Transitions'), table(['audit', 'classification', 'what'], changes.map((a) => h('tr', null,
      h('td', null, auditLink(a.audit)), h('td', null, a.transition.classification), h('td', null, a.transition.sentence)))));
}
