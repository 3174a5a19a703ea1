// Time charts of the embedded history (GET /apis/ringleader.io/v1alpha1/history)
// with clock-time and unit axes, and a panel that keeps a group of them
// current over a chosen range: the job, run, pod and node pages and the
// Charts page draw theirs with it.
import { h, svg, api, qs, get, errorBox, sleep, can } from './app.js';
import { t, strings } from './i18n.js';
import { heldDevices } from './shared.js';

strings({
  en: {
    'metrics.title': 'Metrics', 'metrics.range': 'Range', 'metrics.noData': 'No samples in this range yet.',
    'metrics.latest': 'latest', 'metrics.time': 'Time', 'metrics.loading': 'Loading metrics\u2026',
    'metrics.noDevices': 'Device figures are not shown: their history needs read access to machines, which you do not have.',
    'metrics.firstPods': 'Shown for the first pods only:',
    'range.600': 'last 10 minutes', 'range.3600': 'last hour', 'range.86400': 'last 24 hours',
    'fig.cpu': 'CPU', 'fig.memory': 'Memory', 'fig.ready': 'Node Ready', 'fig.allocated': 'Devices allocated',
    'fig.total': 'Devices', 'fig.utilization': 'Device utilisation', 'fig.deviceMemory': 'Device memory',
    'fig.temperature': 'Device temperature', 'fig.power': 'Device power', 'fig.pods': 'Pods by phase',
    'fig.queue': 'Devices allocated to queues', 'fig.device': 'device',
    'unit.cores': 'cores', 'unit.pods': 'pods', 'unit.devices': 'devices',
  },
  zh: {
    'metrics.title': '监控指标', 'metrics.range': '时间范围', 'metrics.noData': '该时间范围内暂无采样。',
    'metrics.latest': '最新值', 'metrics.time': '时间', 'metrics.loading': '正在加载监控指标\u2026',
    'metrics.noDevices': '未显示加速卡指标：其历史数据需要读取节点的权限，您没有该权限。',
    'metrics.firstPods': '仅显示前几个容器组：',
    'range.600': '最近 10 分钟', 'range.3600': '最近 1 小时', 'range.86400': '最近 24 小时',
    'fig.cpu': 'CPU', 'fig.memory': '内存', 'fig.ready': '节点就绪', 'fig.allocated': '已分配设备',
    'fig.total': '设备总数', 'fig.utilization': '设备利用率', 'fig.deviceMemory': '设备显存',
    'fig.temperature': '设备温度', 'fig.power': '设备功耗', 'fig.pods': '各状态容器组数',
    'fig.queue': '队列已分配设备', 'fig.device': '设备',
    'unit.cores': '核', 'unit.pods': '个', 'unit.devices': '个',
  },
});

export const RANGES = [600, 3600, 86400];
const HISTORY = '/apis/ringleader.io/v1alpha1/history';
const COLOURS = ['#0b5cad', '#cf222e', '#1a7f37', '#9a6700', '#8250df', '#bc4c00', '#0a7b83', '#57606a'];

/** A value in its unit, as a reader says it (bytes in KiB…TiB, ratios in %). */
export function fmt(v, unit) {
  if (!Number.isFinite(v)) return '';
  if (unit === 'bytes') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let x = v;
    while (Math.abs(x) >= 1024 && i < u.length - 1) { x /= 1024; i += 1; }
    return `${x.toFixed(x < 10 && i ? 1 : 0)} ${u[i]}`;
  }
  if (unit === 'ratio') return `${Math.round(v * 100)} %`;
  if (unit === 'celsius') return `${Math.round(v)} \u00b0C`;
  if (unit === 'watts') return `${Math.round(v)} W`;
  if (unit === 'boolean') return v >= 0.5 ? t('state.True') : t('state.False');
  const n = Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)));
  const word = ['cores', 'pods', 'devices'].includes(unit) ? t(`unit.${unit}`) : (unit || '');
  return `${n} ${word}`.trim();
}

/** The top of a y axis: a round number at or above `max` (1 for ratios and booleans). */
function niceTop(max, unit) {
  if (unit === 'ratio' || unit === 'boolean') return 1;
  if (!(max > 0)) return 1;
  if (unit === 'bytes') {
    let p = 1;
    while (p * 1024 <= max) p *= 1024;
    const steps = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
    return p * steps.find((s) => s * p >= max);
  }
  const p = 10 ** Math.floor(Math.log10(max));
  return p * [1, 2, 2.5, 5, 10].find((s) => s * p >= max);
}

/** Tick spacing of a range: about five labelled clock times across it. */
function tickStep(range) {
  if (range <= 900) return 120;
  if (range <= 3600) return 600;
  if (range <= 6 * 3600) return 3600;
  return 4 * 3600;
}

function clock(sec) {
  const d = new Date(sec * 1000);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

/**
 * A line chart over `[from, to]` (unix seconds): x ticks at clock times, y
 * ticks in the unit, one line per entry of `lines` ({label, points}), a
 * legend naming each (the colour is never the only cue) and a summary of
 * the latest values for screen readers.
 */
export function timeChart({ title, unit, lines, id }, from, to) {
  const W = 440;
  const H = 180;
  const L = 100;
  const R = 22;
  const T = 10;
  const B = 28;
  const all = lines.flatMap((l) => l.points.map((p) => p[1]));
  const top = niceTop(Math.max(0, ...all), unit);
  const x = (s) => L + ((s - from) / Math.max(1, to - from)) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const grid = [];
  for (const v of [0, top / 2, top]) {
    grid.push(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: v ? '#d0d7de' : '#8c959f' }));
    grid.push(svg('text', { x: L - 4, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 12, fill: '#57606a', class: 'y-tick' }, fmt(v, unit)));
  }
  const step = tickStep(to - from);
  for (let s = Math.ceil(from / step) * step; s <= to; s += step) {
    grid.push(svg('line', { x1: x(s), x2: x(s), y1: H - B, y2: H - B + 4, stroke: '#8c959f' }));
    grid.push(svg('text', { x: x(s), y: H - 8, 'text-anchor': 'middle', 'font-size': 13, fill: '#57606a', class: 'x-tick' }, clock(s)));
  }
  const drawn = lines.map((l, i) => {
    const pts = l.points.filter((p) => p[0] >= from);
    const d = pts.map((p, j) => `${j ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
    if (!pts.length) return null;
    const [lx, ly] = pts[pts.length - 1];
    // The latest sample as a dot: a series of one sample draws no line.
    return svg('g', {}, svg('path', { d, fill: 'none', stroke: COLOURS[i % COLOURS.length], 'stroke-width': 2 }),
      svg('circle', { cx: x(lx).toFixed(1), cy: y(ly).toFixed(1), r: 3, fill: COLOURS[i % COLOURS.length] }));
  });
  const latest = lines.map((l) => {
    const last = l.points[l.points.length - 1];
    return `${l.label}: ${last ? fmt(last[1], unit) : t('none')}`;
  });
  const summary = `${title}, ${RANGES.includes(to - from) ? t(`range.${to - from}`) : ''}: ${t('metrics.latest')} ${latest.join('; ')}`;
  return h('figure', { class: 'card chart', id, 'data-unit': unit },
    h('figcaption', {}, title),
    svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary },
      svg('line', { x1: L, x2: L, y1: T, y2: H - B, stroke: '#8c959f' }), ...grid, ...drawn),
    lines.length > 1 || lines[0].label !== title
      ? h('ul', { class: 'legend' }, lines.map((l, i) => {
        const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
        swatch.style.background = COLOURS[i % COLOURS.length]; // CSSOM: the CSP forbids style attributes
        const last = l.points[l.points.length - 1];
        return h('li', {}, swatch, `${l.label} `, h('span', { class: 'muted' }, last ? fmt(last[1], unit) : '\u2014'));
      }))
      : null);
}

/** The series of named objects' figures, 100 names a request (the URL stays short). */
async function fetchSeries(names, range, signal) {
  const out = [];
  let interval = 10;
  for (let i = 0; i < names.length; i += 100) {
    const body = await api(`${HISTORY}${qs({ series: names.slice(i, i + 100).join(','), sinceSeconds: range })}`, { signal });
    interval = Number(body && body.interval) || interval;
    out.push(...((body && body.series) || []));
  }
  return { series: out, interval };
}

/**
 * Which chart a series goes on and the line it is there: `[key, title,
 * line label]`, from its name (the forms are in
 * crates/observability/src/history/names.rs).
 */
export function chartOf(name) {
  const s = String(name).split('/');
  if (s[0] === 'pod' && s.length === 4) return [s[3], t(`fig.${s[3]}`), s[2]];
  if (s[0] === 'node' && s[2] === 'device' && s.length === 5) {
    const key = s[4] === 'memory' ? 'deviceMemory' : s[4];
    return [key, t(`fig.${key}`), `${s[1]} ${t('fig.device')} ${s[3]}`];
  }
  if (s[0] === 'node' && (s[2] === 'devices-allocated' || s[2] === 'devices-total')) {
    const key = s[2] === 'devices-total' ? 'total' : 'allocated';
    return [key, t(`fig.${key}`), `${s[1]} ${s.slice(3).join('/')}`];
  }
  if (s[0] === 'node' && s.length === 3) return [s[2], t(`fig.${s[2]}`), s[1]];
  if (s[0] === 'job') {
    const phase = s[s.length - 1].replace(/^pods-/, '');
    return ['pods', t('fig.pods'), t(`state.${phase}`)];
  }
  if (s[0] === 'queue') return ['queue', t('fig.queue'), `${s[1]} ${s.slice(3).join('/')}`];
  return [name, name, name];
}

const ORDER = ['pods', 'cpu', 'memory', 'utilization', 'deviceMemory', 'temperature', 'power', 'allocated', 'total', 'ready', 'queue'];

/** Series grouped onto charts by [`chartOf`], at most `maxLines` lines each. */
function grouped(series, idPrefix, maxLines = 8) {
  const charts = new Map();
  for (const s of series) {
    if (!Array.isArray(s.points) || !s.points.length) continue;
    const [key, title, label] = chartOf(s.name);
    if (!charts.has(key)) charts.set(key, { id: `${idPrefix}-${key}`, title, unit: s.unit, lines: [] });
    const c = charts.get(key);
    if (c.lines.length < maxLines) c.lines.push({ label, points: s.points });
  }
  const rank = (k) => { const i = ORDER.indexOf(k); return i < 0 ? ORDER.length : i; };
  return [...charts.entries()].sort((a, b) => rank(a[0]) - rank(b[0])).map(([, c]) => c);
}

/** A range picker (10 min / 1 h / 24 h) whose choice the whole console keeps. */
export function rangePicker(id, value, onChange) {
  const sel = h('select', { id, name: id },
    RANGES.map((r) => h('option', { value: r, selected: r === value }, t(`range.${r}`))));
  sel.addEventListener('change', () => {
    localStorage.setItem('ringleader-range', sel.value);
    onChange(Number(sel.value));
  });
  return h('label', { for: id }, t('metrics.range'), sel);
}

export function savedRange() {
  const r = Number(localStorage.getItem('ringleader-range'));
  return RANGES.includes(r) ? r : 3600;
}

/**
 * A metrics section: a range picker and the charts of the series `names()`
 * resolves to (asked again each round, so pods that come and go are
 * followed), redrawn once per sampling interval until `signal` aborts.
 * `opts.perSeries` draws one chart a series (the Charts page) rather than
 * one a figure; `opts.prefix` asks by prefix instead of by name.
 */
export function metricsPanel(container, names, signal, opts = {}) {
  let range = opts.range || savedRange();
  const grid = h('div', { class: 'cards wide charts', id: opts.gridId || 'metrics', 'aria-busy': 'true' },
    h('p', { class: 'muted loading', role: 'status' }, t('metrics.loading')));
  const note = h('p', { class: 'muted', id: `${opts.gridId || 'metrics'}-note` });
  let wake = null;
  const toolbar = h('div', { class: 'toolbar' }, rangePicker(`${opts.gridId || 'metrics'}-range`, range, (r) => { range = r; if (wake) wake.abort(); }));
  container.append(toolbar, note, grid);
  const run = async () => {
    while (!signal.aborted) {
      let interval = 10;
      const drawn = range;
      try {
        const now = Math.floor(Date.now() / 1000);
        let got;
        if (opts.prefix) {
          const body = await api(`${HISTORY}${qs({ prefix: opts.prefix, sinceSeconds: drawn })}`, { signal });
          // One chart a series is bounded tighter than charts that group them.
          got = { series: ((body && body.series) || []).slice(0, opts.perSeries ? 60 : 400), interval: Number(body && body.interval) || 10 };
        } else {
          const asked = await names();
          let wanted = asked.names || asked;
          const notes = [asked.note || ''];
          // A device's series is a machine's history: one the identity may
          // not read would refuse the whole request, its own pods' figures too.
          if (wanted.some((n) => n.startsWith('node/')) && !(await can('list', 'ringleader.io/v1alpha1', 'nodes'))) {
            wanted = wanted.filter((n) => !n.startsWith('node/'));
            notes.push(t('metrics.noDevices'));
          }
          note.textContent = notes.filter(Boolean).join(' ');
          got = await fetchSeries(wanted, drawn, signal);
        }
        interval = Math.max(1, got.interval);
        const charts = opts.perSeries
          ? got.series.map((s) => ({ id: undefined, title: s.name, unit: s.unit, lines: [{ label: s.name, points: s.points || [] }] }))
          : grouped(got.series, opts.gridId || 'metrics');
        grid.removeAttribute('aria-busy');
        grid.replaceChildren(...(charts.length ? charts.map((c) => timeChart(c, now - drawn, now)) : [h('p', { class: 'muted' }, opts.empty || t('metrics.noData'))]));
      } catch (e) {
        if (signal.aborted) return;
        grid.removeAttribute('aria-busy');
        grid.replaceChildren(errorBox(e));
        if (e.status === 403 || e.status === 400) return;
      }
      // A range picked mid-request is drawn right after it, not an interval later.
      if (range !== drawn) continue;
      wake = new AbortController();
      const both = wake.signal;
      signal.addEventListener('abort', () => wake.abort(), { once: true });
      await sleep(Math.max(5, interval) * 1000, both);
    }
  };
  run();
}

/** The series of pods' own figures and of the devices they hold on their nodes. */
export function podSeries(pods) {
  const out = [];
  for (const p of pods) {
    const ns = get(p, 'metadata.namespace');
    const name = get(p, 'metadata.name');
    out.push(`pod/${ns}/${name}/cpu`, `pod/${ns}/${name}/memory`);
    const node = get(p, 'spec.nodeName');
    if (!node) continue;
    for (const d of heldDevices(p)) {
      if (!/^\d+$/.test(d)) continue; // device series are named by numeric ids only
      for (const f of ['utilization', 'memory', 'temperature', 'power']) out.push(`node/${node}/device/${d}/${f}`);
    }
  }
  return out;
}

/** A metrics section with its heading, for detail pages. */
export function metricsSection(main, names, signal, id = 'metrics') {
  const el = h('section', { 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, t('metrics.title')));
  main.append(el);
  metricsPanel(el, names, signal, { gridId: id });
  return el;
}
