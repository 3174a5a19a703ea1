// Nodes: the node list (server-side paging) with Ready, profile and devices
// used of total, and a node's detail: the device allocation map (one cell
// per device id: free, held by which pod, unhealthy) and the pods on it,
// kept live through a pod watch (that node's pods only, by `spec.nodeName`).
// The list's devices-used figures come from the embedded history, sampled
// by the server every few seconds, so a page of nodes costs one request.
import { page, h, api, list, watch, get, age, badge, table, pagedList, errorBox, collection } from '../app.js';
import { t, strings } from '../i18n.js';
import { metricsPanel } from '../metrics.js';
import { accelerators, nodeReady, heldDevices, jobHref, meter, liveCollection, coalesce, fill, labelled, nodeAllocation, RL_NODES } from '../shared.js';

strings({
  en: {
    'nodes.title': 'Nodes', 'nodes.ready': 'Ready', 'nodes.profile': 'Profile', 'nodes.accelerator': 'Accelerator',
    'nodes.devices': 'Devices used / total', 'nodes.unhealthy': 'Unhealthy devices', 'nodes.node': 'Node',
    'nodes.deviceMap': 'Device allocation', 'nodes.device': 'Device', 'nodes.free': 'free', 'nodes.held': 'held by',
    'nodes.bad': 'unhealthy', 'nodes.netBad': 'network unhealthy', 'nodes.pods': 'Pods on this node',
    'nodes.pod': 'Pod', 'nodes.job': 'Job', 'nodes.heldDevices': 'Devices', 'nodes.tor': 'Switch (ToR)',
    'nodes.addresses': 'Addresses', 'nodes.capacity': 'Capacity', 'nodes.legend': 'Legend',
    'nodes.noDevices': 'This node has no accelerator devices.', 'nodes.noRl': 'Device health is not readable: ',
    'nodes.outside': 'Held ids outside the node\u2019s capacity', 'nodes.gone': 'This node was deleted.',
    'nodes.labels': 'Labels', 'nodes.back': 'All nodes', 'nodes.summary': 'Free / held / unhealthy',
    'nodes.noHistory': 'The metrics history is not readable with this token.',
  },
  zh: {
    'nodes.title': '节点', 'nodes.ready': '就绪', 'nodes.profile': '机型', 'nodes.accelerator': '加速卡',
    'nodes.devices': '已用 / 总设备数', 'nodes.unhealthy': '故障设备', 'nodes.node': '节点',
    'nodes.deviceMap': '设备分配', 'nodes.device': '设备', 'nodes.free': '空闲', 'nodes.held': '占用者',
    'nodes.bad': '故障', 'nodes.netBad': '网络故障', 'nodes.pods': '本节点上的容器组',
    'nodes.pod': '容器组', 'nodes.job': '作业', 'nodes.heldDevices': '设备', 'nodes.tor': '交换机（ToR）',
    'nodes.addresses': '地址', 'nodes.capacity': '总量', 'nodes.legend': '图例',
    'nodes.noDevices': '该节点没有加速卡设备。', 'nodes.noRl': '无法读取设备健康状态：',
    'nodes.outside': '超出节点容量的已占用设备编号', 'nodes.gone': '该节点已被删除。',
    'nodes.labels': '标签', 'nodes.back': '全部节点', 'nodes.summary': '空闲 / 占用 / 故障',
    'nodes.noHistory': '该令牌无法读取监控历史数据。',
  },
});

const NODES = collection('v1', 'nodes');
const PODS = collection('v1', 'pods');
const DONE = new Set(['Succeeded', 'Failed']);

/** The node's profile: the ringleader profile label the agent sets, else the instance type. */
function profileOf(node) {
  const l = get(node, 'metadata.labels', {});
  return l['node.kubernetes.io/instance-type'] || l['beta.kubernetes.io/instance-type'] || '';
}

/**
 * Devices allocated on the shown nodes, from the embedded history's
 * `node/<n>/devices-allocated/<resource>` (one request for the rows a page
 * renders, refreshed at most every 10 s as rows re-render): listing each
 * node's pods here would scan every pod of the cluster once per row.
 * `onFigures(name, used)` gets `null` when the history is not readable.
 */
function allocationOf(signal, onFigures) {
  const cache = new Map(); // name → { used, at }
  const pending = new Map(); // name → node object
  const flush = async () => {
    const nodes = [...pending.values()];
    pending.clear();
    const figures = await nodeAllocation(nodes, signal).catch(() => null);
    for (const n of nodes) {
      const name = get(n, 'metadata.name');
      const per = figures && (figures.get(name) || new Map());
      const used = per ? [...per.values()].reduce((a, v) => a + v, 0) : null;
      cache.set(name, { used, at: Date.now() });
      onFigures(name, used);
    }
  };
  const later = coalesce(flush, 50);
  return (node) => {
    const name = get(node, 'metadata.name');
    const known = cache.get(name);
    if (known) onFigures(name, known.used);
    if (!known || Date.now() - known.at > 10000) { pending.set(name, node); later(); }
  };
}

// ---- list ----

page('nodes', async (main, args, params, signal) => {
  if (args.length) return detail(main, args[0], signal);
  main.append(h('h1', {}, t('nodes.title')));
  const used = new Map(); // node → the latest "used / total" cell rendered
  const totals = new Map();
  const rl = new Map();
  const allocation = allocationOf(signal, (name, n) => {
    const cell = used.get(name);
    if (cell) renderUsed(cell, n, totals.get(name) || 0);
  });
  const renderUsed = (cell, n, total) => {
    if (n === null) { fill(cell, `? / ${total}`); cell.title = t('nodes.noHistory'); return; }
    fill(cell, `${n} / ${total}`, total ? meter(n, total, `${cell.dataset.node} ${t('nodes.devices')}`) : null);
  };
  const unhealthyCells = new Map();
  const unhealthyText = (name) => {
    const r = rl.get(name);
    if (!r) return '';
    const ids = new Set([...get(r, 'status.unhealthyDevices', []), ...get(r, 'status.networkUnhealthyDevices', [])]);
    return ids.size ? [...ids].join(', ') : '0';
  };
  // Device health is on ringleader's Node objects; one small live list (a
  // user who may not read them still sees the rest of the page).
  liveCollection(RL_NODES, {}, signal, (items) => {
    rl.clear();
    for (const r of items) rl.set(get(r, 'metadata.name'), r);
    for (const [name, cell] of unhealthyCells) cell.textContent = unhealthyText(name);
  }).catch(() => {});
  pagedList(main, {
    path: NODES, signal, caption: t('nodes.title'), limit: 50,
    columns: [
      [t('name'), (n) => h('a', { href: `#/nodes/${encodeURIComponent(get(n, 'metadata.name'))}` }, get(n, 'metadata.name'))],
      [t('nodes.ready'), (n) => badge(nodeReady(n) ? 'Ready' : 'NotReady')],
      [t('nodes.profile'), (n) => profileOf(n)],
      [t('nodes.accelerator'), (n) => accelerators(get(n, 'status.capacity', {})).map(([r]) => r).join(', ')],
      [t('nodes.devices'), (n) => {
        const name = get(n, 'metadata.name');
        const total = accelerators(get(n, 'status.capacity', {})).reduce((a, [, c]) => a + c, 0);
        totals.set(name, total);
        const cell = h('div', { class: 'node-used', 'data-node': name }, '\u2026');
        used.set(name, cell);
        allocation(n);
        return cell;
      }],
      [t('nodes.unhealthy'), (n) => {
        const name = get(n, 'metadata.name');
        const cell = h('span', { 'data-node': name }, unhealthyText(name));
        unhealthyCells.set(name, cell);
        return cell;
      }],
      [t('age'), (n) => age(get(n, 'metadata.creationTimestamp'))],
    ],
  });
}, true);

// ---- detail ----

async function detail(main, name, signal) {
  const core = await api(`${NODES}/${encodeURIComponent(name)}`, { signal });
  const state = { core, rl: null, rlError: null, pods: new Map() };
  const title = h('span', { id: 'node-ready' });
  const facts = h('dl', { class: 'facts', id: 'node-facts' });
  const mapBox = h('div', { id: 'device-map-box' });
  const podsBox = h('div', { id: 'node-pods' });
  const note = h('p', { class: 'muted', role: 'status', id: 'node-note' });
  main.append(
    h('p', {}, h('a', { href: '#/nodes' }, t('nodes.back'))),
    h('h1', {}, `${t('nodes.node')} ${name} `, title), note, facts,
    h('h2', { id: 'device-map-title' }, t('nodes.deviceMap')), mapBox,
    h('h2', { id: 'node-pods-title' }, t('nodes.pods')), podsBox);
  // The node's and its devices' figures over a chosen range.
  const charts = h('section', { 'aria-labelledby': 'node-metrics-title' }, h('h2', { id: 'node-metrics-title' }, t('metrics.title')));
  main.append(charts);
  metricsPanel(charts, null, signal, { prefix: `node/${name}/`, gridId: 'node-metrics' });

  const render = () => {
    title.replaceChildren(badge(nodeReady(state.core) ? 'Ready' : 'NotReady'));
    renderFacts(facts, state);
    renderMap(mapBox, state);
    renderPods(podsBox, state);
  };
  const later = coalesce(render);

  try {
    state.rl = await api(`${RL_NODES}/${encodeURIComponent(name)}`, { signal });
  } catch (e) {
    if (signal.aborted) throw e;
    state.rlError = e;
    note.textContent = `${t('nodes.noRl')}${e.message || e}`;
  }

  // Pods on the node, live.
  const params = { fieldSelector: `spec.nodeName=${name}` };
  const key = (p) => `${get(p, 'metadata.namespace')}/${get(p, 'metadata.name')}`;
  const loadPods = async () => {
    const first = await listBounded(PODS, params, signal);
    state.pods = new Map(first.items.filter((p) => !DONE.has(get(p, 'status.phase'))).map((p) => [key(p), p]));
    render();
    watch(PODS, first.resourceVersion, (type, p) => {
      if (type === 'DELETED' || DONE.has(get(p, 'status.phase'))) state.pods.delete(key(p)); else state.pods.set(key(p), p);
      later();
    }, signal, () => loadPods().catch((e) => { if (!signal.aborted) podsBox.replaceChildren(errorBox(e)); }), params);
  };
  await loadPods();

  // The node objects themselves, live (Ready, capacity, device health).
  const one = { fieldSelector: `metadata.name=${name}` };
  watch(NODES, get(core, 'metadata.resourceVersion'), (type, o) => {
    if (type === 'DELETED') { note.textContent = t('nodes.gone'); return; }
    state.core = o;
    later();
  }, signal, null, one);
  if (state.rl) {
    watch(RL_NODES, get(state.rl, 'metadata.resourceVersion'), (type, o) => {
      if (type !== 'DELETED') { state.rl = o; later(); }
    }, signal, null, one);
  }
}

/** Every object of a field-selected list (a node's pods: few), bounded. */
async function listBounded(path, params, signal) {
  let items = [];
  let cont = '';
  let resourceVersion = '';
  for (let i = 0; i < 10; i += 1) {
    const p = await list(path, { ...params, limit: 500, continue: cont }, signal);
    items = items.concat(p.items);
    if (!resourceVersion) resourceVersion = p.resourceVersion;
    cont = p.continue;
    if (!cont) break;
  }
  return { items, resourceVersion };
}

function renderFacts(dl, state) {
  const n = state.core;
  const addrs = get(n, 'status.addresses', []).map((a) => `${a.type}: ${a.address}`).join(', ');
  const caps = accelerators(get(n, 'status.capacity', {})).map(([r, c]) => `${r}: ${c}`).join(', ');
  const rows = [
    [t('nodes.profile'), get(state.rl, 'spec.profile') || profileOf(n)],
    [t('nodes.capacity'), caps],
    [t('nodes.tor'), get(state.rl, 'spec.network.tor')],
    [t('nodes.addresses'), addrs],
  ];
  fill(dl, rows.filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** Per device id: `{id, pods, bad, net}`. */
export function deviceCells(capacity, pods, unhealthy, netUnhealthy) {
  const cells = [];
  const byId = new Map();
  for (let i = 0; i < capacity; i += 1) {
    const c = { id: String(i), pods: [], bad: false, net: false, outside: false };
    cells.push(c);
    byId.set(c.id, c);
  }
  const cell = (id) => {
    if (!byId.has(id)) {
      const c = { id, pods: [], bad: false, net: false, outside: true };
      cells.push(c);
      byId.set(id, c);
    }
    return byId.get(id);
  };
  for (const p of pods) for (const d of heldDevices(p)) cell(d).pods.push(p);
  for (const d of unhealthy || []) cell(String(d)).bad = true;
  for (const d of netUnhealthy || []) cell(String(d)).net = true;
  return cells;
}

function renderMap(box, state) {
  const accel = accelerators(get(state.core, 'status.capacity', {}));
  const capacity = accel.reduce((a, [, c]) => a + c, 0);
  const cells = deviceCells(capacity, [...state.pods.values()],
    get(state.rl, 'status.unhealthyDevices', []), get(state.rl, 'status.networkUnhealthyDevices', []));
  if (!cells.length) { box.replaceChildren(h('p', { class: 'muted', id: 'device-map' }, t('nodes.noDevices'))); return; }
  const resource = accel.map(([r]) => r).join(', ');
  const free = cells.filter((c) => !c.pods.length && !c.bad && !c.net).length;
  const held = cells.filter((c) => c.pods.length).length;
  const bad = cells.filter((c) => c.bad || c.net).length;
  const el = h('div', { id: 'device-map', class: 'devices', role: 'list', 'aria-labelledby': 'device-map-title' },
    cells.map((c) => deviceCell(c, resource)));
  box.replaceChildren(
    h('p', { id: 'device-summary' }, `${resource} \u2014 ${t('nodes.summary')}: ${free} / ${held} / ${bad}`),
    el);
}

function deviceCell(c, resource) {
  const state = c.bad || c.net ? 'unhealthy' : (c.pods.length ? 'used' : 'free');
  const podNames = c.pods.map((p) => `${get(p, 'metadata.namespace')}/${get(p, 'metadata.name')}`);
  const words = [c.bad ? t('nodes.bad') : null, c.net ? t('nodes.netBad') : null,
    c.pods.length ? `${t('nodes.held')} ${podNames.join(', ')}` : null].filter(Boolean);
  const label = `${t('nodes.device')} ${c.id}: ${words.length ? words.join('; ') : t('nodes.free')}`;
  const el = h('div', {
    id: `device-${c.id}`, class: `device ${state}`, role: 'listitem', 'aria-label': label, title: `${resource} ${label}`,
    'data-state': state, 'data-pods': podNames.join(','),
  },
  h('strong', { 'aria-hidden': 'true' }, c.id),
  h('div', { 'aria-hidden': 'true' }, [c.bad ? t('nodes.bad') : null, c.net ? t('nodes.netBad') : null].filter(Boolean).join(', ') || (c.pods.length ? t('nodes.held') : t('nodes.free'))),
  c.pods.map((p) => {
    const href = jobHref(p);
    const text = get(p, 'metadata.name');
    return h('div', {}, href ? h('a', { href, 'aria-label': `${t('nodes.job')}: ${podNames[c.pods.indexOf(p)]}` }, text) : text);
  }),
  c.outside ? h('div', { class: 'muted' }, t('nodes.outside')) : null);
  // Pod names are long; the stylesheet's cell is narrow (CSSOM, as the CSP forbids inline style attributes).
  el.style.width = '9rem';
  el.style.overflowWrap = 'anywhere';
  return el;
}

function renderPods(box, state) {
  const rows = [...state.pods.values()].sort((a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name')));
  box.replaceChildren(labelled(table([
    [t('nodes.pod'), (p) => `${get(p, 'metadata.namespace')}/${get(p, 'metadata.name')}`],
    [t('nodes.job'), (p) => { const href = jobHref(p); return href ? h('a', { href }, decodeURIComponent(href.split('/').pop())) : ''; }],
    [t('phase'), (p) => badge(get(p, 'metadata.deletionTimestamp') ? 'Terminating' : get(p, 'status.phase'))],
    [t('nodes.heldDevices'), (p) => heldDevices(p).join(', ')],
    [t('age'), (p) => age(get(p, 'metadata.creationTimestamp'))],
  ], rows), 'node-pods-title'));
}
