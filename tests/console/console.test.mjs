// The console in Debian's chromium against a daemon seeded by tests/e2e/console_test.sh.
// What each page shows is checked against the REST API read independently here; every page
// must load without a console error (a 404 page may log its one failed request).
import { chromium } from 'playwright-core';
import Ajv2020 from 'ajv/dist/2020.js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';

const base = process.env.DAEMON_URL;
const token = process.env.TOKEN;
const artifacts = process.env.ARTIFACTS;
const seriesAudits = process.env.SERIES_AUDITS.split(',').map(Number);
const xssAudit = Number(process.env.XSS_AUDIT);
const seedAudit = Number(process.env.SEED_AUDIT);
const searchAudit = Number(process.env.SEARCH_AUDIT);
const sweepAudit = Number(process.env.SWEEP_AUDIT);
const specHash = process.env.SPEC_HASH;

async function api(path, { auth = true, method = 'GET', body } = {}) {
  const headers = auth ? { Authorization: `Bearer ${token}` } : {};
  if (body) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}
const get = async (path) => {
  const r = await api(path);
  assert.equal(r.status, 200, `${path}: ${r.text}`);
  return r.json();
};

let failures = 0;
let page = null;    // the browser's page, once it is open
let awaited = 0;    // the last render of the console that navigate() saw finish
async function check(name, fn) {
  const started = Date.now();
  try {
    await fn();
    // The guard: a check that started a render (a click, a hash) without navigate() waiting
    // for it read a page that may still have been loading. It fails whatever it read.
    const now = page ? await renderNow() : 0;
    if (now !== awaited) throw unawaited(now);
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
  if (page) awaited = await renderNow().catch(() => awaited);  // a failed check does not fail the next
}

// ------------------------------------------------------------------ HTTP-level checks

await check('the API protects reads; health, the console and the document are open', async () => {
  assert.equal((await api('/v1/audits', { auth: false })).status, 401);
  assert.equal((await api('/v1/audits/1/runs', { auth: false })).status, 401);
  for (const open of ['/healthz', '/readyz', '/v1/info', '/', '/favicon.ico', '/openapi.json'])
    assert.equal((await api(open, { auth: false })).status, 200, open);
  const info = (await api('/v1/info', { auth: false })).json();
  assert.deepEqual(info.auth, { tokens: true, protect_reads: true });
});

await check('the page: a CSP without inline script, versioned files with ETag and long caching, gzip', async () => {
  const page = await api('/', { auth: false });
  const csp = page.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.doesNotMatch(page.text, /<script(?![^>]*\bsrc=)[^>]*>/, 'an inline script');
  assert.doesNotMatch(page.text, /\son[a-z]+=/i, 'an inline event handler');
  assert.doesNotMatch(page.text, /https?:\/\//, 'a file from another origin');
  const files = [...page.text.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)].map((m) => m[1]);
  assert.ok(files.length >= 5, files.join());
  let plain = 0, wire = 0;
  for (const f of ['/', ...files]) {
    // fetch decodes gzip; Content-Length is what crossed the wire.
    const r = await fetch(base + f, { headers: { 'Accept-Encoding': 'gzip' } });
    await r.arrayBuffer();
    assert.equal(r.status, 200, f);
    wire += Number(r.headers.get('content-length'));
    plain += Number((await fetch(base + f, { headers: { 'Accept-Encoding': 'identity' } })).headers.get('content-length'));
    if (f === '/') continue;
    assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable', f);
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{16}"$/);
    assert.equal((await fetch(base + f, { headers: { 'If-None-Match': etag } })).status, 304, f);
  }
  console.log(`     everything the console serves: ${plain} bytes, ${wire} bytes gzip-compressed`);
  assert.ok(wire < 150 * 1024, `${wire} bytes compressed`);
  // An unversioned or stale URL is revalidated rather than cached for a year.
  const stale = await fetch(base + '/console/app.js?v=0000000000000000');
  assert.equal(stale.headers.get('cache-control'), 'no-cache');
  assert.equal((await api('/console/nope.js', { auth: false })).status, 404);
});

await check('responses match the OpenAPI schemas', async () => {
  const doc = (await api('/openapi.json', { auth: false })).json();
  writeFileSync(`${artifacts}/openapi.json`, JSON.stringify(doc, null, 2));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: 'doc', components: doc.components });
  const run = (await get(`/v1/audits/${seedAudit}/runs`)).runs.find((r) => r.verdict && !r.verdict.logit_identical);
  const schedule = (await api('/v1/schedules', { method: 'POST', body: { cron: '0 3 * * *', spec: { preset: 'seed-protocol', backends: ['tiny'] } } })).json();
  const cases = {
    [`/v1/audits?limit=2`]: 'JobList', [`/v1/audits/${seedAudit}`]: 'Job', [`/v1/audits/${seedAudit}/report`]: 'Findings',
    [`/v1/audits/${searchAudit}/report`]: 'Findings', [`/v1/audits/${sweepAudit}/report`]: 'Findings', [`/v1/audits/${sweepAudit}`]: 'Job',
    [`/v1/audits/${seedAudit}/runs`]: 'RunList', [`/v1/audits/${seedAudit}/runs/${run.id}/stream`]: 'Stream',
    [`/v1/audits/${seedAudit}/bursts`]: 'BurstList', [`/v1/audits/${seedAudit}/fingerprints`]: 'FingerprintList',
    [`/v1/compare?a=${seriesAudits[0]}&b=${seriesAudits[2]}`]: 'Comparison', '/v1/backends': 'BackendList', '/v1/presets': 'PresetList',
    '/v1/schedules': 'ScheduleList', [`/v1/schedules/${schedule.id}`]: 'Schedule', [`/v1/schedules/${schedule.id}/history`]: 'ScheduleHistory',
    [`/v1/schedules/${schedule.id}/timeline`]: 'SeriesList', [`/v1/series?backend=tiny&spec_hash=${specHash}`]: 'SeriesList',
    '/v1/alerts/deliveries': 'DeliveryList', '/v1/info': 'Info', '/healthz': 'Status',
  };
  for (const [path, schema] of Object.entries(cases)) {
    const validate = ajv.getSchema(`doc#/components/schemas/${schema}`);
    assert.ok(validate, `no schema ${schema}`);
    const body = await get(path);
    assert.ok(validate(body), `${path} against ${schema}: ${ajv.errorsText(validate.errors)}`);
    // Every route is in the document with an operationId.
    const pattern = path.split('?')[0].replace(/\/\d+/g, (m, at, s) => (s.slice(0, at).endsWith('/runs') ? '/{run}' : '/{id}'));
    assert.ok(doc.paths[pattern] && doc.paths[pattern].get && doc.paths[pattern].get.operationId, `${pattern} undocumented`);
  }
  const bad = await api('/v1/audits', { method: 'POST', body: { n_predict: 0 } });
  assert.ok(ajv.getSchema('doc#/components/schemas/Error')(bad.json()));
  assert.deepEqual(doc.paths['/v1/audits'].post.security, [{ bearer: [] }]);
  assert.deepEqual(doc.paths['/v1/audits'].get.security, [{ bearer: [] }], 'reads are protected on this daemon');
  assert.deepEqual(doc.paths['/healthz'].get.security, []);
  assert.ok(doc.paths['/v1/audits'].get.parameters.some((p) => p.name === 'before' && p.in === 'query'));
});

// ------------------------------------------------------------------ the browser

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
page = await context.newPage();
const errors = [];
const requests = [];
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));
page.on('dialog', async (d) => { errors.push('a dialog opened: ' + d.message()); await d.dismiss(); });
page.on('request', (r) => requests.push({ url: r.url(), auth: r.headers().authorization || '' }));

// Navigation. The console renders each page into a new <main> numbered by its render
// (data-render) and marks it ready when it is whole. The page before a click is ready too, so
// a wait on 'ready' alone can return before the new page exists. navigate() runs an action
// (a click, a new hash, a new document) and waits for the current <main> to be a render that
// began after it and is ready; every navigation in this file goes through it, and the next
// navigate() or the end of the check fails one that did not.
const unawaited = (now) => new Error(`render ${now} of the console began and no navigate() waited for it (the last awaited: ${awaited}): every navigation goes through navigate()`);
async function renderNow() {
  return page.evaluate(() => (window.__console ? window.__console.render : 0));
}
async function navigate(action, { timeout = 60000, newDocument = false } = {}) {
  const before = newDocument ? 0 : await renderNow();  // a new document counts from 1 again
  if (!newDocument && before !== awaited) throw unawaited(before);
  const started = Date.now();
  await action();
  const done = await page.waitForFunction((n) => {
    const main = document.querySelector('#main');
    const render = main ? Number(main.dataset.render) : 0;
    return render > n && render === window.__console.render && main.dataset.state === 'ready' && render;
  }, before, { timeout });
  awaited = await done.jsonValue();
  return Date.now() - started;
}
async function open(hash) {
  const current = await page.evaluate(() => location.hash);
  assert.notEqual(current, hash, `already at ${hash}: setting it again renders nothing`);
  return navigate(() => page.evaluate((h) => { location.hash = h; }, hash));
}
// Artifacts: what the first screen shows (docs/console.md uses these), and the whole page.
async function shot(name) {
  await page.screenshot({ path: `${artifacts}/${name}.png` });
  await page.screenshot({ path: `${artifacts}/${name}-full.png`, fullPage: true });
}
function noErrors(allow404 = false) {
  const real = errors.filter((e) => !(allow404 && /status of 404/.test(e)));
  errors.length = 0;
  assert.deepEqual(real, [], 'console errors');
}

await check('the first visit asks for the token once and keeps it out of URLs', async () => {
  await navigate(async () => {
    await page.goto(base + '/');
    await page.waitForSelector('#token-dialog[open]');
    assert.equal(await page.evaluate(() => document.querySelector('#main').dataset.state), 'loading', 'nothing renders before the token');
    await shot('token');
    await page.fill('#token-dialog input[name=token]', token);
    await page.click('#token-dialog button[value=ok]');
  }, { newDocument: true });
  assert.equal(await page.evaluate(() => sessionStorage.getItem('logitaudit.token')), token);
  noErrors();
});

await check('the list shows the audits of the database', async () => {
  await open('#/audits');
  const expected = (await get('/v1/audits')).audits;
  const shown = await page.$$eval('[data-testid=audits] tbody tr', (rows) => rows.map((r) => Number(r.dataset.audit)));
  assert.deepEqual(shown, expected.map((a) => a.id));
  const seedRow = await page.textContent(`tr[data-audit="${seedAudit}"]`);
  assert.match(seedRow, /done/);
  assert.match(seedRow, /valid/);
  for (const p of (await get(`/v1/audits/${seedAudit}`)).result.predictions) assert.ok(seedRow.includes(`${p.id} ${p.outcome}`), seedRow);
  assert.ok((await page.textContent(`tr[data-audit="${xssAudit}"]`)).includes('<b>bold</b>'), 'a tag renders as text');
  await shot('audits');
  noErrors();
});

await check('paging and filters', async () => {
  const all = (await get('/v1/audits')).audits.map((a) => a.id);
  await open('#/audits?limit=2');
  const ids = () => page.$$eval('[data-testid=audits] tbody tr', (rows) => rows.map((r) => Number(r.dataset.audit)));
  assert.deepEqual(await ids(), all.slice(0, 2));
  await navigate(() => page.click('[data-testid=next-page]'));
  assert.match(await page.evaluate(() => location.hash), /before=/);
  assert.deepEqual(await ids(), all.slice(2, 4));
  assert.ok(await page.$('[data-testid=first-page]'));
  await open('#/audits?tag=series');
  assert.deepEqual(await ids(), [...seriesAudits].reverse());
  noErrors();
});

await check('a prompt crafted as HTML renders as text', async () => {
  await open(`#/audits/${xssAudit}`);
  const prompts = await page.$$eval('[data-testid=runs] td.prompt', (tds) => tds.map((t) => t.textContent));
  assert.ok(prompts.includes('<img src=x onerror=alert(1)>'), prompts.join(' | '));
  assert.ok(prompts.includes('</script><script>alert(2)</script>'));
  assert.equal(await page.$$eval('main img, main script', (x) => x.length), 0);
  const runs = (await get(`/v1/audits/${xssAudit}/runs`)).runs;
  const target = runs.find((r) => r.prompt.startsWith('<img'));
  await open(`#/audits/${xssAudit}/runs/${target.id}`);
  assert.equal(await page.textContent('[data-testid=prompt]'), '<img src=x onerror=alert(1)>');
  assert.equal(await page.$$eval('main img', (x) => x.length), 0);
  await shot('xss');
  noErrors();
});

let auditMs = 0;
await check('an audit: the findings table, predictions, batching evidence, runs and histograms as the API has them', async () => {
  auditMs = await open(`#/audits/${seedAudit}`);
  const job = await get(`/v1/audits/${seedAudit}`);
  const report = await get(`/v1/audits/${seedAudit}/report`);
  const runs = (await get(`/v1/audits/${seedAudit}/runs`)).runs;
  // The verdict leads the page: the report's own lines, seven at most (audit/verdict.hpp; the
  // Fix line comes only where this server's numbers moved under load), before the findings.
  const verdict = await page.$$eval('[data-testid=verdict] dd', (ds) => ds.map((d) => [d.dataset.topic, d.dataset.answer, d.textContent]));
  assert.ok(report.verdict.length > 0 && report.verdict.length <= 7, `${report.verdict.length} lines`);
  assert.deepEqual(verdict, report.verdict.map((l) => [l.topic, l.answer, l.text]));
  assert.ok(await page.$eval('main', (m) => {
    const v = m.querySelector('[data-testid=verdict]'), f = m.querySelector('[data-testid=findings]');
    return Boolean(v.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING);
  }), 'the verdict comes before the findings');
  const rows = await page.$$eval('[data-testid=findings] table.findings:first-of-type tbody tr', (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.equal(rows.length, report.pooled.length);
  report.pooled.forEach((t, i) => {
    assert.equal(rows[i][0], t.condition);
    assert.ok(rows[i][1].startsWith(`${t.logit_identical}/${t.n}`), `${rows[i][1]} vs ${t.logit_identical}/${t.n}`);
    assert.ok(rows[i][2].startsWith(`${t.token_identical}/${t.n}`));
    if (t.control) assert.match(rows[i][3], /control/);
  });
  assert.ok((await page.textContent('[data-testid=predictions]')).includes(job.predictions.hash));
  const batching = await page.textContent('[data-testid=batching]');
  for (const t of report.pooled.filter((x) => x.batching && x.batching.bursts)) assert.ok(batching.includes(t.condition), t.condition);
  assert.equal(await page.$$eval('[data-testid=runs] tbody tr', (r) => r.length), runs.length);
  // Histograms: one per condition with a divergence, the counts those of the runs' verdicts.
  const charts = await page.evaluate(() => Object.fromEntries(Object.entries(window.__console.charts)
    .filter(([k]) => k.startsWith('hist:')).map(([k, c]) => [k.slice(5), c.data])));
  const diverged = new Map();
  for (const r of runs) {
    if (!r.verdict || r.verdict.first_logit_difference < 0) continue;
    const m = diverged.get(r.condition) || new Map();
    m.set(r.verdict.first_logit_difference, (m.get(r.verdict.first_logit_difference) || 0) + 1);
    diverged.set(r.condition, m);
  }
  assert.ok(diverged.size >= 1, 'the controls diverge');
  assert.deepEqual(Object.keys(charts).sort(), [...diverged.keys()].sort());
  for (const [cond, m] of diverged) for (const [pos, n] of m) assert.equal(charts[cond][1][pos], n, `${cond} at ${pos}`);
  assert.equal(await page.$$eval('[data-testid=divergence] canvas', (c) => c.length), diverged.size);
  console.log(`     the audit page of ${runs.length} runs: ready ${auditMs} ms after navigation`);
  await shot('audit');
  noErrors();
});

await check('a threshold search and a sweep: their tables as the report has them', async () => {
  const search = (await get(`/v1/audits/${searchAudit}/report`)).searches[0];
  assert.ok(search && search.widths.length === 1, JSON.stringify(search));
  await open(`#/audits/${searchAudit}`);
  const w = search.widths[0];
  const row = await page.$$eval(`[data-testid=searches] tr[data-width="${w.width}"] td`, (cs) => cs.map((c) => c.textContent));
  assert.equal(row[1], String(w.trials));
  assert.equal(row[2], String(w.batched_trials));
  assert.ok(row[3].startsWith(w.n ? `${w.logit_identical}/${w.n}` : '–'), `${row[3]} vs ${w.logit_identical}/${w.n}`);
  assert.ok(row[5].startsWith(w.logit.replace('_', ' ').toUpperCase()), `${row[5]} vs ${w.logit}`);
  assert.ok(row[7].startsWith(w.token.replace('_', ' ').toUpperCase()), `${row[7]} vs ${w.token}`);
  noErrors();
  const report = await get(`/v1/audits/${sweepAudit}/report`);
  assert.equal(report.frontier.length, 2, JSON.stringify(report.frontier));
  await open(`#/audits/${sweepAudit}`);
  for (const r of report.frontier) {
    const cells = await page.$$eval(`[data-testid=frontier] tr[data-backend="${r.backend}"] td`, (cs) => cs.map((c) => c.textContent));
    assert.equal(cells[0], r.backend);
    assert.ok(cells[1].startsWith(`tiny-q4 -np ${r.settings.parallel} -t 2`), cells[1]);
    assert.ok(cells[2].startsWith(`${r.load_logit_identical}/${r.load_n}`), `${cells[2]} vs ${r.load_logit_identical}/${r.load_n}`);
    assert.equal(cells[5], r.tokens_per_s.toFixed(1));
    assert.ok(cells[7].startsWith(r.reproducible ? 'yes' : 'no'), cells[7]);
  }
  // The verdict first, then the frontier: the answer, then the evidence the sweep is for.
  assert.deepEqual(await page.$$eval('main section', (s) => s.slice(0, 2).map((e) => e.getAttribute('data-testid'))), ['verdict', 'frontier'],
    'a sweep leads with its verdict, then its frontier');
  assert.equal(await page.$$eval('[data-testid=frontier-chart] canvas', (c) => c.length) > 0, true, 'the frontier is drawn');
  // Two configurations of one model: their migration matrix, each cell the stored pair's counts.
  assert.equal(report.migration.length, 1, JSON.stringify(report.migration));
  const [m] = report.migration;
  for (const c of m.cells) {
    const cell = await page.$eval(`[data-testid=migration] tr[data-backend="${c.a}"] td[data-pair="${c.a === c.b ? 'itself' : c.b}"]`, (e) => e.textContent);
    const want = c.a === c.b ? `itself: ${c.load.n ? c.load.logit_identical + '/' + c.load.n : '–'}` : `${c.solo.n ? c.solo.logit_identical + '/' + c.solo.n : '–'}`;
    assert.ok(cell.startsWith(want), `${cell} vs ${want}`);
  }
  await shot('frontier');
  noErrors();
});

await check('a certificate follows the verdict: a row per family as stored, each counterexample linked to its run', async () => {
  const certAudit = Number(process.env.CERTIFY_AUDIT);
  const report = await get(`/v1/audits/${certAudit}/report`);
  const cert = report.certificate;
  assert.ok(cert && cert.families.length >= 6, JSON.stringify(cert));
  await open(`#/audits/${certAudit}`);
  assert.deepEqual(await page.$$eval('main section', (s) => s.slice(0, 2).map((e) => e.getAttribute('data-testid'))), ['verdict', 'certificate'],
    'a certificate follows its verdict');
  assert.ok((await page.$eval('[data-testid=certificate] h2', (e) => e.textContent)).endsWith(cert.outcome));
  for (const f of cert.families) {
    const cells = await page.$$eval(`[data-testid=certificate] tr[data-family="${f.family}"] td`, (cs) => cs.map((c) => c.textContent));
    assert.equal(cells[1], f.status.replace('_', ' '));
    assert.equal(cells[2], String(f.compared));
    assert.equal(cells[3], String(f.divergent));
    assert.equal(cells[6], f.status === 'passed' ? f.bound95.toFixed(3) : '–');
  }
  const rows = await page.$$eval('[data-testid=certificate] tr[data-counterexample]', (r) => r.length);
  assert.equal(rows, cert.counterexamples.length);
  await shot('certificate');
  if (cert.counterexamples.length) {  // whether any moved is this machine's: the first one's run, when it has steps, draws them
    const href = await page.$eval('[data-testid=certificate] tr[data-counterexample="1"] a', (a) => a.getAttribute('href'));
    await open(href);
    const x = cert.counterexamples[0];
    if (x.step_width >= 0) await page.waitForSelector('[data-testid=width-track]');
    await shot('certificate-run');
  }
  noErrors();
});

await check('a load curve leads its audit: a row per level as the report has it, identity and latency drawn on one axis', async () => {
  const loadAudit = Number(process.env.LOAD_AUDIT);
  const report = await get(`/v1/audits/${loadAudit}/report`);
  const curve = report.load_curves[0];
  assert.equal(curve.levels.length, 2, JSON.stringify(report.load_curves));
  await open(`#/audits/${loadAudit}`);
  assert.deepEqual(await page.$$eval('main section', (s) => s.slice(0, 2).map((e) => e.getAttribute('data-testid'))), ['verdict', 'load-curves'],
    'a load curve leads its audit, after its verdict');
  for (const l of curve.levels) {
    const cells = await page.$$eval(`[data-testid=load-curves] tr[data-level="${l.measurement.label}"] td`, (cs) => cs.map((c) => c.textContent));
    assert.equal(cells[0], l.measurement.label);
    assert.equal(cells[1], l.measurement.reached ? 'reached' : 'not reached');
    assert.ok(cells[2].startsWith(l.probes ? `${l.logit_identical}/${l.probes}` : '–'), `${cells[2]} vs ${l.logit_identical}/${l.probes}`);
    assert.equal(cells[9], l.measurement.output_throughput.toFixed(0));
    const m = l.measurement;  // the server's own count of the requests it held, beside the generator's
    assert.equal(cells[15], m.server_in_flight >= 0 ? `${m.server_in_flight.toFixed(2)} (${m.sampled_in_flight.toFixed(2)})` : '–');
  }
  const charts = await page.$$eval('[data-testid=load-charts] [data-chart]', (c) => c.map((x) => x.getAttribute('data-chart')));
  assert.deepEqual(charts, [`load-identity:${curve.backend}:${curve.condition}`, `load-latency:${curve.backend}:${curve.condition}`]);
  await shot('load-curve');
  noErrors();
});

await check('a run: |Δ logprob| by position against its baseline, markers, top-k at the first difference', async () => {
  const runs = (await get(`/v1/audits/${seedAudit}/runs`)).runs;
  const run = runs.find((r) => r.verdict && r.verdict.first_logit_difference >= 0);
  const baseRun = runs.find((r) => r.condition === 'baseline' && r.backend === run.backend && r.group === run.baseline_group);
  const [a, b] = [await get(`/v1/audits/${seedAudit}/runs/${run.id}/stream`), await get(`/v1/audits/${seedAudit}/runs/${baseRun.id}/stream`)];
  await open(`#/audits/${seedAudit}/runs/${run.id}`);
  assert.equal(await page.$$eval('[data-testid=delta-chart] canvas', (c) => c.length), 1);
  const data = await page.evaluate(() => window.__console.charts.delta.data);
  const n = Math.min(a.tokens.length, b.tokens.length);
  assert.equal(data[0].length, n);
  for (let i = 0; i < n; i++) {
    const d = a.tokens[i].id === b.tokens[i].id ? Math.abs(a.tokens[i].logprob - b.tokens[i].logprob) : null;
    assert.equal(data[1][i], d ? d : null, `position ${i}`);
  }
  const marks = await page.evaluate(() => window.__console.charts.markers.map((m) => m.x));
  assert.equal(marks[0], run.verdict.first_logit_difference);
  if (run.verdict.first_token_difference >= 0) assert.equal(marks[1], run.verdict.first_token_difference);
  const topk = await page.textContent('[data-testid=topk]');
  assert.ok(topk.includes(`position ${run.verdict.first_logit_difference}`));
  assert.ok(topk.includes(String(b.tokens[run.verdict.first_logit_difference].top[0].id)));
  await shot('run');
  noErrors();
});

await check('a burst run: the batch width at each decode step under the |Δ| chart, one cursor, events marked; log labels by decade', async () => {
  // The -kvu audit's concurrent_c4 streams for its decode steps (decode_steps: true); the seed
  // protocol's bursts are plain.
  const kvuAudit = Number(process.env.KVU_AUDIT);
  const runs = (await get(`/v1/audits/${kvuAudit}/runs`)).runs;
  const run = runs.find((r) => r.decode_steps && r.verdict && r.condition === 'concurrent_c4');
  assert.ok(run, 'a compared run of a burst that streamed has decode steps');
  assert.ok(!runs.some((r) => r.decode_steps && r.condition === 'plain_c4'), 'a plain burst has none');
  const target = `#/audits/${kvuAudit}/runs/${run.id}`;
  if ((await page.evaluate(() => location.hash)) === target) await open(`#/audits/${kvuAudit}`);
  await open(target);
  assert.equal(await page.$$eval('[data-testid=width-track] canvas', (c) => c.length), 1);
  const data = await page.evaluate(() => window.__console.charts.width.data);
  assert.deepEqual(data[1], run.decode_steps.width);
  const events = await page.evaluate(() => window.__console.charts.events.map((e) => [e.x, e.label]));
  assert.deepEqual(events, run.decode_steps.events.map((e) => [e.position, `${e.request} ${e.event}`]));
  // One cursor: the width track follows the |Δ| chart's (when the run has one; identical runs have none).
  const synced = await page.evaluate(() => {
    const c = window.__console.charts;
    return c.delta ? c.delta.plot.cursor.sync.key === c.width.plot.cursor.sync.key : null;
  });
  if (synced !== null) assert.ok(synced);
  // The log axis labels decades only: never two labels at 2e-7 and 3e-7 on top of each other.
  const labels = await page.evaluate(() => window.__console.decadeLabels(null, [1e-7, 2e-7, 5e-7, 1e-6, 1e-3]));
  assert.deepEqual(labels, ['1e-7', '', '', '1e-6', '1e-3']);
  // The audit page's attribution table: a row per burst condition with divergent streams.
  const report = await get(`/v1/audits/${seedAudit}/report`);
  await open(`#/audits/${seedAudit}`);
  const rows = await page.$$eval('[data-testid=attribution] tr[data-condition]', (rs) => rs.map((r) => r.dataset.condition));
  assert.deepEqual(rows, (report.attributions || []).map((t) => t.condition));
  await shot('width-track');
  noErrors();
});

await check('a divergent burst run starts its repro from the run page and its script can be downloaded', async () => {
  const kvuAudit = Number(process.env.KVU_AUDIT);
  const runs = (await get(`/v1/audits/${kvuAudit}/runs`)).runs;
  const divergent = runs.find((r) => r.decode_steps && r.verdict && !r.verdict.logit_identical);
  const identical = runs.find((r) => r.decode_steps && r.verdict && r.verdict.logit_identical);
  // A plain burst's divergent run has no decode steps, and still its repro button.
  const plain = runs.find((r) => r.condition === 'plain_c4' && r.verdict && !r.verdict.logit_identical);
  if (plain) {
    await open(`#/audits/${kvuAudit}/runs/${plain.id}`);
    await page.waitForSelector('[data-testid=plain-burst]');
    assert.equal(await page.$$eval('[data-testid=plain-burst] [data-testid=repro-start]', (b) => b.length), 1);
    assert.ok((await page.textContent('[data-testid=plain-burst]')).includes('plain'));
  }
  if (identical) {
    await open(`#/audits/${kvuAudit}/runs/${identical.id}`);
    assert.equal(await page.$$eval('[data-testid=repro-start]', (b) => b.length), 0, 'no repro for a run that did not diverge');
  }
  if (!divergent) {
    console.log('     -kvu kept every burst identical on this machine: the repro button is not shown anywhere');
    return;
  }
  await open(`#/audits/${kvuAudit}/runs/${divergent.id}`);
  await page.click('[data-testid=repro-start]');
  await page.waitForSelector('[data-testid=repro-script]', { timeout: 120000 });
  const repro = await page.evaluate(() => window.__console.repro);
  assert.equal(repro.run, divergent.id);
  assert.ok(['reproduced', 'not_reproduced', 'limit_reached'].includes(repro.outcome), repro.outcome);
  const status = await page.textContent('[data-testid=repro-status]');
  assert.ok(status.includes(repro.message), status);
  const link = await page.$eval('[data-testid=repro-script]', (a) => ({ href: a.href, download: a.download }));
  assert.ok(link.href.startsWith('blob:'), link.href);
  assert.equal(link.download, `repro-${kvuAudit}-${divergent.id}.sh`);
  const script = await page.evaluate(() => window.__console.reproScript);
  assert.equal(script, await (await fetch(`${base}/v1/repros/${repro.id}/files/repro.sh`, { headers: { Authorization: `Bearer ${token}` } })).text());
  assert.ok(script.startsWith('#!/bin/sh'), script.slice(0, 80));
  assert.ok(script.includes('--parallel'), 'the script sends the minimal requests at once');
  await shot('repro');
  noErrors();
});

await check('a series: identical rates with bands, the fingerprint change annotated, hover, click, zoom synced', async () => {
  const api_ = (await get(`/v1/series?backend=tiny&spec_hash=${specHash}`)).series[0];
  await open(`#/series?backend=tiny&spec_hash=${specHash}`);
  const charts = await page.evaluate(() => Object.fromEntries(Object.entries(window.__console.charts)
    .filter(([k]) => k.startsWith('series:')).map(([k, c]) => [k.split(':')[2], c.data])));
  const conditions = api_.timeline[0].conditions.map((c) => c.condition);
  assert.deepEqual(Object.keys(charts).sort(), [...conditions].sort());
  for (const cond of conditions) {
    const rates = api_.timeline.map((a) => a.conditions.find((c) => c.condition === cond).logit_rate);
    assert.deepEqual(charts[cond][1], rates, cond);
    // A condition whose streams were all counted apart (a burst that did not batch on a loaded
    // machine) has no rate and no band: null on both sides.
    assert.deepEqual(charts[cond][2], api_.timeline.map((a) => {
      const c = a.conditions.find((k) => k.condition === cond);
      return c.logit_interval && c.logit_interval[1];
    }));
  }
  assert.deepEqual(api_.timeline.map((a) => a.audit), seriesAudits);
  // The server restarted with other slots before the third audit: its fingerprint changed,
  // and the chart marks it there (whatever the digests did).
  const t = api_.timeline[2].transition;
  assert.ok(t.field_details.includes('total_slots'), JSON.stringify(t));
  assert.deepEqual(await page.evaluate(() => window.__console.charts['marks:0'].map((m) => m.x)), [2]);
  assert.ok((await page.textContent('main')).includes(t.sentence));
  assert.equal(await page.$$eval('[data-chart^="series:"] canvas', (c) => c.length), conditions.length);
  await shot('series');
  // Hover the third audit of the first chart: the tooltip names its build and model.
  const first = page.locator('[data-chart^="series:"] .u-over').first();
  const box = await first.boundingBox();
  const xOf = (i) => page.evaluate(([name, i]) => window.__console.charts[name].plot.valToPos(i, 'x'), [`series:0:${conditions[0]}`, i]);
  await page.mouse.move(box.x + (await xOf(2)), box.y + box.height / 2);
  const tip = page.locator('[data-chart^="series:"] .tip.on').first();
  await tip.waitFor();
  const tipText = await tip.textContent();
  assert.ok(tipText.includes(`audit #${seriesAudits[2]}`), tipText);
  assert.ok(tipText.includes('build: ' + api_.timeline[2].fingerprint.after.build_info), tipText);
  // Cursors are synced: the other charts' cursors are on the same audit. (Before the
  // screenshot: a full-page one resizes the page, and the charts with it.)
  const idx = await page.evaluate(() => Object.entries(window.__console.charts).filter(([k]) => k.startsWith('series:')).map(([, c]) => c.plot.cursor.idx));
  assert.ok(idx.every((i) => i === 2), JSON.stringify(idx));
  await shot('series-hover');
  await page.mouse.move(box.x + (await xOf(2)), box.y + box.height / 2);
  // Drag to zoom on the first chart: every chart follows.
  await page.mouse.move(box.x + (await xOf(0)) - 5, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + (await xOf(1)) + 5, box.y + 20, { steps: 5 });
  await page.mouse.up();
  const scales = await page.evaluate(() => Object.entries(window.__console.charts).filter(([k]) => k.startsWith('series:')).map(([, c]) => [c.plot.scales.x.min, c.plot.scales.x.max]));
  assert.ok(scales[0][1] - scales[0][0] < 2.5, `zoomed: ${JSON.stringify(scales)}`);
  assert.ok(scales.every((s) => s[0] === scales[0][0] && s[1] === scales[0][1]), JSON.stringify(scales));
  await page.dblclick('[data-chart^="series:"] .u-over');
  // A click on a point opens its audit.
  const x1 = box.x + (await xOf(1));
  await navigate(() => page.mouse.click(x1, box.y + box.height / 2));
  assert.equal(await page.evaluate(() => location.hash), '#/audits/' + seriesAudits[1]);
  assert.ok(await page.$('[data-testid=findings]'), 'the audit page rendered');
  noErrors();
});

await check('compare: two audits\' baselines side by side', async () => {
  const c = await get(`/v1/compare?a=${seriesAudits[0]}&b=${seriesAudits[1]}`);
  await open(`#/compare?a=${seriesAudits[0]}&b=${seriesAudits[1]}`);
  const summary = await page.textContent('[data-testid=compare-summary]');
  assert.ok(summary.startsWith(`${c.summary.compared} baselines in both: ${c.summary.logit_identical} logit-identical`), summary);
  assert.equal(await page.$$eval('main table tbody tr', (r) => r.length), c.baselines.length);
  await shot('compare');
  noErrors();
});

await check('schedules: the list and a schedule that has not fired', async () => {
  await open('#/schedules');
  const s = (await get('/v1/schedules')).schedules[0];
  assert.ok((await page.textContent('main')).includes(s.cron));
  await open(`#/schedules/${s.id}`);
  assert.ok((await page.textContent('main')).includes('fired no audit yet'));
  noErrors();
});

await check('the submit form refuses a bad value naming the field, then creates a job that runs on llama-server', async () => {
  const before = (await get('/v1/audits?limit=500')).audits.length;
  await open('#/submit');
  await page.check('input[name=backend][value=tiny]');
  await page.fill('input[name=n_predict]', '0');
  await page.click('form[data-testid=submit-form] button[type=submit]');
  const err = page.locator('[data-testid=submit-error]');
  await err.waitFor();
  assert.match(await err.textContent(), /^n_predict: /);
  assert.ok(await page.$('input[name=n_predict].invalid'));
  assert.equal((await get('/v1/audits?limit=500')).audits.length, before, 'nothing stored for a refused spec');
  errors.length = 0;  // the refused POST's 400 is the browser's own log line
  await page.selectOption('select[name=preset]', '');  // the spec is the overrides alone
  await page.fill('input[name=n_predict]', '8');
  await page.fill('input[name=tags]', 'console, form');
  await page.fill('textarea[name=prompts]', 'Submitted from the console');
  await page.fill('textarea[name=extra]', '{"conditions": [{"name": "repeat", "kind": "repeat", "replicates": 2}, {"name": "control_seed", "kind": "control_seed", "replicates": 1, "seeded": true}]}');
  await shot('submit');
  // The audit's page renders once the job has ended (it long-polls until then).
  await navigate(() => page.click('form[data-testid=submit-form] button[type=submit]'), { timeout: 120000 });
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /^#\/audits\/\d+$/);
  const id = Number(hash.split('/')[2]);
  assert.ok(await page.$('[data-testid=findings]'), 'the findings of the finished audit');
  const job = await get(`/v1/audits/${id}`);
  assert.equal(job.status, 'done');
  assert.deepEqual(job.tags, ['console', 'form']);
  assert.equal(job.progress.failed, 0);
  const runs = (await get(`/v1/audits/${id}/runs`)).runs;
  assert.ok(runs.length >= 3 && runs.every((r) => r.status === 'ok' && r.prompt === 'Submitted from the console'));
  noErrors();
});

await check('a 404 page for an unknown audit and an unknown page', async () => {
  await open('#/audits/999999');
  assert.match(await page.textContent('[data-testid=not-found]'), /no audit with id '999999'/);
  await shot('not-found');
  await open('#/nowhere');
  assert.match(await page.textContent('[data-testid=not-found]'), /no page/i);
  noErrors(true);
});

await check('the token never appeared in a URL, and every API request carried it', async () => {
  assert.ok(requests.length > 20);
  for (const r of requests) {
    assert.ok(!r.url.includes(token), r.url);
    if (new URL(r.url).pathname.startsWith('/v1/') && !r.url.endsWith('/v1/info')) assert.equal(r.auth, `Bearer ${token}`, r.url);
  }
});

await check('the HTML report of an audit whose numbers moved opens offline, fetches nothing, and shows the verdict first and the plot', async () => {
  const kvuAudit = Number(process.env.KVU_AUDIT);
  const html = (await api(`/v1/audits/${kvuAudit}/report?format=html`)).text;
  const file = `${artifacts}/audit-${kvuAudit}.html`;
  writeFileSync(file, html);
  const offline = await browser.newContext({ offline: true, javaScriptEnabled: false, viewport: { width: 1200, height: 900 } });
  const fetched = [];
  await offline.route('**/*', (route) => {
    if (!route.request().url().startsWith('file://')) fetched.push(route.request().url());
    return route.request().url().startsWith('file://') ? route.continue() : route.abort();
  });
  const report = await offline.newPage();
  await report.goto(`file://${file}`);
  assert.deepEqual(fetched, [], 'the report asked for nothing');
  const order = await report.evaluate(() => [...document.querySelectorAll('section[data-testid]')].map((s) => s.dataset.testid));
  assert.deepEqual(order.slice(0, 3), ['verdict', 'delta', 'report']);
  assert.ok((await report.locator('[data-testid=verdict] li[data-answer=moves], [data-testid=verdict] li[data-answer=mixed]').count()) > 0);
  const dots = await report.locator('[data-testid=delta-plot] circle').count();
  assert.ok(dots > 0, 'the streams that moved are plotted');
  const box = await report.locator('[data-testid=delta-plot]').boundingBox();
  assert.ok(box && box.width > 300 && box.height > 150, JSON.stringify(box));
  assert.ok((await report.locator('[data-testid=reproduce] pre').first().innerText()).includes(`logitaudit replay ${kvuAudit}`));
  await report.screenshot({ path: `${artifacts}/html-report.png`, fullPage: true });
  await offline.close();
});

await browser.close();
writeFileSync(`${artifacts}/timings.json`, JSON.stringify({ audit_page_ms: auditMs }));
if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all console checks passed');
