// Overview: devices per accelerator family, queue and resource group; the
// unhealthy devices; the pending pods and why they wait. It never lists all
// pods: capacity comes from the Node objects, allocation from the queues'
// status (or the embedded history's per-queue figures), pending pods are
// counted by each job's own status (only pods no job made are listed).
import { page, h, list, get, age, badge, table, errorBox, collection, JOB_KINDS, jobPhase, can, session } from '../app.js';
import { t, strings } from '../i18n.js';
import { coalesce, liveCollection, fill, labelled, wrap, section, accelerators, resources, nodeReady, meter, TRAINING, QUEUES, RESOURCE_GROUPS, RL_NODES, queueAllocation, nodeAllocation, deviceList } from '../shared.js';

strings({
  en: {
    'ov.title': 'Overview', 'ov.families': 'Accelerators', 'ov.queues': 'Queues', 'ov.groups': 'Resource groups',
    'ov.unhealthy': 'Unhealthy devices and nodes', 'ov.pending': 'Pending pods', 'ov.resource': 'Resource',
    'ov.nodes': 'Nodes', 'ov.ready': 'Ready', 'ov.capacity': 'Capacity', 'ov.allocated': 'Allocated', 'ov.free': 'Free',
    'ov.unhealthyDevices': 'Unhealthy devices', 'ov.networkUnhealthy': 'Network-unhealthy devices', 'ov.state': 'State',
    'ov.weight': 'Weight', 'ov.capability': 'Capability', 'ov.group': 'Resource group', 'ov.workspace': 'Workspace',
    'ov.displayName': 'Display name', 'ov.accelerator': 'Accelerator', 'ov.job': 'Job', 'ov.refresh': 'Refresh allocation figures',
    'ov.unknownAlloc': 'Allocation figures are not available to you (neither the queues\u2019 status nor the history holds them).',
    'ov.sampled': 'Allocation is sampled by the server every few seconds.',
    'ov.starting': 'Scheduled; starting', 'ov.onNode': 'on node', 'ov.allHealthy': 'Every device and node is healthy.',
    'ov.scope': 'Your role reads one namespace; shown for namespace', 'ov.noPending': 'No pod is pending.', 'ov.notReady': 'Node not Ready', 'ov.ofDevices': 'devices allocated',
    'ov.truncated': 'The cluster holds more objects than one page shows; figures cover the first 10,000.',
    'ov.jobs': 'Jobs by kind and phase', 'ov.total': 'Total', 'ov.deserved': 'Deserved', 'ov.waiting': 'Pods waiting',
    'ov.reasons': 'Why they wait', 'ov.oldest': 'Oldest', 'ov.pendingTotal': 'pods pending, in', 'ov.pendingJobs': 'jobs',
    'ov.moreJobs': 'More jobs have pending pods than are shown; the totals above count them all.',
    'ov.noJob': '(no job)', 'ov.noJobs': 'No jobs yet.',
    'ov.nothing': 'Your identity may not read any of the cluster-wide figures this page shows. Open Jobs to see your namespace\u2019s jobs, or ask an administrator for a role.',
  },
  zh: {
    'ov.title': '总览', 'ov.families': '加速卡', 'ov.queues': '队列', 'ov.groups': '资源组',
    'ov.unhealthy': '故障设备与节点', 'ov.pending': '等待中的容器组', 'ov.resource': '资源',
    'ov.nodes': '节点', 'ov.ready': '就绪', 'ov.capacity': '总量', 'ov.allocated': '已分配', 'ov.free': '空闲',
    'ov.unhealthyDevices': '故障设备', 'ov.networkUnhealthy': '网络故障设备', 'ov.state': '状态',
    'ov.weight': '权重', 'ov.capability': '容量上限', 'ov.group': '资源组', 'ov.workspace': '工作空间',
    'ov.displayName': '显示名称', 'ov.accelerator': '加速卡类型', 'ov.job': '作业', 'ov.refresh': '刷新分配数据',
    'ov.unknownAlloc': '无法获取分配数据（队列状态与历史数据中均没有，或您无权查看）。',
    'ov.sampled': '分配数据由服务器每隔数秒采样一次。',
    'ov.starting': '已调度，正在启动', 'ov.onNode': '节点', 'ov.allHealthy': '所有设备与节点均正常。',
    'ov.scope': '您的角色只能读取一个命名空间；显示的是命名空间', 'ov.noPending': '没有等待中的容器组。', 'ov.notReady': '节点未就绪', 'ov.ofDevices': '个设备已分配',
    'ov.truncated': '对象数量超过可一次列出的范围；数据仅覆盖前 10,000 个。',
    'ov.jobs': '作业（按类型与状态）', 'ov.total': '合计', 'ov.deserved': '应得', 'ov.waiting': '等待中的容器组',
    'ov.reasons': '等待原因', 'ov.oldest': '最久', 'ov.pendingTotal': '个容器组等待中，分属', 'ov.pendingJobs': '个作业',
    'ov.moreJobs': '有等待容器组的作业多于所列；上方合计包含全部。',
    'ov.noJob': '（无作业）', 'ov.noJobs': '暂无作业。',
    'ov.nothing': '您的身份无权查看本页显示的任何集群级数据。请打开“作业”查看您所在命名空间的作业，或向管理员申请角色。',
  },
});

// ---- the page ----

page('overview', async (main, args, params, signal) => {
  const families = section('ov-families', t('ov.families'));
  const queues = section('ov-queues', t('ov.queues'));
  const groups = section('ov-resourcegroups', t('ov.groups'));
  const unhealthy = section('ov-unhealthy', t('ov.unhealthy'));
  const pending = section('ov-pending', t('ov.pending'));
  const jobs = section('ov-jobs', t('ov.jobs'));
  // Only what this identity may list is shown (asked first, rather than
  // answered with a refusal in every section).
  const kinds = JOB_KINDS.map((k, i) => ({ k, i })).filter(({ k }) => !k.absent);
  const [mayNodes, mayRl, mayQueues, mayGroups, mayPods, ...mayKinds] = await Promise.all([
    can('list', 'v1', 'nodes'), can('list', 'ringleader.io/v1alpha1', 'nodes'),
    can('list', 'scheduling.volcano.sh/v1beta1', 'queues'), can('list', 'platform.ringleader.io/v1alpha1', 'resourcegroups'),
    can('list', 'v1', 'pods'), ...kinds.map(({ k }) => can('list', k.group, k.plural))]);
  let listable = new Set(kinds.filter((_, j) => mayKinds[j]).map(({ i }) => i));
  if (signal.aborted) return;
  // A namespace-scoped user (a workspace member) sums up the namespace
  // last chosen (or `default`) instead: her jobs and pending pods.
  let ns = '';
  let mayPodsHere = mayPods;
  if (!mayNodes && !mayRl && !mayQueues && !mayGroups && !mayPods && !listable.size) {
    ns = session.namespace || 'default';
    const [pods, ...here] = await Promise.all([can('list', 'v1', 'pods', ns), ...kinds.map(({ k }) => can('list', k.group, k.plural, ns))]);
    if (signal.aborted) return;
    mayPodsHere = pods;
    listable = new Set(kinds.filter((_, j) => here[j]).map(({ i }) => i));
    if (!pods && !listable.size) {
      main.append(h('h1', {}, t('ov.title')), h('p', { id: 'ov-nothing' }, t('ov.nothing')));
      return;
    }
  }
  const note = h('p', { class: 'muted', role: 'status', id: 'ov-note' });
  const refresh = h('button', { type: 'button', id: 'ov-refresh' }, t('ov.refresh'));
  main.append(...[h('h1', {}, t('ov.title')), !ns && h('div', { class: 'toolbar' }, refresh), note,
    ns && h('p', { id: 'ov-scope' }, `${t('ov.scope')} `, h('strong', {}, ns)),
    mayNodes && families.el, listable.size && jobs.el, mayPodsHere && pending.el,
    mayQueues && queues.el, mayGroups && groups.el, (mayNodes || mayRl) && unhealthy.el].filter(Boolean));

  const state = { nodes: null, nodesComplete: true, rlNodes: null, queues: null, groups: null, alloc: undefined, nodeAlloc: undefined };
  // A section whose list failed keeps its error; later renders of the others leave it alone.
  const failed = new Set();
  const failWith = (sec, name) => (e) => { if (signal.aborted) return; failed.add(name); sec.fail(e); };

  const renderFamilies = () => {
    if (!state.nodes || failed.has('families')) return;
    const fam = new Map();
    for (const n of state.nodes) {
      for (const [res, cap] of accelerators(get(n, 'status.capacity', {}))) {
        const f = fam.get(res) || { res, nodes: 0, ready: 0, capacity: 0, allocated: 0, unhealthy: 0 };
        f.nodes += 1;
        if (nodeReady(n)) f.ready += 1;
        f.capacity += cap;
        fam.set(res, f);
      }
    }
    const famOf = new Map(state.nodes.map((n) => [get(n, 'metadata.name'), (accelerators(get(n, 'status.capacity', {}))[0] || [])[0]]));
    for (const r of state.rlNodes || []) {
      const f = fam.get(famOf.get(get(r, 'metadata.name')));
      if (f) f.unhealthy += new Set([...get(r, 'status.unhealthyDevices', []), ...get(r, 'status.networkUnhealthyDevices', [])]).size;
    }
    if (state.nodeAlloc) {
      for (const perRes of state.nodeAlloc.values()) for (const [res, n] of perRes) if (fam.has(res)) fam.get(res).allocated += n;
    }
    const known = !!state.nodeAlloc;
    const rows = [...fam.values()].sort((a, b) => a.res.localeCompare(b.res));
    fill(families.body, 
      rows.length ? h('div', { class: 'cards' }, rows.map((f) => h('div', { class: 'card family', 'data-resource': f.res },
        wrap(h('h3', {}, f.res)),
        h('p', {}, `${t('ov.nodes')}: ${f.ready} ${t('ov.ready')} / ${f.nodes}`),
        h('p', {}, `${t('ov.allocated')}: ${known ? f.allocated : '\u2014'} / ${t('ov.capacity')}: ${f.capacity}`),
        known ? meter(f.allocated, f.capacity, `${f.res} ${t('ov.ofDevices')}`) : null,
        h('p', {}, `${t('ov.unhealthyDevices')}: ${f.unhealthy}`)))) : h('p', { class: 'muted' }, t('none')),
      known ? h('p', { class: 'muted' }, t('ov.sampled')) : (state.nodeAlloc === null ? h('p', { class: 'muted' }, t('ov.unknownAlloc')) : null),
      state.nodesComplete ? null : h('p', { class: 'muted' }, t('ov.truncated')));
  };

  const allocText = (name) => {
    if (!state.alloc) return '\u2014';
    return deviceList(state.alloc.get(name));
  };

  const renderQueues = () => {
    if (!state.queues || failed.has('queues')) return;
    const rows = [...state.queues].sort((a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name')));
    queues.body.replaceChildren(labelled(table([
      [t('queue'), (q) => h('a', { href: '#/queues' }, get(q, 'metadata.name'))],
      [t('ov.state'), (q) => badge(get(q, 'status.state') || 'Open')],
      [t('ov.weight'), (q) => String(get(q, 'spec.weight', ''))],
      [t('ov.allocated'), (q) => h('span', { 'data-queue-allocated': get(q, 'metadata.name') }, allocText(get(q, 'metadata.name')))],
      [t('ov.deserved'), (q) => resources(get(q, 'spec.deserved', {}))],
      [t('ov.capability'), (q) => resources(get(q, 'spec.capability', {}))],
      [t('ov.group'), (q) => get(q, 'spec.resourceGroup')],
      [t('ov.workspace'), (q) => get(q, 'spec.workspace')],
    ], rows), 'ov-queues-title'));
  };

  const renderGroups = () => {
    if (!state.groups || failed.has('groups')) return;
    const capOf = new Map((state.nodes || []).map((n) => [get(n, 'metadata.name'), accelerators(get(n, 'status.capacity', {}))]));
    const rows = [...state.groups].sort((a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name')));
    const capacity = (g) => {
      const sum = new Map();
      for (const n of get(g, 'status.nodes', [])) for (const [res, c] of capOf.get(n) || []) sum.set(res, (sum.get(res) || 0) + c);
      return sum;
    };
    const allocated = (g) => {
      if (!state.nodeAlloc) return null;
      const sum = new Map();
      for (const n of get(g, 'status.nodes', [])) for (const [res, c] of state.nodeAlloc.get(n) || []) sum.set(res, (sum.get(res) || 0) + c);
      return sum;
    };
    groups.body.replaceChildren(labelled(table([
      [t('name'), (g) => h('a', { href: '#/queues' }, get(g, 'metadata.name'))],
      [t('ov.displayName'), (g) => get(g, 'spec.displayName')],
      [t('ov.accelerator'), (g) => get(g, 'spec.accelerator')],
      [t('ov.state'), (g) => badge(get(g, 'status.state'))],
      [t('ov.nodes'), (g) => String(get(g, 'status.nodes', []).length)],
      [t('ov.capacity'), (g) => (state.nodes ? deviceList(capacity(g)) : '\u2014')],
      [t('ov.allocated'), (g) => { const a = allocated(g); return a ? deviceList(a) : '\u2014'; }],
    ], rows), 'ov-resourcegroups-title'));
  };

  const renderUnhealthy = () => {
    if ((!state.rlNodes && !state.nodes) || failed.has('unhealthy')) return;
    const rows = new Map();
    for (const r of state.rlNodes || []) {
      const bad = get(r, 'status.unhealthyDevices', []);
      const net = get(r, 'status.networkUnhealthyDevices', []);
      if (bad.length || net.length) rows.set(get(r, 'metadata.name'), { name: get(r, 'metadata.name'), bad, net, ready: true });
    }
    for (const n of state.nodes || []) {
      if (nodeReady(n)) continue;
      const name = get(n, 'metadata.name');
      const row = rows.get(name) || { name, bad: [], net: [] };
      row.ready = false;
      rows.set(name, row);
    }
    const list_ = [...rows.values()].sort((a, b) => a.name.localeCompare(b.name));
    unhealthy.body.replaceChildren(labelled(table([
      [t('node'), (r) => h('a', { href: `#/nodes/${encodeURIComponent(r.name)}` }, r.name)],
      [t('ov.ready'), (r) => badge(r.ready ? 'Ready' : 'NotReady')],
      [t('ov.unhealthyDevices'), (r) => r.bad.join(', ')],
      [t('ov.networkUnhealthy'), (r) => r.net.join(', ')],
    ], list_, { empty: t('ov.allHealthy') }), 'ov-unhealthy-title'));
  };

  const renderAll = () => { renderFamilies(); renderQueues(); renderGroups(); renderUnhealthy(); };

  let allocBusy = false;
  const loadAlloc = async () => {
    if (allocBusy) return;
    allocBusy = true;
    try {
      const [q, n] = await Promise.all([queueAllocation(state.queues || [], signal), nodeAllocation(state.nodes || [], signal)]);
      state.alloc = q;
      state.nodeAlloc = n;
      renderAll();
    } catch (e) {
      if (!signal.aborted) note.replaceChildren(errorBox(e));
    } finally { allocBusy = false; }
  };
  // Allocation changes when pods start or queues change: refresh on those
  // events, once the server has sampled again (every 10 s by default), and
  // no timer runs without them.
  const allocLater = coalesce(loadAlloc, 11000);
  refresh.addEventListener('click', loadAlloc);

  const starts = [
    mayNodes && liveCollection(collection('v1', 'nodes'), {}, signal, (items, complete) => { state.nodes = items; state.nodesComplete = complete; renderAll(); }, failWith(families, 'families'))
      .catch(failWith(families, 'families')),
    mayRl && liveCollection(RL_NODES, {}, signal, (items) => { state.rlNodes = items; renderFamilies(); renderUnhealthy(); }, failWith(unhealthy, 'unhealthy'))
      .catch(failWith(unhealthy, 'unhealthy')),
    mayQueues && liveCollection(QUEUES, {}, signal, (items) => {
      const first = state.queues === null;
      state.queues = items;
      renderQueues(); renderGroups();
      if (!first) allocLater();
    }, failWith(queues, 'queues')).catch(failWith(queues, 'queues')),
    mayGroups && liveCollection(RESOURCE_GROUPS, {}, signal, (items) => { state.groups = items; renderGroups(); }, failWith(groups, 'groups'))
      .catch(failWith(groups, 'groups')),
  ].filter(Boolean);
  const jobsFeed = followJobs(signal, listable, ns);
  // Allocation is cluster-wide: a namespace's pending pods do not refresh it.
  if (mayPodsHere) pendingPods(pending, signal, ns ? () => {} : allocLater, ns, jobsFeed);
  if (listable.size) jobsByPhase(jobs, jobsFeed);
  await Promise.all(starts);
  if (!signal.aborted) await loadAlloc();
}, true);

/**
 * Pending pods summed up by job without listing them: each job's status
 * counts its pods by phase per role (`status.ringleader.replica_statuses`,
 * the controller's own record), and its PodGroup says why they wait. So
 * 5,000 pending pods of five gangs cost five job objects and five
 * PodGroups, not 5,000 pods. Only pods that carry no job's label (bare
 * pods) are listed, one by one.
 */
function pendingPods(sec, signal, onChange, ns, jobsFeed) {
  const SHOWN = 50;
  const state = { jobs: null, complete: true, groups: null, bare: null, bareComplete: true };
  const render = () => {
    if (!state.jobs || !state.bare || !state.groups) return;
    const rows = [];
    for (const { i, o } of state.jobs) {
      const roles = Object.values(get(o, 'status.ringleader.replica_statuses', {}) || {});
      const count = roles.reduce((n, r) => n + (Number(r && r.pending) || 0), 0);
      if (!count) continue;
      const g = state.groups.get(get(o, 'metadata.uid'));
      const why = g && get(g, 'status.conditions', []).find((c) => c.type === 'Unschedulable' && c.status === 'True');
      // A gang's PodGroup runs once its pods are bound: what waits then is starting.
      const reason = why ? 'Unschedulable' : (g && get(g, 'status.phase') === 'Running' ? t('ov.starting') : 'Pending');
      const since = get(o, 'status.ringleader.last_transition');
      const tj = get(o, 'metadata.labels', {})['platform.ringleader.io/training-job'];
      const name = get(o, 'metadata.name');
      const jns = get(o, 'metadata.namespace');
      const href = tj && TRAINING >= 0 ? `#/jobs/${TRAINING}/${encodeURIComponent(jns)}/${encodeURIComponent(tj)}`
        : `#/jobs/${i}/${encodeURIComponent(jns)}/${encodeURIComponent(name)}`;
      rows.push({ href, name: tj || name, ns: jns, count, reasons: new Map([[reason, count]]), message: why ? why.message || '' : '',
        oldest: since ? new Date(since * 1000).toISOString() : get(o, 'metadata.creationTimestamp') });
    }
    // Pods no job owns, grouped as before, by what their own status says.
    const bare = new Map();
    for (const p of state.bare) {
      if (get(p, 'status.phase') !== 'Pending') continue;
      const k = get(p, 'metadata.namespace');
      const g = bare.get(k) || { href: '', name: '', ns: k, count: 0, reasons: new Map(), message: '', oldest: get(p, 'metadata.creationTimestamp') };
      const r = pendingReason(p).reason;
      g.count += 1;
      g.reasons.set(r, (g.reasons.get(r) || 0) + 1);
      const created = get(p, 'metadata.creationTimestamp');
      if (created && created < g.oldest) g.oldest = created;
      bare.set(k, g);
    }
    rows.push(...bare.values());
    rows.sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
    const total = rows.reduce((n, r) => n + r.count, 0);
    const jobs = rows.filter((r) => r.name).length;
    fill(sec.body,
      h('p', { id: 'ov-pending-total' }, h('strong', { 'data-count': total }, String(total)), ` ${t('ov.pendingTotal')} `,
        h('strong', { 'data-count': jobs }, String(jobs)), ` ${t('ov.pendingJobs')}`),
      labelled(table([
        [t('ov.job'), (g) => (g.href ? h('a', { href: g.href }, g.name) : (g.name || t('ov.noJob')))],
        [t('namespace'), (g) => g.ns],
        [t('ov.waiting'), (g) => h('span', { class: 'pending-count', 'data-job': g.name }, String(g.count))],
        [t('ov.reasons'), (g) => h('span', { title: g.message }, [...g.reasons].map(([r, n]) => `${r}: ${n}`).join(', '))],
        [t('ov.oldest'), (g) => age(g.oldest)],
      ], rows.slice(0, SHOWN), { empty: t('ov.noPending') }), 'ov-pending-title'),
      rows.length > SHOWN ? h('p', { class: 'muted' }, t('ov.moreJobs')) : null,
      state.complete && state.bareComplete ? null : h('p', { class: 'muted' }, t('ov.truncated')));
  };
  const later = coalesce(render, 300);
  const fail = (e) => { if (!signal.aborted) sec.fail(e); };
  // First the bare pods: the slowest request (every pending pod's text read).
  const bare = { fieldSelector: 'status.phase=Pending', labelSelector: NO_JOB };
  liveCollection(collection('v1', 'pods', ns || undefined), bare, signal, (items, complete) => {
    const first = state.bare === null;
    state.bare = items;
    state.bareComplete = complete;
    if (first) render(); else later();
  }, fail).catch(fail);
  // Why a job waits is its PodGroup's; one the user may not read leaves the reason `Pending`.
  liveCollection(collection('scheduling.volcano.sh/v1beta1', 'podgroups', ns || undefined), {}, signal, (items) => {
    const first = state.groups === null;
    state.groups = new Map();
    for (const g of items) {
      const owner = get(g, 'metadata.ownerReferences', []).find((r) => r.controller) || get(g, 'metadata.ownerReferences', [])[0];
      if (owner && owner.uid) state.groups.set(owner.uid, g);
    }
    if (first) render(); else later();
  }).catch(() => {
    state.groups = new Map();
    render();
  });
  jobsFeed((jobs, complete) => {
    const first = state.jobs === null;
    state.jobs = jobs;
    state.complete = complete;
    if (first) render(); else later();
    onChange();
  });
}

/**
 * Pods that no job's controller made: none of the labels ringleader's
 * controllers put on every pod of a Volcano Job, a Kubeflow or Ascend job,
 * a batch Job or a Deployment.
 */
const NO_JOB = ['volcano.sh/job-name', 'training.kubeflow.org/job-name', 'batch.kubernetes.io/job-name', 'pod-template-hash']
  .map((l) => `!${l}`).join(',');

/**
 * Every listed job of every served kind, kept live; `subscribe(fn)` calls
 * `fn(jobs, complete)` (each job as `{i, o}`, its kind's index and object)
 * once every kind has been listed and after each burst of changes. A kind
 * this user may not read is left out rather than shown as an error.
 */
function followJobs(signal, listable, ns) {
  const byKind = new Map(); // kind index → {items, complete}
  const subscribers = [];
  const wanted = JOB_KINDS.filter((k, i) => !k.absent && listable.has(i)).length;
  const emit = () => {
    if (byKind.size < wanted) return;
    const jobs = [...byKind].flatMap(([i, { items }]) => items.map((o) => ({ i, o })));
    const complete = [...byKind.values()].every((k) => k.complete !== false);
    for (const fn of subscribers) fn(jobs, complete);
  };
  // Listed on the first subscription, after whatever its caller asked first.
  const start = () => JOB_KINDS.forEach((k, i) => {
    if (k.absent || !listable.has(i)) return;
    liveCollection(collection(k.group, k.plural, ns || undefined), {}, signal, (items, complete) => {
      byKind.set(i, { items, complete });
      emit();
    }).catch(() => {
      // Counted as listed, with nothing: the other kinds still show.
      byKind.set(i, { items: [], complete: true });
      emit();
    });
  });
  return (fn) => {
    if (!subscribers.length) start();
    subscribers.push(fn);
    if (!wanted) setTimeout(() => fn([], true));
  };
}

/**
 * Jobs of every served kind counted by phase (as the job list shows it).
 */
function jobsByPhase(sec, jobsFeed) {
  let counts = new Map(); // kind index → Map(phase → n)
  const render = () => {
    const phases = [...new Set([...counts.values()].flatMap((m) => [...m.keys()]))].sort();
    const rows = [...counts].filter(([, m]) => m.size).map(([i, m]) => ({ i, m, total: [...m.values()].reduce((a, b) => a + b, 0) }));
    const kindName = (i) => JOB_KINDS[i].label || JOB_KINDS[i].kind;
    fill(sec.body, labelled(table([
      [t('kind'), (r) => kindName(r.i)],
      [t('ov.total'), (r) => h('span', { 'data-kind': kindName(r.i), 'data-phase': '' }, String(r.total))],
      ...phases.map((ph) => [ph || t('unknown'), (r) => h('span', { 'data-kind': kindName(r.i), 'data-phase': ph }, String(r.m.get(ph) || 0))]),
    ], rows, { empty: t('ov.noJobs') }), 'ov-jobs-title'));
  };
  // Shown at once when every kind has been listed; bursts of changes after
  // that are coalesced.
  const later = coalesce(render, 300);
  let shown = false;
  jobsFeed((jobs) => {
    counts = new Map();
    for (const { i, o } of jobs) {
      const m = counts.get(i) || new Map();
      // A TrainingJob's phase is its last run's (jobPhase adds the run count, which would split the column).
      const ph = JOB_KINDS[i].kind === 'TrainingJob' ? (get(o, 'status.lastRun') || 'Saved') : (jobPhase(o) || 'Pending');
      m.set(ph, (m.get(ph) || 0) + 1);
      counts.set(i, m);
    }
    if (!shown) { shown = true; render(); } else later();
  });
}

/** Why a pending pod waits: its PodScheduled condition, or that it is starting. */
export function pendingReason(p) {
  const c = get(p, 'status.conditions', []).find((x) => x.type === 'PodScheduled');
  if (c && c.status === 'False') return { reason: c.reason || 'Unschedulable', message: c.message || '' };
  const node = get(p, 'spec.nodeName');
  if (node) return { reason: t('ov.starting'), message: `${t('ov.onNode')} ${node}` };
  return { reason: 'Pending', message: (c && c.message) || '' };
}
