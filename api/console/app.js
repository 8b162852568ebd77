// The logitaudit console: a page per resource of the public REST API, nothing else. Every
// string from the server reaches the page as text (textContent, never markup); the token is
// kept in this tab's sessionStorage and sent only as an Authorization header.
'use strict';
(() => {
  const state = { info: null, charts: {}, timers: [], render: 0 };
  window.__console = state;  // what each chart plots, for the tests and the curious

  const STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled', 'interrupted'];
  const FINAL = new Set(['done', 'failed', 'cancelled', 'interrupted']);
  // The verdict's topics as the text report labels them, and the answers that warn.
  const VERDICT_LABELS = { solo: 'Solo', concurrency: 'Concurrency', cache_reuse: 'Cache reuse', seeded_sampling: 'Seeded', comparator: 'Comparator', undecided: 'Undecided' };
  const VERDICT_BAD = new Set(['moves', 'mixed', 'vacuous', 'invalid', 'unproven', 'open']);
  const TOKEN_KEY = 'logitaudit.token';

  // ---------------------------------------------------------------- DOM

  // h('a', {href: '#/x', class: 'y'}, 'text', child, [more]): an element whose children are
  // nodes or text. Text is always a text node, so server strings cannot become markup.
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'value' && (tag === 'input' || tag === 'textarea' || tag === 'select')) el.value = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const $ = (sel, root = document) => root.querySelector(sel);
  // el.replaceChildren without the nulls of conditional parts (it would print "null").
  const put = (el, ...kids) => el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];  // axis steps of positions and audits
  const badge = (text, kind) => h('span', { class: 'badge ' + (kind || text) }, text);
  const pct = (k, n) => (n ? Math.round((100 * k) / n) + '%' : '–');
  const cell = (k, n) => `${k}/${n} (${pct(k, n).padStart(4)})`;
  // The machine a fingerprint names, in one line: CPU, cores, the ggml variant, devices, labels.
function machineText(m) {
  if (!m || !Object.keys(m).length) return '–';
  const parts = [m.cpu_model, m.logical_cores && `${m.logical_cores} cores`, m.ggml_cpu_variant && `ggml ${m.ggml_cpu_variant}`,
    m.devices && m.devices !== 'none' && `devices ${m.devices}`];
  const shown = new Set(['cpu_model', 'logical_cores', 'ggml_cpu_variant', 'devices', 'cpu_vendor', 'arch', 'cpu_features', 'ggml_cpu_features', 'kernel']);
  for (const [k, v] of Object.entries(m)) if (!shown.has(k)) parts.push(`${k} ${v}`);
  return parts.filter(Boolean).join(', ');
}

const short = (s, n = 12) => (s && s.length > n ? s.slice(0, n) + '…' : s || '');
  const when = (s) => (s ? s.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '–');
  const num = (x, d = 3) => (x === null || x === undefined ? '–' : Number(x).toPrecision(d));
  const auditLink = (id) => h('a', { href: '#/audits/' + Number(id) }, '#' + Number(id));

  function table(headers, rows, cls) {
    return h('table', { class: cls },
      h('thead', null, h('tr', null, headers.map((x) => (typeof x === 'string' ? h('th', null, x) : x)))),
      h('tbody', null, rows));
  }
  function meta(pairs) {
    return h('dl', { class: 'meta' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
  }

  // ---------------------------------------------------------------- the API

  class ApiError extends Error {
    constructor(status, err) {
      super((err && err.message) || 'HTTP ' + status);
      this.status = status;
      this.code = err && err.code;
      this.field = err && err.field;
    }
  }
  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';

  function askToken(why) {
    const dialog = $('#token-dialog');
    $('#token-why').textContent = why;
    const input = $('input[name=token]', dialog);
    input.value = '';
    return new Promise((resolve, reject) => {
      dialog.addEventListener('close', () => {
        if (dialog.returnValue === 'ok' && input.value) {
          sessionStorage.setItem(TOKEN_KEY, input.value);
          showAuth();
          resolve();
        } else reject(new ApiError(401, { code: 'unauthorized', message: 'a token is needed and none was given' }));
      }, { once: true });
      dialog.showModal();
    });
  }

  async function api(path, { method = 'GET', body, text = false } = {}) {
    for (let attempt = 0; ; attempt++) {
      const headers = {};
      if (token()) headers.Authorization = 'Bearer ' + token();
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
      const raw = await res.text();
      if (res.status === 401 && attempt < 2) {
        sessionStorage.removeItem(TOKEN_KEY);
        await askToken(attempt ? 'That token was not accepted. Try another.' : 'This daemon needs a token for this.');
        continue;
      }
      if (!res.ok) {
        let err;
        try { err = JSON.parse(raw).error; } catch { err = { message: raw.slice(0, 300) }; }
        throw new ApiError(res.status, err);
      }
      return text ? raw : JSON.parse(raw);
    }
  }

  // A token before the first request that needs one, so that no request is refused.
  async function tokenFor(write) {
    const a = state.info && state.info.auth;
    if (!a || token()) return;
    if (a.protect_reads || (write && a.tokens))
      await askToken(a.protect_reads ? 'This daemon protects its reads: prompts can be private.' : 'Submitting needs a token on this daemon.');
  }

  function showAuth() {
    const el = $('#auth');
    const a = state.info && state.info.auth;
    if (!a || !a.tokens) { put(el, h('span', null, 'no tokens configured')); return; }
    put(el, token() ? 'token set for this tab' : a.protect_reads ? 'token needed' : 'token needed to submit',
      token() ? h('button', { onclick: () => { sessionStorage.removeItem(TOKEN_KEY); showAuth(); } }, 'Forget') : null);
  }

  // ---------------------------------------------------------------- charts (uPlot)

  function destroyCharts() {
    for (const c of Object.values(state.charts)) if (c.plot) c.plot.destroy();
    state.charts = {};
  }
  function stopTimers() {
    for (const t of state.timers) clearTimeout(t);
    state.timers = [];
  }
  function chartWidth(el) { return Math.max(320, (el.clientWidth || 900) - 14); }

  // Vertical lines with labels at x values: [{x, label, color}].
  function markerPlugin(marks) {
    return {
      hooks: {
        draw: [(u) => {
          const { ctx, bbox } = u;
          ctx.save();
          ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
          for (const m of marks) {
            const x = Math.round(u.valToPos(m.x, 'x', true));
            if (x < bbox.left || x > bbox.left + bbox.width) continue;
            ctx.strokeStyle = m.color;
            ctx.fillStyle = m.color;
            ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([5 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, bbox.top);
            ctx.lineTo(x, bbox.top + bbox.height);
            ctx.stroke();
            // The label on the side of the line with room.
            const right = x > bbox.left + bbox.width / 2;
            ctx.textAlign = right ? 'right' : 'left';
            ctx.fillText(m.label, x + (right ? -4 : 4) * devicePixelRatio, bbox.top + (12 + 13 * (m.row || 0)) * devicePixelRatio);
          }
          ctx.restore();
        }],
      },
    };
  }

  // A log axis labels decades only ("1e-7"); the ticks between them stay unlabelled, so that a
  // narrow chart's labels never lie on top of each other.
  function decadeLabels(u, ticks) {
    return ticks.map((t) => {
      if (!t) return '';
      const e = Math.log10(t);
      return Math.abs(e - Math.round(e)) < 1e-9 ? '1e' + Math.round(e) : '';
    });
  }
  state.decadeLabels = decadeLabels;

  function makeChart(name, container, opts, data) {
    const box = h('div', { class: 'chart ' + name.split(':')[0], 'data-chart': name });
    container.append(box);
    // Reading the container's width lays the page out: only when the chart has no width.
    const plot = new uPlot(Object.assign({ height: 220 }, opts, { width: opts.width || chartWidth(container) }), data, box);
    state.charts[name] = { plot, data };
    return { plot, box };
  }

  // ---------------------------------------------------------------- pages

  function notFound(main, why) {
    put(main, h('h1', null, 'Not found'), h('p', { class: 'error', 'data-testid': 'not-found' }, why),
      h('p', null, h('a', { href: '#/audits' }, '← the audits')));
  }
  function showError(main, e) {
    put(main, h('h1', null, 'Something went wrong'), h('p', { class: 'error' }, e.message || String(e)),
      h('p', null, h('a', { href: '#/audits' }, '← the audits')));
  }

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
  async function pageAudits(main, q) {
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

  // #/submit
  async function pageSubmit(main) {
    await tokenFor(false);
    const [presets, backends] = await Promise.all([api('/v1/presets'), api('/v1/backends')]);
    const preset = h('select', { name: 'preset' }, presets.presets.map((p) => h('option', { value: p.name }, p.name)),
      h('option', { value: '' }, 'none: the overrides are the whole spec'));
    const checks = backends.backends.map((b, i) => h('label', null,
      h('input', { type: 'checkbox', name: 'backend', value: b.name, checked: i === 0 }), `${b.name} `, h('span', { class: 'muted' }, b.url)));
    const field = (name, label, attrs) => h('label', null, label, h('input', Object.assign({ name }, attrs)));
    const prompts = h('textarea', { name: 'prompts', placeholder: "one per line; empty: the preset's" });
    const extra = h('textarea', { name: 'extra', placeholder: '{"conditions": [...]} merged last' });
    const preview = h('pre', { 'data-testid': 'spec-preview' });
    const message = h('div');
    // The daemon validates (and names the field); the browser's own checks would hide that.
    const form = h('form', { 'data-testid': 'submit-form', novalidate: true },
      h('fieldset', null, h('legend', null, 'Preset'), h('label', null, 'Preset', preset),
        h('p', { class: 'muted' }, presets.presets.map((p) => `${p.name}: ${p.description || ''}`).join(' '))),
      h('fieldset', { class: 'checks' }, h('legend', null, 'Backends'),
        checks.length ? checks : h('p', { class: 'muted' }, 'No backends are configured (logitauditd --backend NAME=URL).')),
      h('fieldset', null, h('legend', null, 'Overrides'),
        h('div', { class: 'fields' },
          field('n_predict', 'Tokens per request (n_predict)', { type: 'number', min: 1, placeholder: 'preset' }),
          field('top_k', 'Top-k (n_probs)', { type: 'number', min: 1, placeholder: 'preset' }),
          field('temperature', 'Seeded temperature', { type: 'number', step: 'any', min: 0, placeholder: 'preset' }),
          field('seed', 'Seed', { type: 'number', min: 0, placeholder: 'preset' }),
          field('tags', 'Tags (comma-separated)', { type: 'text', placeholder: 'nightly, gpu-a' })),
        h('label', null, 'Prompts', prompts), h('label', null, 'Other spec members (JSON)', extra)),
      h('h3', null, 'The spec that will be sent'), preview, message,
      h('button', { type: 'submit', class: 'primary' }, 'Submit audit'));

    const spec = () => {
      const s = {};
      if (preset.value) s.preset = preset.value;
      s.backends = [...form.querySelectorAll('input[name=backend]:checked')].map((c) => c.value);
      for (const k of ['n_predict', 'top_k', 'seed']) {
        const v = form.elements[k].value;
        if (v !== '') s[k] = Number.isInteger(Number(v)) ? Number(v) : v;
      }
      if (form.elements.temperature.value !== '') s.temperature = Number(form.elements.temperature.value);
      const tags = form.elements.tags.value.split(',').map((t) => t.trim()).filter(Boolean);
      if (tags.length) s.tags = tags;
      const ps = prompts.value.split('\n').filter((p) => p.trim() !== '');
      if (ps.length) s.prompts = ps;
      if (extra.value.trim()) Object.assign(s, JSON.parse(extra.value));
      return s;
    };
    const update = () => {
      for (const el of form.querySelectorAll('.invalid')) el.classList.remove('invalid');
      try { preview.textContent = JSON.stringify(spec(), null, 2); } catch (e) { preview.textContent = 'Other spec members: ' + e.message; extra.classList.add('invalid'); }
    };
    form.addEventListener('input', update);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      put(message);
      let s;
      try { s = spec(); } catch (e) { put(message, h('p', { class: 'error' }, 'Other spec members: ' + e.message)); return; }
      try {
        await tokenFor(true);
        const job = await api('/v1/audits', { method: 'POST', body: s });
        location.hash = '#/audits/' + Number(job.id);
      } catch (e) {
        put(message, h('p', { class: 'error', 'data-testid': 'submit-error' }, e.field ? `${e.field}: ${e.message}` : e.message));
        const root = (e.field || '').split(/[.[]/)[0];
        const el = root && (form.elements[root] || (root === 'backends' ? checks[0] : null));
        if (el && el.classList) el.classList.add('invalid');
        else if (root) extra.classList.add('invalid');
      }
    });
    put(main, h('h1', null, 'Submit an audit'), form);
    update();
  }

  // How each backend's server writes logprobs (a rounding one qualifies "logit-identical") and
  // its path's newest selftest against seeded faults.
  function harnessBlock(report) {
    if (!report.resolution && !report.selftests) return null;
    return h('ul', { class: 'harness', 'data-testid': 'harness' }, report.backends.map((b) => {
      const r = (report.resolution || {})[b];
      const t = (report.selftests || {})[b];
      return h('li', null, h('strong', null, b), ': ', r ? r.describe : 'no logprob was read as text',
        r && !r.bit_exact ? [' ', badge('logit-identical here means equal as written', 'flagged')] : null, '; ',
        t ? [`harness power ${t.summary} (selftest ${t.id}) `, badge(t.passed ? 'passed' : 'missed', t.passed ? 'valid' : 'invalid')]
          : badge('no selftest of this path', 'flagged'));
    }));
  }

  function findingsTable(rows) {
    const flags = (t) => {
      const out = [];
      const own = t.flagged - (t.not_solo || 0) - (t.ineffective || 0);
      if (own > 0) out.push(`${own} ${t.flagged_as === 'not_reused' ? 'not reused' : 'not batched'}`);
      if (t.not_solo) out.push(`${t.not_solo} not solo`);
      if (t.ineffective) out.push(`${t.ineffective} ineffective`);
      return out;
    };
    const note = (t) => {
      if (t.control && t.n === 0 && t.flagged > 0) return `<- control: ${flags(t).join(', ')}, not counted`;
      if (t.control && t.logit_identical === 0 && t.token_identical > 0) {
        return `<- control: logits diverged, tokens identical in ${t.token_identical}/${t.n}`;
      }
      if (t.control) return t.logit_identical === 0 ? '<- control: diverged' : '<- CONTROL IDENTICAL';
      const apart = [];
      if (t.failed) apart.push(`${t.failed} failed`);
      if (t.flagged) apart.push(...flags(t));
      return apart.length ? `(${apart.join(', ')}, not counted)` : '';
    };
    return table(['condition', 'logit-ident', 'token-ident', ''], rows.map((t) => h('tr', { class: t.control ? 'control' : null, 'data-condition': t.condition },
      h('td', null, t.condition), h('td', null, cell(t.logit_identical, t.n)), h('td', null, cell(t.token_identical, t.n)),
      h('td', null, note(t)))), 'findings');
  }

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

  // #/audits/{id}
  async function pageAudit(main, id) {
    await tokenFor(false);
    let job = await api(`/v1/audits/${id}`);
    const head = h('div');
    const renderHead = () => put(head,
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
        FINAL.has(job.status) ? null : h('button', {
          type: 'button', onclick: async () => {
            await tokenFor(true);
            job = await api(`/v1/audits/${job.id}/cancel`, { method: 'POST' });
            renderHead();
          },
        }, 'Cancel')));
    renderHead();
    put(main, head);
    if (!FINAL.has(job.status)) {
      // Long polls: the answer comes as soon as more requests are done, or when it ends.
      const mine = state.render;
      while (mine === state.render && !FINAL.has(job.status)) {
        job = await api(`/v1/audits/${id}?wait=20&done=${job.progress.done}`);
        if (mine !== state.render) return;
        renderHead();
      }
    }
    if (!job.result) {
      main.append(h('p', { class: 'muted' }, `This audit has no findings (${job.status}).`));
      return;
    }
    const [report, runs, bursts, fps] = await Promise.all([
      api(`/v1/audits/${id}/report`), api(`/v1/audits/${id}/runs`), api(`/v1/audits/${id}/bursts`), api(`/v1/audits/${id}/fingerprints`)]);
    state.report = report;

    // The answer before the evidence: the verdict the report opens with (audit/verdict.hpp).
    const verdict = (report.verdict || []).length ? h('section', { 'data-testid': 'verdict' }, h('h2', null, 'Verdict'),
      h('dl', { class: 'meta verdict' }, report.verdict.map((l) => [h('dt', null, VERDICT_LABELS[l.topic] || l.topic),
        h('dd', { 'data-topic': l.topic, 'data-answer': l.answer, class: VERDICT_BAD.has(l.answer) ? 'bad' : null }, l.text)]))) : null;

    // A certify job's certificate (audit/certify.hpp, docs/certify.md): a row per family (tested,
    // the widths the server reported, the 95% bound), then the counterexamples, smallest first,
    // each linked to its run, whose page draws the batch width at every decode step.
    const cert = report.certificate;
    const STATUS_BADGE = { passed: 'identical', refuted: 'diverged', not_tested: 'undecided', not_planned: 'undecided' };
    const OUTCOME_BADGE = { certified: 'identical', refuted: 'diverged', incomplete: 'undecided', invalid: 'invalid' };
    const widthText = (f) => {
      const widths = f.server_width_max < 0 ? null
        : f.server_width_min === f.server_width_max ? f.server_width_max.toFixed(2) : `${f.server_width_min.toFixed(2)}–${f.server_width_max.toFixed(2)}`;
      const cache = f.reused_tokens_max >= 0 ? `cache served up to ${f.reused_tokens_max} tokens` : null;
      return [widths, cache].filter(Boolean).join('; ') || '–';
    };
    const runOf = (x) => runs.runs.find((r) => r.group === x.group && r.request === x.request);
    const certificate = cert ? h('section', { 'data-testid': 'certificate' },
      h('h2', null, `Certificate: '${cert.claim}' on ${cert.backend} `, badge(cert.outcome, OUTCOME_BADGE[cert.outcome])),
      h('p', null, cert.sentence),
      h('p', { class: 'muted' }, `Sized from ${cert.shape_source || "the job's settings"}: slots ${cert.shape.slots}, n_batch ${cert.shape.n_batch}, n_ubatch ${cert.shape.n_ubatch}, a slot's context ${cert.shape.n_ctx}; identity at the ${cert.level} level.`),
      table(['family', 'status', 'compared', 'moved', 'in flight (client)', 'batch width (server)', '95% bound', 'note'],
        cert.families.map((f) => h('tr', { 'data-family': f.family }, h('td', null, f.family),
          h('td', null, badge(f.status.replace('_', ' '), STATUS_BADGE[f.status])), h('td', { class: 'num' }, f.compared),
          h('td', { class: 'num' }, f.divergent), h('td', { class: 'num' }, f.client_width_max > 0 ? f.client_width_max : '–'),
          h('td', null, widthText(f)), h('td', { class: 'num' }, f.status === 'passed' && f.bound95 >= 0 ? f.bound95.toFixed(3) : '–'),
          h('td', null, f.note || '')))),
      cert.counterexamples.length ? [h('h3', null, `Counterexamples (${cert.counterexamples_total}, smallest first)`),
        table(['#', 'family', 'schedule', 'first difference', 'max |Δ|', 'decode step there', 'run'],
          cert.counterexamples.map((x, i) => {
            const r = runOf(x);
            const schedule = x.shared_prefix > 0 ? `warm-up then probe sharing ${x.shared_prefix} tokens, cache served ${x.reused_tokens >= 0 ? x.reused_tokens : '?'}`
              : x.requests > 1 ? `${x.client_width} at once, server width ${x.server_width >= 0 ? x.server_width.toFixed(2) : '?'}${x.batched ? '' : ' (not batched)'}` : 'alone';
            const step = x.step_width >= 0 ? `width ${x.step_width}${x.step_width_before >= 0 ? ` (was ${x.step_width_before})` : ''}${x.step_events ? ', ' + x.step_events : ''}` : '–';
            return h('tr', { 'data-counterexample': i + 1 }, h('td', { class: 'num' }, i + 1), h('td', null, x.family),
              h('td', null, `${x.condition}: ${schedule}${x.seeded ? ', seeded' : ''}`),
              h('td', null, `token ${x.first_difference}` + (x.first_token_difference >= 0 ? ` (a token changed at ${x.first_token_difference})` : '')),
              h('td', { class: 'num' }, num(x.max_abs_delta)), h('td', null, step),
              h('td', null, r ? h('a', { href: `#/audits/${id}/runs/${Number(r.id)}` }, `run ${r.id}`) : '–'));
          })),
        h('p', { class: 'muted' }, 'Each one as a script (curl and sh) to run against the server: logitaudit counterexamples DB --job ' + id + ' --out DIR.')] : null) : null;

    const findings = h('section', { 'data-testid': 'findings' }, h('h2', null, 'Findings'),
      report.valid ? null : h('div', { class: 'banner bad' }, report.invalid_reason),
      harnessBlock(report),
      h('h3', null, `Pooled over ${report.backends.length} backend(s)`), findingsTable(report.pooled),
      report.backends.length > 1 ? report.backends.map((b) => [h('h3', null, b), findingsTable(report.per_backend[b] || [])]) : null,
      h('ol', null, report.findings.map((s) => h('li', null, s))));

    const predictions = h('section', { 'data-testid': 'predictions' }, h('h2', null, 'Pre-registered predictions'),
      h('p', { class: 'muted' }, `Registered ${when(job.predictions.registered_at)} as `, h('span', { class: 'mono' }, job.predictions.hash), ', before the first request.'),
      table(['id', 'claim', 'level', 'expect', 'evidence', 'needed', 'result'], report.predictions.map((p) => h('tr', null,
        h('td', null, p.id), h('td', null, p.statement), h('td', null, p.level), h('td', null, p.expect),
        h('td', null, `${p.k}/${p.n}`, p.flagged ? ` (${p.flagged} counted apart)` : ''), h('td', null, Math.round(100 * p.at_least) + '%'),
        h('td', null, badge(p.outcome))))));

    const pctOf = (k, n) => (n ? `${k}/${n} (${Math.round((100 * k) / n)}%)` : '–');
    const decision = (d, p) => badge(d.replace('_', ' ').toUpperCase() + (d === 'different' ? ` p=${num(p, 2)}` : ''),
      d === 'same' ? 'identical' : d === 'different' ? 'diverged' : 'flagged');
    const searches = (report.searches || []).length ? h('section', { 'data-testid': 'searches' }, h('h2', null, 'Threshold search'),
      report.searches.map((s) => [
        h('h3', null, `${s.backend}, ${s.condition}: logit threshold ${s.logit_threshold ? 'C=' + s.logit_threshold : 'none found'}, token threshold ${s.token_threshold ? 'C=' + s.token_threshold : 'none found'}`),
        table(['width', 'trials', 'batched', 'logit-identical', '95% interval', 'logits', 'token-identical', 'tokens'], [
          h('tr', null, h('td', null, '1 (solo reference)'), h('td', null, '–'), h('td', null, '–'),
            h('td', null, pctOf(s.reference_logit_identical, s.reference_n)), h('td', null, '–'), h('td', null, ''),
            h('td', null, pctOf(s.reference_token_identical, s.reference_n)), h('td', null, '')),
          ...s.widths.map((w) => h('tr', { 'data-width': w.width }, h('td', { class: 'num' }, w.width), h('td', { class: 'num' }, w.trials),
            h('td', { class: 'num' }, w.batched_trials), h('td', null, pctOf(w.logit_identical, w.n)),
            h('td', null, w.n ? `${Math.round(100 * w.logit_interval[0])}–${Math.round(100 * w.logit_interval[1])}%` : '–'),
            h('td', null, decision(w.logit, w.logit_p)), h('td', null, pctOf(w.token_identical, w.n)), h('td', null, decision(w.token, w.token_p))))])])) : null;
    const frontier = (report.frontier || []).length ? h('section', { 'data-testid': 'frontier' }, h('h2', null, 'Frontier'),
      table(['configuration', 'flags', 'logit-identical under load', 'token-identical under load', 'batched', 'tokens/s', 'cost', 'reproducible'],
        report.frontier.map((r) => h('tr', { 'data-backend': r.backend }, h('td', null, r.backend),
          // The report's own words for the settings (findings written before they carried them: each setting by name).
          h('td', { class: 'mono' }, r.flags || (r.settings ? Object.entries(r.settings).map(([k, v]) => `${k}=${v}`).join(' ') : '–')),
          h('td', null, pctOf(r.load_logit_identical, r.load_n)), h('td', null, pctOf(r.load_token_identical, r.load_n)),
          h('td', { class: 'num' }, `${r.load_batched}/${r.load_n}`), h('td', { class: 'num' }, r.tokens_per_s === null ? '–' : r.tokens_per_s.toFixed(1)),
          h('td', { class: 'num' }, r.cost === null ? '–' : Math.round(100 * r.cost) + '%'),
          h('td', null, badge(r.reproducible ? 'yes' : 'no', r.reproducible ? 'identical' : 'diverged'), r.note ? ' ' + r.note : ''))))) : null;

    // The migration matrix (audit/migration.hpp): per model, a row and a column per backend; a cell
    // is the pair's streams of the same requests, solo | under load; the diagonal, each backend
    // under load against its own solo streams.
    const agreementText = (a) => {
      if (!a.n) return '–';
      let t = `${a.logit_identical}/${a.n}`;
      if (a.first_difference >= 0) t += ` from ${a.first_difference} by ${Number(a.max_abs_delta.toPrecision(2))}`;
      if (a.token_identical < a.n) t += `, tokens ${a.token_identical}/${a.n}`;
      return t;
    };
    const agreementBadge = (a) => badge(agreementText(a), !a.n ? 'undecided' : a.logit_identical === a.n ? 'identical' : 'diverged');
    const migration = (report.migration || []).length ? h('section', { 'data-testid': 'migration' }, h('h2', null, 'Migration matrix'),
      h('p', { class: 'muted' }, 'Logit-identical streams of the same requests, pair by pair: solo | under load, with where the first difference is and its size. The diagonal is each backend under load against its own solo streams.'),
      ...report.migration.map((m) => h('div', null, h('h3', null, m.model || 'one model'),
        table(['', ...m.backends], m.backends.map((a) => h('tr', { 'data-backend': a }, h('th', null, a),
          ...m.backends.map((b) => {
            const c = m.cells.find((x) => (x.a === a && x.b === b) || (x.a === b && x.b === a));
            if (!c) return h('td', null, '–');
            return a === b ? h('td', { 'data-pair': 'itself' }, 'itself: ', agreementBadge(c.load))
              : h('td', { 'data-pair': b }, agreementBadge(c.solo), ' | ', agreementBadge(c.load));
          }))))))) : null;

    const batching = h('section', { 'data-testid': 'batching' }, h('h2', null, 'Batching evidence'));
    const concurrent = report.pooled.filter((t) => t.batching && t.batching.bursts > 0);
    if (concurrent.length) {
      batching.append(table(['condition', 'width', 'bursts batched', 'server concurrency (median)', 'overlap (median)'],
        concurrent.map((t) => h('tr', null, h('td', null, t.condition), h('td', { class: 'num' }, t.batching.width),
          h('td', null, `${t.batching.batched}/${t.batching.bursts} `, badge(t.batching.batched === t.batching.bursts ? 'batched' : 'flagged')),
          h('td', null, t.batching.median_measured === null ? 'not measured' : `${t.batching.measured_by.replace(/_/g, ' ')} ${num(t.batching.median_measured)} of ${t.batching.expected}`),
          h('td', { class: 'num' }, Math.round(100 * t.batching.median_overlap) + '%')))),
      h('details', null, h('summary', null, `Every burst (${bursts.bursts.length})`),
        table(['condition', 'backend', 'width', 'launch spread', 'overlap', 'busy slots/decode', 'timed concurrency', 'batched', 'why'],
          bursts.bursts.map((b) => h('tr', null, h('td', null, b.condition), h('td', null, b.backend), h('td', { class: 'num' }, b.width),
            h('td', { class: 'num' }, (b.launch_spread_ns / 1e6).toFixed(2) + ' ms'), h('td', { class: 'num' }, Math.round(100 * b.overlap) + '%'),
            h('td', { class: 'num' }, num(b.busy_slots_per_decode)), h('td', { class: 'num' }, num(b.timed_concurrency)),
            h('td', null, b.verdict ? badge(b.verdict.batched ? 'batched' : 'not batched', b.verdict.batched ? 'batched' : 'flagged') : '–'),
            h('td', null, b.verdict ? b.verdict.reason : ''))))));
    } else batching.append(h('p', { class: 'muted' }, 'No concurrent conditions in this audit.'));

    const hist = h('section', { 'data-testid': 'divergence' }, h('h2', null, 'Where streams first diverge'));

    const fp = h('section', null, h('h2', null, 'Fingerprints'),
      table(['backend', 'phase', 'taken', 'build', 'model', 'model sha256', 'slots', 'n_ctx', 'canary', 'machine'], fps.fingerprints.map((f) => h('tr', null,
        h('td', null, f.backend), h('td', null, f.phase), h('td', null, when(f.taken_at)), h('td', null, f.build_info), h('td', null, f.model),
        h('td', { class: 'mono' }, short(f.model_sha256, 16) || '–'), h('td', { class: 'num' }, f.total_slots ?? '–'), h('td', { class: 'num' }, f.n_ctx ?? '–'),
        h('td', { class: 'mono' }, short(f.canary && f.canary.logit_digest, 16) || '–'),
        h('td', { 'data-testid': 'machine' }, machineText(f.machine))))));

    const conditions = [...new Set(runs.runs.map((r) => r.condition))];
    const filter = h('select', { 'aria-label': 'condition' }, h('option', { value: '' }, 'every condition'), conditions.map((c) => h('option', { value: c }, c)));
    const runBody = h('tbody');
    const fillRuns = () => put(runBody, ...runs.runs.filter((r) => !filter.value || r.condition === filter.value).map((r) => {
      const v = r.verdict;
      return h('tr', { 'data-run': r.id },
        h('td', null, h('a', { href: `#/audits/${id}/runs/${Number(r.id)}` }, r.id)), h('td', null, r.backend), h('td', null, r.condition),
        h('td', { class: 'num' }, r.replicate), h('td', { class: 'prompt', title: r.prompt }, r.prompt),
        h('td', null, r.status === 'ok' ? '' : badge('failed')),
        h('td', null, v ? badge(v.logit_identical ? 'identical' : 'diverged') : r.condition === 'baseline' ? 'baseline' : '–'),
        h('td', null, v ? badge(v.token_identical ? 'identical' : 'diverged') : ''),
        h('td', { class: 'num' }, v && v.first_logit_difference >= 0 ? v.first_logit_difference : ''),
        h('td', { class: 'num' }, v && v.first_token_difference >= 0 ? v.first_token_difference : ''),
        h('td', { class: 'num' }, v ? num(v.max_abs_delta) : ''),
        h('td', null, v && v.flag !== 'none' ? h('span', { title: v.flag_reason || '' }, badge(v.flag.replace('_', ' '), 'flagged')) : ''));
    }));
    filter.addEventListener('change', fillRuns);
    fillRuns();
    const runSection = h('section', { 'data-testid': 'runs' }, h('h2', null, `Runs (${runs.runs.length})`), h('label', null, 'Condition', filter),
      table(['run', 'backend', 'condition', 'rep', 'prompt', '', 'logits', 'tokens', 'first logit diff', 'first token diff', 'max |Δ|', 'evidence'], runBody));

    // The charts before the long tables: each chart lays out what is on the page so far.
    // Attribution at the first divergence: per burst condition and backend (docs/explain.md).
    const rate = (k, n) => (n ? (100 * k / n).toFixed(1) + '%' : '–');
    const attribution = (report.attributions || []).length ? h('section', { 'data-testid': 'attribution' }, h('h2', null, 'Attribution at the first divergence'),
      table(['condition', 'backend', 'divergent', 'with steps', 'at the first token', 'at a width change', 'base rate', 'p (exact binomial)', 'at a finish', 'at a join'],
        report.attributions.map((t) => h('tr', { 'data-condition': t.condition },
          h('td', null, t.condition), h('td', null, t.backend), h('td', { class: 'num' }, t.divergent), h('td', { class: 'num' }, t.with_steps),
          h('td', { class: 'num' }, t.at_first_token), h('td', { class: 'num' }, `${t.at_width_change}/${t.tested}`),
          h('td', { class: 'num' }, rate(t.width_changes, t.positions)), h('td', { class: 'num' }, t.tested ? num(t.p_width_change, 4) : '–'),
          h('td', { class: 'num' }, `${t.at_finish} (${rate(t.finishes, t.positions)})`), h('td', { class: 'num' }, `${t.at_join} (${rate(t.joins, t.positions)})`))))) : null;
    // A curve or a frontier is the answer of the audit that has one: it leads the page.
    const curves = loadCurves(report);
    const frontierChart = frontier && report.frontier.some((r) => r.tokens_per_s !== null) ? h('div', { 'data-testid': 'frontier-chart' }) : null;
    if (frontierChart) frontier.append(frontierChart);
    main.append(...[verdict, certificate, curves.section, frontier, migration].filter(Boolean), findings, predictions, ...[searches, attribution].filter(Boolean), batching, hist);
    curves.draw();
    if (frontierChart) {
      const rows = report.frontier.filter((r) => r.tokens_per_s !== null && r.load_n > 0).sort((a, b) => a.tokens_per_s - b.tokens_per_s);
      makeChart('frontier', frontierChart, {
        title: 'logit identity under load against throughput, per configuration',
        scales: { x: { time: false }, y: { range: [0, 100] } },
        axes: [{ label: 'tokens/s' }, { label: '% logit-identical' }],
        series: [{ label: 'tokens/s' }, { label: 'logit-identical %', stroke: '#1f4e79', width: 0, points: { show: true, size: 9 } }],
      }, [rows.map((r) => r.tokens_per_s), rows.map((r) => 100 * r.load_logit_identical / r.load_n)]);
    }
    divergenceHistograms(hist, runs.runs);
    main.append(fp, runSection);
  }

  // Load curves (docs/load.md): per backend and condition, a table of the levels and two charts
  // on one x axis (the level): the probes' identity with its interval, and the latencies.
  function loadCurves(report) {
    const curves = report.load_curves || [];
    if (!curves.length) return { section: null, draw: () => {} };
    const fix = (x, d) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));
    const ms = (l) => (l && l.n ? `${num(l.p50)} / ${num(l.p99)}` : '–');
    const section = h('section', { 'data-testid': 'load-curves' }, h('h2', null, 'Load curves'));
    const pending = [];
    for (const c of curves) {
      const key = `${c.backend}:${c.condition}`;
      const levels = c.levels;
      section.append(h('h3', null, `${c.backend}, ${c.condition} (${c.arrival} arrivals)`),
        table(['level', 'reached', 'logit-identical', '95% interval', 'token-identical', 'batch width', 'offered req/s', 'achieved req/s',
          'served req/s', 'output tok/s', 'TTFT p50 / p99 ms', 'ITL p50 / p99 ms', 'TPOT p50 / p99 ms', 'E2E p50 / p99 ms',
          'in flight mean / max', 'server holds (ours)', 'lateness p99 µs'],
        levels.map((l) => {
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
        })));
      const box = h('div', { class: 'load-charts', 'data-testid': 'load-charts' });
      section.append(box);
      pending.push(() => {
        const xs = levels.map((_, i) => i);
        const labels = levels.map((l) => l.measurement.label);
        const axisX = { label: 'load level', values: (u, ticks) => ticks.map((t) => (Number.isInteger(t) && labels[t] !== undefined ? labels[t] : '')), splits: () => xs };
        const reachedOr = (l, v) => (l.measurement.reached && l.probes ? v : null);
        const sync = uPlot.sync('load:' + key);
        const cursor = { sync: { key: sync.key } };
        makeChart('load-identity:' + key, box, {
          title: 'probes logit-identical to their solo baseline, per level (95% interval)',
          cursor, scales: { x: { time: false, range: [-0.5, levels.length - 0.5] }, y: { range: [0, 100] } },
          axes: [axisX, { label: '%' }],
          series: [{ label: 'level', value: (u, v) => (v === null ? '' : labels[v] || '') },
            { label: 'logit-identical', stroke: '#1f4e79', width: 2, points: { show: true, size: 8 } },
            { label: 'interval low', stroke: 'rgba(31,78,121,.35)', dash: [4, 4] },
            { label: 'interval high', stroke: 'rgba(31,78,121,.35)', dash: [4, 4] },
            { label: 'token-identical', stroke: '#2e7d32', width: 1.5, points: { show: true, size: 6 } }],
        }, [xs, levels.map((l) => reachedOr(l, 100 * l.logit_identical / l.probes)), levels.map((l) => reachedOr(l, 100 * l.logit_low)),
          levels.map((l) => reachedOr(l, 100 * l.logit_high)), levels.map((l) => reachedOr(l, 100 * l.token_identical / l.probes))]);
        makeChart('load-latency:' + key, box, {
          title: 'latency per level (every request of the level)',
          cursor, scales: { x: { time: false, range: [-0.5, levels.length - 0.5] } },
          axes: [axisX, { label: 'ms' }],
          series: [{ label: 'level', value: (u, v) => (v === null ? '' : labels[v] || '') },
            { label: 'TTFT p50', stroke: '#e67800', width: 2, points: { show: true } },
            { label: 'TTFT p99', stroke: '#e67800', dash: [5, 4] },
            { label: 'E2E p50', stroke: '#6a1b9a', width: 2, points: { show: true } },
            { label: 'E2E p99', stroke: '#6a1b9a', dash: [5, 4] },
            { label: 'TPOT p50', stroke: '#00838f', width: 1.5, points: { show: true } }],
        }, [xs, levels.map((l) => l.measurement.ttft_ms.p50), levels.map((l) => l.measurement.ttft_ms.p99),
          levels.map((l) => l.measurement.e2el_ms.p50), levels.map((l) => l.measurement.e2el_ms.p99), levels.map((l) => l.measurement.tpot_ms.p50)]);
      });
    }
    return { section, draw: () => pending.forEach((f) => f()) };
  }

  // #/audits/{id}/runs/{run}
  async function pageRun(main, id, runId) {
    await tokenFor(false);
    const run = await api(`/v1/audits/${id}/runs/${runId}/stream`);
    let base = null;
    if (run.baseline_group !== null && run.baseline_group !== undefined) {
      const list = await api(`/v1/audits/${id}/runs?backend=${encodeURIComponent(run.backend)}&condition=baseline`);
      const b = list.runs.find((r) => r.group === run.baseline_group);
      if (b) base = await api(`/v1/audits/${id}/runs/${b.id}/stream`);
    }
    const v = run.verdict;
    put(main,
      h('p', null, h('a', { href: '#/audits/' + Number(id) }, `← audit #${Number(id)}`)),
      h('h1', null, `Run ${run.id}: ${run.condition} on ${run.backend} `, v ? badge(v.logit_identical ? 'identical' : 'diverged') : null),
      meta([
        ['prompt', h('span', { 'data-testid': 'prompt' }, run.prompt)],
        ['replicate', String(run.replicate)],
        ['sampling', `temperature ${run.params.temperature}, seed ${run.params.seed ?? '–'}, cache_prompt ${run.params.cache_prompt}, slot ${run.params.id_slot ?? 'any'}`],
        ['status', run.status + (run.error ? ': ' + run.error : '')],
        run.digests ? ['digests', h('span', { class: 'mono' }, `logit ${run.digests.logit}  token ${run.digests.token}  (${run.digests.tokens} tokens)`)] : null,
        v ? ['verdict', `logits ${v.logit_identical ? 'identical' : 'differ from position ' + v.first_logit_difference}; tokens ${v.token_identical ? 'identical' : 'differ from position ' + v.first_token_difference}; max |Δ| ${num(v.max_abs_delta)}, max ${v.max_ulp} ulp` + (v.margin_at_flip !== null ? `, margin at the flip ${num(v.margin_at_flip)}` : '')] : null,
        v && v.flag !== 'none' ? ['evidence', `${v.flag}: ${v.flag_reason || ''} (counted apart)`] : null,
        base ? ['baseline', h('a', { href: `#/audits/${Number(id)}/runs/${Number(base.id)}` }, `run ${base.id}`)] : ['baseline', run.condition === 'baseline' ? 'this run is a baseline' : 'none'],
      ]));
    if (!base) {
      main.append(h('h2', null, 'Output'), h('pre', null, run.content));
      return;
    }
    // |Δ logprob| per position of the sampled token, and the largest over the top-k ids both share.
    const n = Math.min(run.tokens.length, base.tokens.length);
    const x = [], sampled = [], topk = [];
    let zeros = 0;
    for (let i = 0; i < n; i++) {
      const a = run.tokens[i], b = base.tokens[i];
      const d = a.id === b.id ? Math.abs(a.logprob - b.logprob) : null;
      let m = 0;
      const other = new Map(b.top.map((t) => [t.id, t.logprob]));
      for (const t of a.top) if (other.has(t.id)) m = Math.max(m, Math.abs(t.logprob - other.get(t.id)));
      if (!d && !m) zeros++;
      x.push(i);
      sampled.push(d ? d : null);  // a log scale has no zero: identical positions are gaps
      topk.push(m ? m : null);
    }
    const chartBox = h('section', { 'data-testid': 'delta-chart' }, h('h2', null, '|Δ logprob| against the baseline, by position'),
      h('p', { class: 'muted' }, `${zeros} of ${n} positions identical (gaps on the log scale).`));
    main.append(chartBox);
    const marks = [];
    if (v && v.first_logit_difference >= 0) marks.push({ x: v.first_logit_difference, label: 'first logit difference', color: '#e67800' });
    if (v && v.first_token_difference >= 0) marks.push({ x: v.first_token_difference, label: 'first token difference', color: '#c62828', row: 1 });
    if (zeros < n) {
      makeChart('delta', chartBox, {
        height: 260, scales: { x: { time: false }, y: { distr: 3 } },
        cursor: { sync: { key: 'run-' + run.id } },
        axes: [{ label: 'position', incrs: WHOLE }, { label: '|Δ logprob|', size: 60, space: 18, values: decadeLabels }],
        series: [{ label: 'position' },
          { label: 'sampled token', stroke: '#1f4e79', width: 1.5, points: { show: true, size: 4 }, spanGaps: false },
          { label: 'top-k (shared ids), max', stroke: '#8e44ad', width: 1, dash: [4, 3], points: { show: true, size: 3 }, spanGaps: false }],
        plugins: [markerPlugin(marks)],
      }, [x, sampled, topk]);
    } else chartBox.append(h('p', null, 'Identical at every position.'));
    state.charts.markers = marks;

    // The batch at every decode step (burst members): the width of each position's step, on the
    // same x axis with a synced cursor, joins and finishes of the burst's other requests marked.
    const steps = run.decode_steps;
    if (steps && steps.width && steps.width.length) {
      const widthBox = h('section', { 'data-testid': 'width-track' }, h('h2', null, 'Batch width at each decode step'),
        h('p', { class: 'muted' }, `${steps.steps} steps of this burst, from the ${steps.clock}'s per-token times; separation ${num(steps.separation)} (above 1: every token nearer its own step than the next)` +
          (v && v.at_difference ? `; at the first difference: width ${v.at_difference.width}${v.at_difference.width_before === null ? ' (the first token)' : ' (was ' + v.at_difference.width_before + ')'}${v.at_difference.events ? ', ' + v.at_difference.events : ''}` : '')));
      main.append(widthBox);
      const events = steps.events.map((e) => ({ x: e.position, label: `${e.request} ${e.event}`, color: e.event === 'joined' ? '#2e7d32' : '#6d4c41', row: 0 }));
      const wx = steps.width.map((_, i) => i);
      // A divergent burst run: shrink its burst to a minimal reproduction on the live server.
      if (v && !v.logit_identical) {
        const out = h('div', { 'data-testid': 'repro-status', class: 'muted' });
        const start = h('button', {
          type: 'button', 'data-testid': 'repro-start', onclick: async () => {
            await tokenFor(true);
            start.disabled = true;
            let r;
            try {
              r = await api(`/v1/audits/${Number(id)}/runs/${Number(run.id)}/repro`, { method: 'POST', body: {} });
            } catch (e) {
              put(out, h('span', { class: 'error' }, e.message || String(e)));
              start.disabled = false;
              return;
            }
            const mine = state.render;
            while ((r.status === 'queued' || r.status === 'running') && mine === state.render) {
              put(out, r.status === 'queued'
                ? `repro ${r.id}: queued until backend ${r.backend} is free`
                : `repro ${r.id}: ${r.progress.phase || 'starting'}, ${r.progress.bursts} of at most ${r.progress.max_bursts} bursts`);
              await new Promise((ok) => { state.timers.push(setTimeout(ok, 400)); });
              r = await api(r.links.self);
            }
            if (mine !== state.render) return;
            state.repro = r;
            const script = await api(r.links.script, { text: true });
            state.reproScript = script;
            const link = h('a', { 'data-testid': 'repro-script', download: `repro-${Number(id)}-${Number(run.id)}.sh`,
              href: URL.createObjectURL(new Blob([script], { type: 'text/x-shellscript' })) }, 'repro.sh');
            put(out, h('span', null, `${r.outcome}: ${r.message}. `), 'Download ', link, ' (sh repro.sh URL: curl and sh, starts nothing).');
            start.disabled = false;
          },
        }, 'Find a minimal reproduction');
        widthBox.append(h('p', null, start, ' ', out));
      }
      makeChart('width', widthBox, {
        height: 160, scales: { x: { time: false, range: [0, Math.max(n - 1, wx.length - 1)] }, y: { range: [0, Math.max(...steps.width) + 1] } },
        cursor: { sync: { key: 'run-' + run.id } },
        axes: [{ label: 'position', incrs: WHOLE }, { label: 'width', size: 60, incrs: WHOLE }],
        series: [{ label: 'position' }, { label: 'sequences in the step', stroke: '#1f4e79', width: 2, paths: uPlot.paths.stepped({ align: 1 }) }],
        plugins: [markerPlugin(events)],
      }, [wx, steps.width]);
      state.charts.events = events;
    }

    // The top-k lists side by side where the streams first differ.
    const at = v && v.first_logit_difference >= 0 ? v.first_logit_difference : -1;
    if (at >= 0 && at < n) {
      const side = (label, s, o) => {
        const t = s.tokens[at];
        const other = new Map(o.tokens[at].top.map((e) => [e.id, e.logprob]));
        const margin = t.top.length > 1 ? t.top[0].logprob - t.top[1].logprob : null;
        return h('div', null, h('h3', null, `${label}: sampled ${t.id}, margin ${margin === null ? '–' : margin.toPrecision(4)}`),
          table(['rank', 'token id', 'logprob', 'Δ vs other'], t.top.map((e, r) => {
            const d = other.has(e.id) ? e.logprob - other.get(e.id) : null;
            return h('tr', { class: e.id === t.id ? 'sampled' : null }, h('td', { class: 'num' }, r + 1), h('td', { class: 'num mono' }, e.id),
              h('td', { class: 'num mono' }, e.logprob.toPrecision(9)),
              h('td', { class: 'num mono ' + (d === 0 ? 'same' : 'diff') }, d === null ? 'absent' : d === 0 ? '0' : d.toExponential(2)));
          })));
      };
      main.append(h('section', { 'data-testid': 'topk' }, h('h2', null, `Top-k at position ${at}, the first difference`),
        h('div', { class: 'grid2' }, side('baseline', base, run), side('this run', run, base))));
    }
    main.append(h('div', { class: 'grid2' }, h('div', null, h('h2', null, 'Baseline output'), h('pre', null, base.content)),
      h('div', null, h('h2', null, 'This run'), h('pre', null, run.content))));
  }

  // One chart per condition of a series' identical-rate over its audits, with interval bands,
  // annotations at fingerprint changes and classified steps, a tooltip with each audit's
  // identity, click to open an audit, drag to zoom, and cursors and zoom synced.
  function renderSeries(container, series, index) {
    const tl = series.timeline;
    const section = h('section', { 'data-series': series.name },
      h('h2', null, series.name, ' ', badge(series.state, series.state === 'stable' ? 'valid' : series.state === 'unstable' ? 'invalid' : 'flagged')),
      h('p', { class: 'muted' }, `${series.audits_total} audits; shown: the newest ${tl.length}. Segments: `,
        series.segments.map((s) => `#${s.first_audit}–#${s.last_audit} (${s.audits}${s.opened_by.length ? ', opened by ' + s.opened_by.join(', ') : ''})`).join('; ') || '–'));
    container.append(section);
    if (!tl.length) { section.append(h('p', null, 'No audits yet.')); return; }
    const x = tl.map((_, i) => i);
    const marks = [];
    tl.forEach((a, i) => {
      const t = a.transition;
      // Fingerprint changes (explained or not) and classified steps.
      if (t && (t.kind !== 'unchanged' || t.changed_fields.length)) {
        const color = t.kind === 'unchanged' || t.kind === 'explained' ? '#1f4e79' : t.kind === 'unexplained_step' ? '#c62828' : '#9a6700';
        const label = t.changed_fields.length ? `${t.kind === 'unchanged' ? 'fingerprint' : t.classification}: ${t.changed_fields.join(', ')}` : t.classification;
        marks.push({ x: i, label, color, row: marks.length % 2 });
      }
      if (!a.valid) marks.push({ x: i, label: 'invalid', color: '#c62828', row: 2 });
    });
    state.charts['marks:' + index] = marks;
    const conditions = [];
    for (const a of tl) for (const c of a.conditions) if (!conditions.includes(c.condition)) conditions.push(c.condition);
    const group = [];
    const syncKey = 'series-' + index;
    let syncing = false;
    for (const cond of conditions) {
      const pick = (a, f) => { const c = a.conditions.find((k) => k.condition === cond); return c ? f(c) : null; };
      const data = [x,
        tl.map((a) => pick(a, (c) => c.logit_rate)), tl.map((a) => pick(a, (c) => c.logit_interval && c.logit_interval[1])), tl.map((a) => pick(a, (c) => c.logit_interval && c.logit_interval[0])),
        tl.map((a) => pick(a, (c) => c.token_rate)), tl.map((a) => pick(a, (c) => c.token_interval && c.token_interval[1])), tl.map((a) => pick(a, (c) => c.token_interval && c.token_interval[0]))];
      const tip = h('div', { class: 'tip' });
      let hovering = false;
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
        cursor: { sync: { key: syncKey }, drag: { x: true, y: false }, y: false },
        plugins: [markerPlugin(marks), {
          hooks: {
            setCursor: [(u) => {
              const i = u.cursor.idx;
              // The synced charts move their cursors along; only the chart under the mouse tells.
              if (!hovering || i === null || i === undefined || !tl[i]) { tip.classList.remove('on'); return; }
              const a = tl[i];
              const f = a.fingerprint.after || a.fingerprint.before || {};
              const c = a.conditions.find((k) => k.condition === cond);
              put(tip, h('b', null, `audit #${a.audit} · ${when(a.time)}`),
                h('div', null, c ? `logit ${c.logit_identical}/${c.n}, token ${c.token_identical}/${c.n}` : 'condition not in this audit'),
                h('div', null, 'build: ', f.build_info || '–'), h('div', null, 'model: ', f.model || '–', ' ', short(f.model_sha256, 12)),
                h('div', null, 'quantisation: ', f.model_ftype || '–', ', slots ', f.total_slots ?? '–'),
                h('div', { class: 'mono' }, 'settings ', short(f.generation_settings_hash, 12), ' canary ', short(f.canary && f.canary.logit_digest, 12)),
                h('div', null, 'machine: ', machineText(f.machine)),
                a.transition ? h('div', null, a.transition.sentence) : null, a.valid ? null : h('div', { class: 'error' }, a.invalid_reason));
              tip.classList.add('on');
              // Beside the cursor, on the side with room.
              const left = u.valToPos(i, 'x') + u.over.offsetLeft;
              tip.style.left = (left > box.clientWidth / 2 ? left - tip.offsetWidth - 12 : left + 12) + 'px';
              tip.style.top = (u.over.offsetTop + 8) + 'px';
            }],
            setScale: [(u, key) => {
              if (key !== 'x' || syncing) return;
              syncing = true;
              for (const other of group) if (other !== u) other.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
              syncing = false;
            }],
          },
        }],
      }, data);
      box.append(tip);
      box.dataset.audits = tl.map((a) => a.audit).join(',');
      // A click (not a drag) opens the audit under the cursor.
      let down = null;
      plot.over.addEventListener('mousedown', (ev) => { down = ev.clientX; });
      plot.over.addEventListener('mouseenter', () => { hovering = true; });
      plot.over.addEventListener('mouseleave', () => { hovering = false; tip.classList.remove('on'); });
      // A double click zooms out: a click waits a moment to be sure it is not one.
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
      group.push(plot);
    }
    section.append(h('p', { class: 'muted' }, 'Drag across a chart to zoom (all charts follow); double-click to zoom out; click a point to open its audit. Bands: Jeffreys intervals at ',
      String(series.thresholds ? series.thresholds.confidence : ''), '.'));
    const changes = tl.filter((a) => a.transition && (a.transition.kind !== 'unchanged' || a.transition.changed_fields.length));
    if (changes.length)
      section.append(h('h3', null, 'Transitions'), table(['audit', 'classification', 'what'], changes.map((a) => h('tr', null,
        h('td', null, auditLink(a.audit)), h('td', null, a.transition.classification), h('td', null, a.transition.sentence)))));
  }

  // #/schedules
  async function pageSchedules(main) {
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
  async function pageSchedule(main, id) {
    await tokenFor(false);
    const [s, timeline] = await Promise.all([api(`/v1/schedules/${id}`), api(`/v1/schedules/${id}/timeline`)]);
    put(main, h('h1', null, `Schedule ${s.id}`),
      meta([['cron', h('span', { class: 'mono' }, `${s.cron} (${s.timezone})`)], ['enabled', s.enabled ? 'yes' : 'no'], ['missed fires', s.missed],
        ['next fire', s.next_fire_unix ? when(new Date(s.next_fire_unix * 1000).toISOString()) : '–']]));
    if (!timeline.series.length) main.append(h('p', { class: 'muted' }, 'It has fired no audit yet.'));
    timeline.series.forEach((series, i) => renderSeries(main, series, i));
  }

  // #/series?backend=&spec_hash=&schedule=
  async function pageSeries(main, q) {
    await tokenFor(false);
    const p = new URLSearchParams();
    for (const k of ['backend', 'spec_hash', 'schedule', 'audits']) if (q.get(k)) p.set(k, q.get(k));
    const data = await api('/v1/series?' + p);
    put(main, h('h1', null, 'Series'), h('p', { class: 'muted' }, p.toString() ? 'Filtered by ' + p.toString().replace(/&/g, ', ') : 'Every series.'));
    data.series.forEach((series, i) => renderSeries(main, series, i));
  }

  // #/compare?a=&b=
  async function pageCompare(main, q) {
    await tokenFor(false);
    const a = q.get('a') || '', b = q.get('b') || '';
    const form = h('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/compare?a=${Number(ev.target.elements.a.value)}&b=${Number(ev.target.elements.b.value)}`; } },
      h('label', null, 'Audit A', h('input', { name: 'a', type: 'number', min: 1, value: a, required: true })),
      h('label', null, 'Audit B', h('input', { name: 'b', type: 'number', min: 1, value: b, required: true })),
      h('button', { type: 'submit' }, 'Compare'));
    put(main, h('h1', null, 'Compare two audits\' baselines'), form);
    if (!a || !b) return;
    const c = await api(`/v1/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    const differences = Object.entries(c.fingerprint_differences).filter(([, f]) => f.length).map(([backend, f]) => `${backend}: ${f.join(', ')}`);
    const notSolo = c.summary.not_solo ? ` ${c.summary.not_solo} more in both were not compared: a side was not alone.` : '';
    main.append(h('p', { 'data-testid': 'compare-summary' }, `${c.summary.compared} baselines in both: ${c.summary.logit_identical} logit-identical, ${c.summary.token_identical} token-identical.${notSolo} `,
      auditLink(c.a), ' against ', auditLink(c.b), '.'),
    differences.length ? h('div', { class: 'banner note', 'data-testid': 'fingerprint-differences' }, 'Fingerprints differ: ' + differences.join('; ')) : h('p', { class: 'muted' }, 'Same fingerprints.'),
    table(['backend', 'prompt', 'temperature', 'seed', 'in A', 'in B', 'logits', 'tokens', 'first logit diff', 'first token diff', 'max |Δ|', 'max ulp'],
      c.baselines.map((x) => h('tr', null, h('td', null, x.backend), h('td', { class: 'prompt', title: x.prompt }, x.prompt), h('td', { class: 'num' }, x.temperature),
        h('td', { class: 'num' }, x.seed ?? '–'), h('td', null, x.in_a ? 'yes' : 'no'), h('td', null, x.in_b ? 'yes' : 'no'),
        h('td', x.not_solo ? { title: x.not_solo } : null, 'logit_identical' in x ? badge(x.logit_identical ? 'identical' : 'diverged') : x.not_solo ? 'not solo' : '–'),
        h('td', null, 'token_identical' in x ? badge(x.token_identical ? 'identical' : 'diverged') : '–'),
        h('td', { class: 'num' }, x.first_logit_difference >= 0 ? x.first_logit_difference : ''), h('td', { class: 'num' }, x.first_token_difference >= 0 ? x.first_token_difference : ''),
        h('td', { class: 'num' }, 'max_abs_delta' in x ? num(x.max_abs_delta) : ''), h('td', { class: 'num' }, x.max_ulp ?? '')))));
  }

  // ---------------------------------------------------------------- routing

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
})();
