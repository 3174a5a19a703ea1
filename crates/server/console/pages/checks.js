// Checks: CheckRuns (server, network, collective) with their history and
// reports — the nccl-tests table for collective checks — kept live by a watch.
import { page, h, api, get, age, badge, table, pagedList, errorBox, collection, watch } from '../app.js';
import { t, strings } from '../i18n.js';

strings({
  en: {
    checksTitle: 'Checks', checkType: 'Type', nodes: 'Nodes', started: 'Started', finished: 'Finished', report: 'Report',
    item: 'Item', method: 'Method', criterion: 'Criterion', advice: 'Advice', result: 'Result', pass: 'Pass',
    operation: 'Operation', from: 'From', to: 'To', transport: 'Transport', bandwidth: 'Bandwidth (GB/s)', latency: 'Latency (µs)',
    terminate: 'Terminate', exportJson: 'Export JSON', exportCsv: 'Export CSV',
  },
  zh: {
    checksTitle: '一键检测', checkType: '类型', nodes: '节点', started: '开始', finished: '结束', report: '报告',
    item: '检测项', method: '检测方法', criterion: '判定标准', advice: '处理建议', result: '结果', pass: '通过',
    operation: '算子', from: '源', to: '目的', transport: '传输', bandwidth: '带宽 (GB/s)', latency: '时延 (µs)',
    terminate: '终止', exportJson: '导出 JSON', exportCsv: '导出 CSV',
  },
});

const GROUP = 'ringleader.io/v1alpha1';
const PLURAL = 'checkruns';

function download(name, type, text) {
  const a = h('a', { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

function csv(rows) {
  const cols = ['operation', 'data_size', 'aveg_time_us', 'alg_bandwidth', 'bus_bandwidth', 'check_result'];
  const q = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return [cols.join(','), ...rows.map((r) => cols.map((c) => q(r[c] ?? '')).join(','))].join('\n');
}

function report(run) {
  const r = get(run, 'status.report', {});
  const parts = [];
  if ((r.items || []).length) {
    parts.push(table([
      [t('node'), (i) => i.node], [t('item'), (i) => i.name], [t('method'), (i) => i.method], [t('criterion'), (i) => i.criterion],
      [t('result'), (i) => i.result], [t('pass'), (i) => badge(i.pass ? 'Pass' : 'Fail')], [t('advice'), (i) => (i.pass ? '' : i.advice)],
    ], r.items, { caption: t('report') }));
  }
  if ((r.rows || []).length) {
    parts.push(table([
      [t('operation'), (x) => x.operation], ['data_size(Bytes)', (x) => x.data_size], ['aveg_time(us)', (x) => Number(x.aveg_time_us).toFixed(2)],
      ['alg_bandwidth(GB/s)', (x) => Number(x.alg_bandwidth).toFixed(3)], ['bus_bandwidth(GB/s)', (x) => Number(x.bus_bandwidth).toFixed(3)],
      ['check_result', (x) => badge(x.check_result === 'success' ? 'Pass' : x.check_result)],
    ], r.rows, { caption: t('report') }));
  }
  if ((r.pairs || []).length) {
    parts.push(table([
      [t('from'), (p) => p.from], [t('to'), (p) => p.to], [t('transport'), (p) => p.transport],
      [t('bandwidth'), (p) => Number(p.bandwidth_gbps).toFixed(3)], [t('latency'), (p) => Number(p.latency_us).toFixed(1)],
      [t('pass'), (p) => badge(p.pass ? 'Pass' : 'Fail')],
    ], r.pairs, { caption: t('report') }));
  }
  if (r.summary) parts.push(h('p', {}, r.summary));
  return parts;
}

async function detail(main, name, signal) {
  const path = `${collection(GROUP, PLURAL, '')}/${encodeURIComponent(name)}`;
  let run = await api(path, { signal });
  const body = h('div', { id: 'check-report' });
  const note = h('p', { role: 'status' });
  const render = () => body.replaceChildren(
    h('p', {}, badge(get(run, 'status.phase')), ' ', get(run, 'spec.type'), ' · ', (get(run, 'spec.nodes', []) || []).join(', '),
      ' · ', get(run, 'status.message')),
    ...report(run));
  main.append(h('h1', {}, `${t('checksTitle')}: ${name}`), h('div', { class: 'toolbar' },
    h('button', { type: 'button', id: 'terminate', onclick: async () => {
      try { await api(path, { method: 'PATCH', type: 'application/merge-patch+json', body: { spec: { terminate: true } }, signal }); } catch (e) { note.replaceChildren(errorBox(e)); }
    } }, t('terminate')),
    h('button', { type: 'button', onclick: () => download(`${name}.json`, 'application/json', JSON.stringify(run, null, 2)) }, t('exportJson')),
    h('button', { type: 'button', onclick: () => download(`${name}.csv`, 'text/csv', csv(get(run, 'status.report.rows', []))) }, t('exportCsv'))),
  note, body);
  render();
  watch(collection(GROUP, PLURAL, ''), get(run, 'metadata.resourceVersion'), (type, o) => {
    if (get(o, 'metadata.name') !== name || type === 'DELETED') return;
    run = o;
    render();
  }, signal, null, { fieldSelector: `metadata.name=${name}` });
}

page('checks', async (main, args, params, signal) => {
  if (args[0]) return detail(main, args[0], signal);
  main.append(h('h1', {}, t('checksTitle')), h('p', { class: 'muted' }, 'ringleader check server|network|collective --nodes …'));
  pagedList(main, {
    path: collection(GROUP, PLURAL, ''), signal, caption: t('checksTitle'),
    columns: [
      [t('name'), (o) => h('a', { href: `#/checks/${encodeURIComponent(get(o, 'metadata.name'))}` }, get(o, 'metadata.name'))],
      [t('checkType'), (o) => get(o, 'spec.type')],
      [t('nodes'), (o) => (get(o, 'spec.nodes', []) || []).join(', ')],
      [t('phase'), (o) => badge(get(o, 'status.phase'))],
      [t('started'), (o) => age(get(o, 'status.startTime'))],
    ],
  });
}, true);
