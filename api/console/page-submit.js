// #/submit: a spec from a preset, backends and overrides, previewed and sent; the daemon's
// message names the field it refuses.
import { api, tokenFor } from './api.js';
import { h, put } from './dom.js';

// #/submit
export async function pageSubmit(main) {
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
