// #/audits/{id}/runs/{run}: one run against its baseline: its sampling and verdict, |Δ logprob|
// by position, the batch width at every decode step of a burst (with a minimal reproduction on
// the live server for one that moved), and the top-k lists where the streams first differ.
import { api, tokenFor } from './api.js';
import { decadeLabels, makeChart, markerPlugin } from './charts.js';
import { WHOLE, badge, h, meta, num, put, state, table } from './dom.js';

function runMeta(id, run, base) {
  const v = run.verdict;
  return [
    h('p', null, h('a', { href: '#/audits/' + Number(id) }, `← audit #${Number(id)}`)),
    h('h1', null, `Run ${run.id}: ${run.condition} on ${run.backend} `, v ? badge(v.logit_identical ? 'identical' : 'diverged') : null),
    meta([
      ['prompt', h('span', { 'data-testid': 'prompt' }, run.prompt)],
      ['replicate', String(run.replicate)],
      ['sampling', `temperature ${run.params.temperature}, seed ${run.params.seed ?? '–'}, cache_prompt ${run.params.cache_prompt}, slot ${run.params.id_slot ?? 'any'}`],
      ['status', run.status + (run.error ? ': ' + run.error : '')],
      run.digests ? ['digests', h('span', { class: 'mono' }, `logit ${run.digests.logit}  token ${run.digests.token}  (${run.digests.tokens} tokens)`)] : null,
      run.pruned_at ? ['bytes', h('span', { 'data-testid': 'pruned' }, `pruned by the retention policy at ${run.pruned_at}: its tokens are gone, its digests and verdict stay`)] : null,
      v ? ['verdict', `logits ${v.logit_identical ? 'identical' : 'differ from position ' + v.first_logit_difference}; tokens ${v.token_identical ? 'identical' : 'differ from position ' + v.first_token_difference}; max |Δ| ${num(v.max_abs_delta)}, max ${v.max_ulp} ulp` + (v.margin_at_flip !== null ? `, margin at the flip ${num(v.margin_at_flip)}` : '')] : null,
      v && v.flag !== 'none' ? ['evidence', `${v.flag}: ${v.flag_reason || ''} (counted apart)`] : null,
      base ? ['baseline', h('a', { href: `#/audits/${Number(id)}/runs/${Number(base.id)}` }, `run ${base.id}`)] : ['baseline', run.condition === 'baseline' ? 'this run is a baseline' : 'none'],
    ])];
}

// |Δ logprob| per position of the sampled token, and the largest over the top-k ids both share;
// the number of positions identical in both.
function deltas(run, base) {
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
  return { n, zeros, data: [x, sampled, topk] };
}

function deltaChart(main, run, d) {
  const v = run.verdict;
  const chartBox = h('section', { 'data-testid': 'delta-chart' }, h('h2', null, '|Δ logprob| against the baseline, by position'),
    h('p', { class: 'muted' }, `${d.zeros} of ${d.n} positions identical (gaps on the log scale).`));
  main.append(chartBox);
  const marks = [];
  if (v && v.first_logit_difference >= 0) marks.push({ x: v.first_logit_difference, label: 'first logit difference', color: '#e67800' });
  if (v && v.first_token_difference >= 0) marks.push({ x: v.first_token_difference, label: 'first token difference', color: '#c62828', row: 1 });
  if (d.zeros < d.n) {
    makeChart('delta', chartBox, {
      height: 260, scales: { x: { time: false }, y: { distr: 3 } },
      cursor: { sync: { key: 'run-' + run.id } },
      axes: [{ label: 'position', incrs: WHOLE }, { label: '|Δ logprob|', size: 60, space: 18, values: decadeLabels }],
      series: [{ label: 'position' },
        { label: 'sampled token', stroke: '#1f4e79', width: 1.5, points: { show: true, size: 4 }, spanGaps: false },
        { label: 'top-k (shared ids), max', stroke: '#8e44ad', width: 1, dash: [4, 3], points: { show: true, size: 3 }, spanGaps: false }],
      plugins: [markerPlugin(marks)],
    }, d.data);
  } else chartBox.append(h('p', null, 'Identical at every position.'));
  state.charts.markers = marks;
}

// A divergent burst run: shrink its burst to a minimal reproduction on the live server.
function reproButton(id, run) {
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
  return h('p', null, start, ' ', out);
}

// The batch at every decode step (burst members): the width of each position's step, on the same
// x axis as |Δ| with a synced cursor, joins and finishes of the burst's other requests marked.
async function widthTrack(main, id, run, n) {
  const v = run.verdict;
  const steps = run.decode_steps;
  if (!steps || !steps.width || !steps.width.length) {
    // A plain burst (its condition's decode_steps off) has no steps, but its difference can
    // still be reproduced.
    if (!v || v.logit_identical) return;
    const bursts = await api(`/v1/audits/${id}/bursts`);
    const b = bursts.bursts.find((x) => x.group === run.group);
    if (!b) return;
    main.append(h('section', { 'data-testid': 'plain-burst' }, h('h2', null, 'Batch width at each decode step'),
      h('p', { class: 'muted' }, b.streamed ? 'This burst streamed, but no decode steps could be read from its token times.'
        : "This burst's answers were plain (its condition's decode_steps is off), so its decode steps were not reconstructed."),
      reproButton(id, run)));
    return;
  }
  const widthBox = h('section', { 'data-testid': 'width-track' }, h('h2', null, 'Batch width at each decode step'),
    h('p', { class: 'muted' }, `${steps.steps} steps of this burst, from the ${steps.clock}'s per-token times; separation ${num(steps.separation)} (above 1: every token nearer its own step than the next)` +
      (v && v.at_difference ? `; at the first difference: width ${v.at_difference.width}${v.at_difference.width_before === null ? ' (the first token)' : ' (was ' + v.at_difference.width_before + ')'}${v.at_difference.events ? ', ' + v.at_difference.events : ''}` : '')));
  main.append(widthBox);
  const events = steps.events.map((e) => ({ x: e.position, label: `${e.request} ${e.event}`, color: e.event === 'joined' ? '#2e7d32' : '#6d4c41', row: 0 }));
  const wx = steps.width.map((_, i) => i);
  if (v && !v.logit_identical) widthBox.append(reproButton(id, run));
  makeChart('width', widthBox, {
    height: 160, scales: { x: { time: false, range: [0, Math.max(n - 1, wx.length - 1)] }, y: { range: [0, Math.max(...steps.width) + 1] } },
    cursor: { sync: { key: 'run-' + run.id } },
    axes: [{ label: 'position', incrs: WHOLE }, { label: 'width', size: 60, incrs: WHOLE }],
    series: [{ label: 'position' }, { label: 'sequences in the step', stroke: '#1f4e79', width: 2, paths: uPlot.paths.stepped({ align: 1 }) }],
    plugins: [markerPlugin(events)],
  }, [wx, steps.width]);
  state.charts.events = events;
}

// One side of the top-k lists at position `at`: its ids and logprobs, each against the other side's.
function topkSide(label, s, o, at) {
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
}

export async function pageRun(main, id, runId) {
  await tokenFor(false);
  const run = await api(`/v1/audits/${id}/runs/${runId}/stream`);
  let base = null;
  if (run.baseline_group !== null && run.baseline_group !== undefined) {
    const list = await api(`/v1/audits/${id}/runs?backend=${encodeURIComponent(run.backend)}&condition=baseline`);
    const b = list.runs.find((r) => r.group === run.baseline_group);
    if (b) base = await api(`/v1/audits/${id}/runs/${b.id}/stream`);
  }
  put(main, runMeta(id, run, base));
  if (run.pruned_at) return;  // nothing to chart: the verdict above was judged while the bytes were kept
  if (!base) {
    main.append(h('h2', null, 'Output'), h('pre', null, run.content));
    return;
  }
  const d = deltas(run, base);
  deltaChart(main, run, d);
  await widthTrack(main, id, run, d.n);
  // The top-k lists side by side where the streams first differ.
  const v = run.verdict;
  const at = v && v.first_logit_difference >= 0 ? v.first_logit_difference : -1;
  if (at >= 0 && at < d.n)
    main.append(h('section', { 'data-testid': 'topk' }, h('h2', null, `Top-k at position ${at}, the first difference`),
      h('div', { class: 'grid2' }, topkSide('baseline', base, run, at), topkSide('this run', run, base, at))));
  main.append(h('div', { class: 'grid2' }, h('div', null, h('h2', null, 'Baseline output'), h('pre', null, base.content)),
    h('div', null, h('h2', null, 'This run'), h('pre', null, run.content))));
}
