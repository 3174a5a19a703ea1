// Charts of the embedded history (GET /apis/ringleader.io/v1alpha1/history):
// node, pod, job and queue figures as SVG line charts, redrawn when the
// server's next sample is due rather than on a tight loop.
import { page, h, svg, api, qs, errorBox, sleep } from '../app.js';
import { t, strings } from '../i18n.js';

strings({
  en: {
    chartsTitle: 'Charts', seriesPrefix: 'Series (prefix)', window: 'Window', show: 'Show', noSeries: 'No series under this prefix yet.',
    hour: 'last hour', day: 'last 24 hours', tenMin: 'last 10 minutes', latest: 'latest',
  },
  zh: {
    chartsTitle: '监控图表', seriesPrefix: '序列（前缀）', window: '时间范围', show: '显示', noSeries: '该前缀下暂无序列。',
    hour: '最近 1 小时', day: '最近 24 小时', tenMin: '最近 10 分钟', latest: '最新值',
  },
});

function fmt(v, unit) {
  if (unit === 'bytes') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let x = v;
    while (Math.abs(x) >= 1024 && i < u.length - 1) { x /= 1024; i += 1; }
    return `${x.toFixed(x < 10 && i ? 1 : 0)} ${u[i]}`;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(2)} ${unit || ''}`.trim();
}

/** One series as a labelled SVG line chart (role=img with its own summary). */
export function lineChart(series, width = 420, height = 140) {
  const pts = series.points || [];
  const pad = 28;
  const xs = pts.map((p) => p[0]);
  const ys = pts.map((p) => p[1]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const y1 = Math.max(1e-9, ...ys);
  const x = (v) => pad + ((v - x0) / Math.max(1, x1 - x0)) * (width - pad - 6);
  const y = (v) => height - pad + 6 - (v / y1) * (height - pad - 6);
  const last = ys.length ? ys[ys.length - 1] : null;
  const label = `${series.name}: ${last === null ? t('none') : `${t('latest')} ${fmt(last, series.unit)}`}`;
  const path = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
  return h('figure', { class: 'card chart' },
    h('figcaption', {}, label),
    svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label },
      svg('line', { x1: pad, y1: height - pad + 6, x2: width - 6, y2: height - pad + 6, stroke: '#8c959f' }),
      svg('text', { x: 2, y: 12, 'font-size': 10, fill: '#57606a' }, fmt(y1, series.unit)),
      pts.length ? svg('path', { d: path, fill: 'none', stroke: '#0b5cad', 'stroke-width': 2 }) : null));
}

page('charts', async (main, args, params, signal) => {
  const prefix = params.prefix || 'node/';
  const windowSecs = Number(params.window || 3600);
  const input = h('input', { id: 'series-prefix', name: 'prefix', value: prefix });
  const win = h('select', { id: 'window', name: 'window' },
    [[600, t('tenMin')], [3600, t('hour')], [86400, t('day')]].map(([v, l]) => h('option', { value: v, selected: v === windowSecs }, l)));
  const form = h('form', { class: 'toolbar' },
    h('label', { for: 'series-prefix' }, t('seriesPrefix'), input),
    h('label', { for: 'window' }, t('window'), win),
    h('button', { type: 'submit' }, t('show')));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); location.hash = `#/charts${qs({ prefix: input.value.trim(), window: win.value })}`; });
  const grid = h('div', { class: 'cards wide', id: 'charts' });
  main.append(h('h1', {}, t('chartsTitle')), form, grid);
  // Redrawn once per sampling interval the server reports: one request per
  // interval, bounded by the page's lifetime.
  while (!signal.aborted) {
    let interval = 10;
    try {
      const body = await api(`/apis/ringleader.io/v1alpha1/history${qs({ prefix, sinceSeconds: windowSecs })}`, { signal });
      interval = Math.max(5, Number(body.interval) || 10);
      const series = (body.series || []).slice(0, 60);
      grid.replaceChildren(...(series.length ? series.map((s) => lineChart(s)) : [h('p', { class: 'muted' }, t('noSeries'))]));
    } catch (e) {
      if (signal.aborted) return;
      grid.replaceChildren(errorBox(e));
      if (e.status === 403 || e.status === 400) return;
    }
    await sleep(interval * 1000, signal);
  }
}, true);
