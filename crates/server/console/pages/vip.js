// What a VIP job does to the machines it names (seed 003: a busy machine
// shows the tasks running on it, and whoever kills them should talk to
// their owners first): the pods on each chosen machine now, with their
// jobs, shown beside the form before Create. The API's own field selector
// (`spec.nodeName`) finds them, as the node page does.
import { h, api, get, collection, qs, badge } from '../app.js';
import { t, strings } from '../i18n.js';
import { jobLink } from '../shared.js';

strings({
  en: {
    'vip.kill': 'Stopped when this job is created (running on the chosen machines now; VIP jobs are never stopped)',
    'vip.wait': 'This job waits for these to finish (running on the chosen machines now)',
    'vip.free': 'free', 'vip.pod': 'Pod', 'vip.job': 'Job',
    'vip.partial': 'Only your workspace\'s pods are shown: other workspaces\' are not readable by you.',
    'vip.loading': 'Reading what runs there\u2026',
    'vip.group': 'Only the machines of the queue\'s resource group are offered (a VIP job may run nowhere else):',
    'vip.anyGroup': 'The queue belongs to no resource group: every machine you may list is offered.',
  },
  zh: {
    'vip.kill': '创建本作业时将被停止（当前在所选节点上运行；VIP 作业不会被停止）',
    'vip.wait': '本作业将等待以下任务结束（当前在所选节点上运行）',
    'vip.free': '空闲', 'vip.pod': '容器组', 'vip.job': '作业',
    'vip.partial': '仅显示本工作空间的容器组：您无权读取其他工作空间的容器组。',
    'vip.loading': '正在读取节点上的任务\u2026',
    'vip.group': '仅列出该队列所属资源组的节点（VIP 作业不能在其他节点上运行）：',
    'vip.anyGroup': '该队列不属于任何资源组：列出您可读取的全部节点。',
  },
});

const PLATFORM = 'platform.ringleader.io/v1alpha1';

/**
 * The machines a VIP job on `queue` may name, as the API decides it (its
 * admission refuses any other): the queue's resource group's, named or
 * labelled members both, when the queue has one; else `all`, what the
 * identity could list. `fallback` stands in for `all` when that is empty (a
 * member lists no machines but may read the workspace's group). A queue or
 * group that cannot be read leaves the wider list: the API still says no.
 */
export async function vipMachines(queue, all, fallback, signal) {
  const wide = { group: null, nodes: all.length ? all : fallback };
  if (!queue) return wide;
  try {
    const q = await api(`${collection('scheduling.volcano.sh/v1beta1', 'queues')}/${encodeURIComponent(queue)}`, { signal });
    const group = get(q, 'spec.resourceGroup');
    if (!group) return wide;
    const g = await api(`${collection(PLATFORM, 'resourcegroups')}/${encodeURIComponent(group)}`, { signal });
    return { group, nodes: groupNodes(g) };
  } catch (_) {
    return wide;
  }
}

/** A resource group's machines: those it names and those found to belong. */
export const groupNodes = (g) => [...new Set([...get(g, 'status.nodes', []), ...get(g, 'spec.nodes.names', [])])].sort();

/** The hint under the picker: which group's machines it offers. */
export function vipHint(group) {
  return group ? [t('vip.group'), ' ', h('strong', {}, group)] : [t('vip.anyGroup')];
}

const done = (p) => ['Succeeded', 'Failed'].includes(get(p, 'status.phase'));

/** The name of the job a pod is of: its training job's, else its controller's. */
function jobName(p) {
  const tj = get(p, 'metadata.labels', {})['platform.ringleader.io/training-job'];
  const owners = get(p, 'metadata.ownerReferences', []);
  const owner = (Array.isArray(owners) ? owners : []).find((o) => o.controller) || owners[0];
  return tj || (owner && owner.name) || '';
}

/** The unfinished pods on `node`: every namespace's when readable, else namespace `ns`'s (`partial`). */
async function podsOn(node, ns, signal) {
  const params = qs({ fieldSelector: `spec.nodeName=${node}` });
  try {
    const body = await api(`${collection('v1', 'pods')}${params}`, { signal });
    return { pods: ((body && body.items) || []).filter((p) => !done(p)), partial: false };
  } catch (e) {
    if (!ns || e.status !== 403) throw e;
    const body = await api(`${collection('v1', 'pods', ns)}${params}`, { signal });
    return { pods: ((body && body.items) || []).filter((p) => !done(p)), partial: true };
  }
}

function nodeItem(node, pods) {
  const label = h('strong', {}, node);
  if (!pods.length) return h('li', { 'data-node': node, 'data-busy': 'false' }, label, ': ', t('vip.free'));
  return h('li', { 'data-node': node, 'data-busy': 'true' }, label,
    h('ul', {}, pods.map((p) => {
      const ns = get(p, 'metadata.namespace');
      const name = get(p, 'metadata.name');
      return h('li', { class: 'vip-pod', 'data-pod': `${ns}/${name}` },
        `${t('vip.pod')} `, h('a', { href: `#/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, `${ns}/${name}`),
        ' ', badge(get(p, 'status.phase')), jobName(p) ? [` ${t('vip.job')} `, jobLink(p, `${ns}/${jobName(p)}`)] : null);
    })));
}

/**
 * A live preview: `update(nodes, onBusy)` shows what runs on `nodes` now
 * (nothing when none are chosen); a newer call cancels an older read.
 */
export function vipPreview(ns) {
  const box = h('section', { id: 'cr-vip-preview', 'aria-live': 'polite', hidden: true });
  let current = null;
  const update = async (nodes, onBusy) => {
    if (current) current.abort();
    if (!nodes.length) { box.hidden = true; box.replaceChildren(); return; }
    const ctl = new AbortController();
    current = ctl;
    box.hidden = false;
    box.dataset.onBusy = onBusy;
    const title = h('h3', {}, onBusy === 'kill' ? t('vip.kill') : t('vip.wait'));
    box.replaceChildren(title, h('p', { class: 'muted' }, t('vip.loading')));
    try {
      const found = await Promise.all(nodes.map((n) => podsOn(n, ns(), ctl.signal)));
      if (ctl.signal.aborted) return;
      // Busy machines first: those are the ones to talk about.
      const rows = nodes.map((n, i) => [n, found[i].pods]).sort((a, b) => b[1].length - a[1].length);
      box.replaceChildren(title, h('ul', { id: 'cr-vip-nodes' }, rows.map(([n, pods]) => nodeItem(n, pods))),
        found.some((f) => f.partial) ? h('p', { class: 'muted' }, t('vip.partial')) : null);
    } catch (e) {
      if (!ctl.signal.aborted) box.replaceChildren(title, h('p', { class: 'error', role: 'alert' }, e.message || String(e)));
    }
  };
  return { box, update };
}
