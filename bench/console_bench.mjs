// The console's audit page in Debian's chromium: from navigation to the findings, the tables
// and every chart drawn, N times (median and worst), beside the time the same page's API reads
// take alone (the baseline: what the page cannot be faster than), and the bytes the console
// serves, plain and gzip-compressed. Prints one JSON object.
// Usage: node bench/console_bench.mjs DAEMON_URL AUDIT_ID [N]
import { createRequire } from 'node:module';
const require = createRequire(new URL('../tests/console/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [base, audit, times = '15'] = process.argv.slice(2);
const n = Number(times);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
await page.goto(`${base}/#/audits`);
await page.waitForFunction(() => document.querySelector('#main').dataset.state === 'ready');
const runs = (await (await fetch(`${base}/v1/audits/${audit}/runs`)).json()).runs.length;

const page_ms = [], api_ms = [];
for (let i = 0; i < n; i++) {
  // Away and back: every visit fetches and renders the audit anew (files come from the cache).
  await page.evaluate(() => { location.hash = '#/schedules'; });
  await page.waitForFunction(() => document.querySelector('#main').dataset.state === 'ready' && location.hash === '#/schedules');
  page_ms.push(await page.evaluate(async (id) => {
    const before = document.querySelector('#main');
    const t0 = performance.now();
    location.hash = '#/audits/' + id;
    // Each navigation renders into a new <main>: done when that one is ready (its charts are
    // drawn when created) and the browser has painted it.
    await new Promise((resolve) => {
      const poll = () => {
        const main = document.querySelector('#main');
        if (main !== before && main.dataset.state === 'ready') requestAnimationFrame(() => resolve());
        else setTimeout(poll, 1);
      };
      poll();
    });
    return performance.now() - t0;
  }, audit));
  api_ms.push(await page.evaluate(async (id) => {
    const t0 = performance.now();
    await (await fetch(`/v1/audits/${id}`)).json();
    await Promise.all(['report', 'runs', 'bursts', 'fingerprints'].map((p) => fetch(`/v1/audits/${id}/${p}`).then((r) => r.json())));
    return performance.now() - t0;
  }, audit));
}
const charts = await page.evaluate(() => Object.keys(window.__console.charts).filter((k) => k.startsWith('hist:')).length);
await browser.close();

const html = await (await fetch(base + '/')).text();
const files = ['/', ...[...html.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)].map((m) => m[1])];
let plain = 0, gzip = 0;
for (const f of files) {
  plain += Number((await fetch(base + f, { headers: { 'Accept-Encoding': 'identity' } })).headers.get('content-length'));
  const r = await fetch(base + f, { headers: { 'Accept-Encoding': 'gzip' } });
  await r.arrayBuffer();
  gzip += Number(r.headers.get('content-length'));
}
console.log(JSON.stringify({
  runs, charts, visits: n,
  audit_page_median_ms: Math.round(median(page_ms)), audit_page_max_ms: Math.round(Math.max(...page_ms)),
  api_reads_median_ms: Math.round(median(api_ms)),
  served_bytes: plain, served_gzip_bytes: gzip,
}));
