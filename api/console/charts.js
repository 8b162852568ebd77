// Charts (uPlot, loaded before the modules as a global): markers at x values, decade labels on a
// log axis, and a chart that registers what it plots in state.charts.
import { h, state } from './dom.js';

export function destroyCharts() {
  for (const c of Object.values(state.charts)) if (c.plot) c.plot.destroy();
  state.charts = {};
}
export function stopTimers() {
  for (const t of state.timers) clearTimeout(t);
  state.timers = [];
}
export function chartWidth(el) { return Math.max(320, (el.clientWidth || 900) - 14); }

// Vertical lines with labels at x values: [{x, label, color}].
export function markerPlugin(marks) {
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
export function decadeLabels(u, ticks) {
  return ticks.map((t) => {
    if (!t) return '';
    const e = Math.log10(t);
    return Math.abs(e - Math.round(e)) < 1e-9 ? '1e' + Math.round(e) : '';
  });
}
state.decadeLabels = decadeLabels;

export function makeChart(name, container, opts, data) {
  const box = h('div', { class: 'chart ' + name.split(':')[0], 'data-chart': name });
  container.append(box);
  // Reading the container's width lays the page out: only when the chart has no width.
  const plot = new uPlot(Object.assign({ height: 220 }, opts, { width: opts.width || chartWidth(container) }), data, box);
  state.charts[name] = { plot, data };
  return { plot, box };
}
