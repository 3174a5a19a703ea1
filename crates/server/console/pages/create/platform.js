// Forms for what a platform admin sets up (seed 004): a resource group of
// machines, a queue with its quota, a workspace with its queues and
// members; and a workspace's dataset.
import { get, collection } from '../../app.js';
import { t } from '../../i18n.js';
import { PLATFORM, QUEUE_API, num, lines, names, field, text, area, select, multi, chosen, setAll, pick } from './inputs.js';

/** Each kind's form: its inputs, the object they make, and how a saved one fills them. */
export const platformForms = {
  async ResourceGroup(signal) {
    const nodes = await names(collection('v1', 'nodes'), signal);
    const f = { name: text(), displayName: text(), accelerator: select([['NVIDIA', 'NVIDIA'], ['Ascend', 'Ascend']]),
      policies: multi(['Gang', 'Binpack', 'DRF']), nodes: multi(nodes), description: area() };
    [...f.policies.options].forEach((o) => { o.selected = o.value === 'Gang'; });
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('displayName', t('cr.displayName'), f.displayName, 'spec.displayName'),
        field('accelerator', t('cr.accelerator'), f.accelerator, 'spec.accelerator'), field('policies', t('cr.policies'), f.policies, 'spec.policies'),
        field('nodes', t('cr.nodes'), f.nodes, 'spec.nodes.names'), field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => ({ apiVersion: PLATFORM, kind: 'ResourceGroup', metadata: { name: f.name.value.trim() },
        spec: { displayName: f.displayName.value.trim(), accelerator: f.accelerator.value, description: f.description.value.trim(),
          policies: chosen(f.policies), nodes: { names: chosen(f.nodes) } } }),
      fill: (g) => {
        setAll([[f.displayName, get(g, 'spec.displayName', null)], [f.accelerator, get(g, 'spec.accelerator', null)],
          [f.description, get(g, 'spec.description', null)]]);
        pick(f.policies, get(g, 'spec.policies', []));
        pick(f.nodes, get(g, 'spec.nodes.names', []));
      },
    };
  },
  async Queue(signal) {
    const groups = await names(collection(PLATFORM, 'resourcegroups'), signal);
    const f = { name: text(), weight: text('1'), group: select([['', t('cr.none')], ...groups.map((g) => [g, g])]),
      count: text(), gpu: text(), npu: text(), cpu: text(), memory: text() };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('weight', t('cr.weight'), f.weight, 'spec.weight'),
        field('group', t('cr.group'), f.group, 'spec.resourceGroup'), field('count', t('cr.instanceCount'), f.count, 'spec.quota.instanceCount'),
        field('gpu', t('cr.gpu'), f.gpu, 'spec.quota.instanceSpec.gpu'), field('npu', t('cr.npu'), f.npu, 'spec.quota.instanceSpec.npu'),
        field('cpu', t('cr.cpu'), f.cpu, 'spec.quota.instanceSpec.cpu'), field('memory', t('cr.memory'), f.memory, 'spec.quota.instanceSpec.memory')],
      build: () => ({ apiVersion: QUEUE_API, kind: 'Queue', metadata: { name: f.name.value.trim() },
        spec: { weight: num(f.weight.value), resourceGroup: f.group.value,
          quota: num(f.count.value) === '' ? undefined : { instanceCount: num(f.count.value),
            instanceSpec: { gpu: num(f.gpu.value), npu: num(f.npu.value), cpu: f.cpu.value.trim(), memory: f.memory.value.trim() } } } }),
      fill: (q) => setAll([[f.weight, get(q, 'spec.weight', null)], [f.group, get(q, 'spec.resourceGroup', null)],
        [f.count, get(q, 'spec.quota.instanceCount', null)], ...['gpu', 'npu', 'cpu', 'memory'].map((k) => [f[k], get(q, `spec.quota.instanceSpec.${k}`, null)])]),
    };
  },
  async Workspace(signal) {
    const groups = await names(collection(PLATFORM, 'resourcegroups'), signal);
    const queues = await names(collection(QUEUE_API, 'queues'), signal);
    const f = { name: text(), displayName: text(), group: select([['', t('cr.none')], ...groups.map((g) => [g, g])]),
      queues: multi(queues), members: area(), description: area() };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('displayName', t('cr.displayName'), f.displayName, 'spec.displayName'),
        field('group', t('cr.group'), f.group, 'spec.resourceGroup'), field('queues', t('cr.queues'), f.queues, 'spec.queues'),
        field('members', t('cr.members'), f.members, 'spec.members'), field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => ({ apiVersion: PLATFORM, kind: 'Workspace', metadata: { name: f.name.value.trim() },
        spec: { displayName: f.displayName.value.trim(), description: f.description.value.trim(), resourceGroup: f.group.value,
          queues: chosen(f.queues),
          members: lines(f.members.value).map((l) => { const [user, role] = l.split(/\s+/); return { user, role: role || 'member' }; }) } }),
      fill: (w) => {
        setAll([[f.displayName, get(w, 'spec.displayName', null)], [f.group, get(w, 'spec.resourceGroup', null)],
          [f.description, get(w, 'spec.description', null)]]);
        pick(f.queues, get(w, 'spec.queues', []));
        f.members.value = get(w, 'spec.members', []).map((m) => `${m.user} ${m.role || 'member'}`).join('\n');
      },
    };
  },
  async Dataset(signal, ns) {
    const f = { name: text(), namespace: text(ns || ''), visibility: select([['only-me', t('cr.onlyMe')], ['workspace', t('cr.wholeWorkspace')]]),
      type: select([['text', t('cr.text')], ['image', t('cr.image')]]), path: text(), description: area() };
    return {
      namespace: f.namespace,
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('namespace', t('cr.namespace'), f.namespace, 'metadata.namespace'),
        field('visibility', t('cr.visibility'), f.visibility, 'spec.visibility'), field('type', t('cr.type'), f.type, 'spec.type'),
        field('path', t('cr.path'), f.path, 'spec.source.path'), field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => ({ apiVersion: PLATFORM, kind: 'Dataset', metadata: { name: f.name.value.trim(), namespace: f.namespace.value.trim() },
        spec: { description: f.description.value.trim(), visibility: f.visibility.value, type: f.type.value, source: { path: f.path.value.trim() } } }),
      fill: (d) => {
        f.namespace.value = get(d, 'metadata.namespace');
        setAll([[f.visibility, get(d, 'spec.visibility', null)], [f.type, get(d, 'spec.type', null)],
          [f.path, get(d, 'spec.source.path', null)], [f.description, get(d, 'spec.description', null)]]);
      },
    };
  },
};
