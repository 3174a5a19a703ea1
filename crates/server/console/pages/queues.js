// Queues and resource groups: the Volcano Queues (weight, capability,
// quota, state, devices allocated) with lock/unlock, as `ringleader queue
// lock|unlock` does (a merge patch of status.state), and the platform's
// ResourceGroups (nodes, accelerator, policies, state). Both live.
import { page, h, api, get, badge, table, tabs, errorBox, can, qs } from '../app.js';
import { t, strings } from '../i18n.js';
import { liveCollection, queueAllocation, deviceList, coalesce, resources, labelled, fill, QUEUES, RESOURCE_GROUPS } from '../shared.js';

strings({
  en: {
    'q.title': 'Queues and resource groups', 'q.queues': 'Queues', 'q.groups': 'Resource groups', 'q.state': 'State',
    'q.weight': 'Weight', 'q.capability': 'Capability', 'q.deserved': 'Deserved', 'q.quota': 'Quota', 'q.allocated': 'Devices allocated',
    'q.reclaimable': 'Reclaimable', 'q.group': 'Resource group', 'q.workspace': 'Workspace', 'q.actions': 'Actions',
    'q.lock': 'Lock', 'q.unlock': 'Unlock', 'q.lockLabel': 'Lock queue', 'q.unlockLabel': 'Unlock queue',
    'q.locked': 'locked: no new jobs are admitted; running ones go on.', 'q.unlocked': 'unlocked.',
    'q.displayName': 'Display name', 'q.accelerator': 'Accelerator', 'q.policies': 'Policies',
    'q.topology': 'Topology affinity', 'q.nodes': 'Nodes', 'q.message': 'Message', 'q.yes': 'yes', 'q.no': 'no',
    'q.instances': 'instances of', 'q.unknown': '\u2014', 'q.description': 'Description',
    'q.edit': 'Edit', 'q.editQueue': 'Edit queue', 'q.editGroup': 'Edit resource group',
  },
  zh: {
    'q.title': '队列与资源组', 'q.queues': '队列', 'q.groups': '资源组', 'q.state': '状态',
    'q.weight': '权重', 'q.capability': '容量上限', 'q.deserved': '应得', 'q.quota': '配额', 'q.allocated': '已分配设备',
    'q.reclaimable': '可回收', 'q.group': '资源组', 'q.workspace': '工作空间', 'q.actions': '操作',
    'q.lock': '锁定', 'q.unlock': '解锁', 'q.lockLabel': '锁定队列', 'q.unlockLabel': '解锁队列',
    'q.locked': '已锁定：不再接纳新作业，运行中的作业继续运行。', 'q.unlocked': '已解锁。',
    'q.displayName': '显示名称', 'q.accelerator': '加速卡类型', 'q.policies': '调度策略',
    'q.topology': '拓扑亲和', 'q.nodes': '节点', 'q.message': '信息', 'q.yes': '是', 'q.no': '否',
    'q.instances': '个实例，每个', 'q.unknown': '\u2014', 'q.description': '描述',
    'q.edit': '编辑', 'q.editQueue': '编辑队列', 'q.editGroup': '编辑资源组',
  },
});

/** A queue's state: Volcano's `status.state`, Open when not written yet. */
function queueState(q) { return get(q, 'status.state') || 'Open'; }

function quotaText(q) {
  const quota = get(q, 'spec.quota', null);
  if (!quota) return '';
  return `${get(quota, 'instanceCount', 0)} ${t('q.instances')} ${resources(get(quota, 'instanceSpec', {}))}`;
}

const byName = (a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name'));

/** A link to `kind`'s edit form for `name`, for an identity that may patch it. */
function editLink(kind, name, label, allowed) {
  return allowed ? h('a', { class: 'button', id: `edit-${kind}-${name}`, href: `#/create/${kind}${qs({ edit: name })}`, 'aria-label': `${label} ${name}` }, t('q.edit')) : null;
}

page('queues', (main, args, params, signal) => {
  const note = h('div', { id: 'queues-note', role: 'status', 'aria-live': 'polite' });
  main.append(h('h1', {}, t('q.title')), note);
  tabs(main, [
    [t('q.queues'), (panel, s) => queuesTab(panel, note, s)],
    [t('q.groups'), (panel, s) => groupsTab(panel, s)],
  ], signal);
}, true);

async function queuesTab(panel, note, signal) {
  const heading = h('h2', { id: 'queues-title' }, t('q.queues'));
  const body = h('div', { id: 'queues' });
  panel.append(heading, body);
  let queues = [];
  let alloc;
  let mayEdit = false;
  can('patch', 'scheduling.volcano.sh/v1beta1', 'queues').then((ok) => { mayEdit = ok; if (ok) render(); });
  const allocText = (q) => {
    if (!alloc) return t('q.unknown');
    return deviceList(alloc.get(get(q, 'metadata.name')));
  };
  const setState = async (q, state) => {
    const name = get(q, 'metadata.name');
    try {
      await api(`${QUEUES}/${encodeURIComponent(name)}/status`, {
        method: 'PATCH', type: 'application/merge-patch+json', body: { status: { state } }, signal,
      });
      note.textContent = `${name}: ${state === 'Closed' ? t('q.locked') : t('q.unlocked')}`;
    } catch (e) {
      if (!signal.aborted) note.replaceChildren(errorBox(e));
    }
  };
  const render = () => {
    body.replaceChildren(labelled(table([
      [t('name'), (q) => get(q, 'metadata.name')],
      [t('q.state'), (q) => h('span', { 'data-queue-state': get(q, 'metadata.name') }, badge(queueState(q)))],
      [t('q.weight'), (q) => String(get(q, 'spec.weight', ''))],
      [t('q.capability'), (q) => resources(get(q, 'spec.capability', {}))],
      [t('q.deserved'), (q) => resources(get(q, 'spec.deserved', {}))],
      [t('q.quota'), quotaText],
      [t('q.allocated'), (q) => h('span', { 'data-queue-allocated': get(q, 'metadata.name') }, allocText(q))],
      [t('q.reclaimable'), (q) => (get(q, 'spec.reclaimable', true) === false ? t('q.no') : t('q.yes'))],
      [t('q.group'), (q) => get(q, 'spec.resourceGroup')],
      [t('q.workspace'), (q) => get(q, 'spec.workspace')],
      [t('q.actions'), (q) => {
        const name = get(q, 'metadata.name');
        const closed = queueState(q) === 'Closed';
        return h('button', {
          type: 'button', id: `queue-lock-${name}`, 'data-queue': name, 'aria-pressed': String(closed),
          'aria-label': `${closed ? t('q.unlockLabel') : t('q.lockLabel')} ${name}`,
          onclick: () => setState(q, closed ? 'Open' : 'Closed'),
        }, closed ? t('q.unlock') : t('q.lock'));
      }],
      [t('q.edit'), (q) => editLink('Queue', get(q, 'metadata.name'), t('q.editQueue'), mayEdit)],
    ], [...queues].sort(byName)), 'queues-title'));
  };
  let busy = false;
  const loadAlloc = async () => {
    if (busy) return;
    busy = true;
    try { alloc = await queueAllocation(queues, signal); render(); } catch (_) { /* the table says unknown */ } finally { busy = false; }
  };
  const allocLater = coalesce(loadAlloc, 11000); // after the server's next sample
  try {
    let first = true;
    await liveCollection(QUEUES, {}, signal, (items) => {
      queues = items;
      render();
      if (first) loadAlloc(); else allocLater();
      first = false;
    },
      (e) => body.replaceChildren(errorBox(e)));
  } catch (e) {
    if (!signal.aborted) body.replaceChildren(errorBox(e));
  }
}

async function groupsTab(panel, signal) {
  const heading = h('h2', { id: 'groups-title' }, t('q.groups'));
  const body = h('div', { id: 'resourcegroups' });
  panel.append(heading, body);
  const nodeLinks = (names) => {
    const shown = names.slice(0, 20);
    const out = [];
    shown.forEach((n, i) => { if (i) out.push(', '); out.push(h('a', { href: `#/nodes/${encodeURIComponent(n)}` }, n)); });
    if (names.length > shown.length) out.push(` \u2026 (${names.length})`);
    return h('span', {}, out);
  };
  let mayEdit = false;
  let shown = [];
  can('patch', 'platform.ringleader.io/v1alpha1', 'resourcegroups').then((ok) => { mayEdit = ok; if (ok) render(shown); });
  const render = (groups) => {
    shown = groups;
    body.replaceChildren(labelled(table([
      [t('name'), (g) => get(g, 'metadata.name')],
      [t('q.displayName'), (g) => get(g, 'spec.displayName')],
      [t('q.accelerator'), (g) => get(g, 'spec.accelerator')],
      [t('q.policies'), (g) => get(g, 'spec.policies', []).join(', ')],
      [t('q.topology'), (g) => (get(g, 'spec.topologyAffinity', false) ? t('q.yes') : t('q.no'))],
      [t('q.nodes'), (g) => { const n = get(g, 'status.nodes', []); const el = h('div', {}); fill(el, `${n.length}: `, nodeLinks(n)); return el; }],
      [t('q.state'), (g) => badge(get(g, 'status.state'))],
      [t('q.message'), (g) => get(g, 'status.message')],
      [t('q.description'), (g) => get(g, 'spec.description')],
      [t('q.edit'), (g) => editLink('ResourceGroup', get(g, 'metadata.name'), t('q.editGroup'), mayEdit)],
    ], [...groups].sort(byName)), 'groups-title'));
  };
  try {
    await liveCollection(RESOURCE_GROUPS, {}, signal, render, (e) => body.replaceChildren(errorBox(e)));
  } catch (e) {
    if (!signal.aborted) body.replaceChildren(errorBox(e));
  }
}
