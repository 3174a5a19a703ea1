// Create: forms for what seeds 003/004 make on the platform (a resource
// group, a queue with its quota, a workspace with members, a dataset, a
// training job). A form builds the object and shows it as YAML, which stays
// editable: what is sent is that text, through the same apply as Submit,
// so the API's validation speaks (strict fields included) and each refusal
// marks both the form field and the YAML line it names.
import { page, h, api, get, collection, qs, JOB_KINDS, sameGroup, scroller } from '../app.js';
import { t, strings } from '../i18n.js';
import { placeErrors } from './submit.js';
import { vipPreview, vipMachines, vipHint, groupNodes } from './vip.js';

strings({
  en: {
    'cr.Image': 'Image', 'cr.StorageMount': 'Storage mount', 'cr.Script': 'Script', 'cr.ScriptRun': 'Script run',
    'cr.CheckRun': 'Check', 'cr.ref': 'Image reference (repo/name:tag)', 'cr.version': 'Version', 'cr.machineType': 'Machine type',
    'cr.os': 'Operating system', 'cr.jobType': 'Job type', 'cr.nodeDirectory': 'Node directory', 'cr.source': 'Source',
    'cr.content': 'Script', 'cr.timeout': 'Timeout (seconds)', 'cr.script': 'Script', 'cr.checkType': 'Check type',
    'cr.server': 'server', 'cr.network': 'network', 'cr.collective': 'collective', 'cr.baseline': 'Baseline node (server check)',
    'cr.operations': 'Operations (collective)', 'cr.devicesPerNode': 'Ranks per node (collective)',
    'nav.create': 'Create', 'cr.title': 'Create', 'cr.yaml': 'YAML this form makes (editable; what is sent)',
    'cr.create': 'Create', 'cr.created': 'Created', 'cr.refused': 'The API refused it; nothing was created.',
    'cr.ResourceGroup': 'Resource group', 'cr.Queue': 'Queue', 'cr.Workspace': 'Workspace', 'cr.Dataset': 'Dataset',
    'cr.TrainingJob': 'Training job', 'cr.name': 'Name', 'cr.displayName': 'Display name', 'cr.description': 'Description',
    'cr.accelerator': 'Accelerator', 'cr.policies': 'Scheduling policies', 'cr.nodes': 'Machines',
    'cr.weight': 'Weight', 'cr.group': 'Resource group', 'cr.workspace': 'Workspace', 'cr.instanceCount': 'Instances (quota)',
    'cr.gpu': 'GPUs', 'cr.npu': 'NPUs', 'cr.cpu': 'CPU', 'cr.memory': 'Memory', 'cr.queues': 'Queues',
    'cr.members': 'Members (one "user role" a line; role admin or member)', 'cr.namespace': 'Workspace (namespace)',
    'cr.visibility': 'Visibility', 'cr.onlyMe': 'only me', 'cr.wholeWorkspace': 'the workspace', 'cr.type': 'Type',
    'cr.text': 'text', 'cr.image': 'image', 'cr.path': 'Node directory', 'cr.queue': 'Queue', 'cr.imageRef': 'Image',
    'cr.framework': 'Framework', 'cr.command': 'Command', 'cr.roles': 'Roles', 'cr.role': 'Role', 'cr.count': 'Instances',
    'cr.addRole': 'Add a role', 'cr.removeRole': 'Remove', 'cr.env': 'Environment (one NAME=value a line)',
    'cr.datasets': 'Datasets (mounted at /data)', 'cr.shm': 'Shared memory (GB)', 'cr.vip': 'VIP machines',
    'cr.onBusy': 'When the VIP machines are busy', 'cr.wait': 'wait', 'cr.kill': 'stop what runs there',
    'cr.none': '(none)', 'cr.kinds': 'What to create', 'cr.edited': 'The YAML was edited by hand; changing the form rewrites it.',
    'cr.editTitle': 'Edit', 'cr.save': 'Save', 'cr.saved': 'Saved', 'cr.created.created': 'created', 'cr.created.configured': 'saved',
    'cr.created.unchanged': 'unchanged',
  },
  zh: {
    'cr.Image': '镜像', 'cr.StorageMount': '存储挂载', 'cr.Script': '脚本', 'cr.ScriptRun': '脚本执行',
    'cr.CheckRun': '检测', 'cr.ref': '镜像地址（repo/name:tag）', 'cr.version': '版本', 'cr.machineType': '机型',
    'cr.os': '操作系统', 'cr.jobType': '任务类型', 'cr.nodeDirectory': '节点目录', 'cr.source': '来源',
    'cr.content': '脚本内容', 'cr.timeout': '超时（秒）', 'cr.script': '脚本', 'cr.checkType': '检测类型',
    'cr.server': '服务器', 'cr.network': '网络', 'cr.collective': '集合通信', 'cr.baseline': '基准节点（服务器检测）',
    'cr.operations': '通信算子（集合通信）', 'cr.devicesPerNode': '每节点进程数（集合通信）',
    'nav.create': '创建', 'cr.title': '创建', 'cr.yaml': '表单生成的 YAML（可编辑，提交的即此文本）',
    'cr.create': '创建', 'cr.created': '已创建', 'cr.refused': 'API 拒绝了该对象，未创建任何内容。',
    'cr.ResourceGroup': '资源组', 'cr.Queue': '队列', 'cr.Workspace': '工作空间', 'cr.Dataset': '数据集',
    'cr.TrainingJob': '训练作业', 'cr.name': '名称', 'cr.displayName': '显示名称', 'cr.description': '描述',
    'cr.accelerator': '加速卡类型', 'cr.policies': '调度策略', 'cr.nodes': '节点',
    'cr.weight': '权重', 'cr.group': '资源组', 'cr.workspace': '工作空间', 'cr.instanceCount': '实例数（配额）',
    'cr.gpu': 'GPU 数', 'cr.npu': 'NPU 数', 'cr.cpu': 'CPU', 'cr.memory': '内存', 'cr.queues': '队列',
    'cr.members': '成员（每行“用户 角色”，角色为 admin 或 member）', 'cr.namespace': '工作空间（命名空间）',
    'cr.visibility': '可见范围', 'cr.onlyMe': '仅自己', 'cr.wholeWorkspace': '工作空间内', 'cr.type': '类型',
    'cr.text': '文本', 'cr.image': '图像', 'cr.path': '节点目录', 'cr.queue': '队列', 'cr.imageRef': '镜像',
    'cr.framework': '框架', 'cr.command': '启动命令', 'cr.roles': '角色', 'cr.role': '角色', 'cr.count': '实例数',
    'cr.addRole': '添加角色', 'cr.removeRole': '移除', 'cr.env': '环境变量（每行 NAME=value）',
    'cr.datasets': '数据集（挂载到 /data）', 'cr.shm': '共享内存（GB）', 'cr.vip': 'VIP 节点',
    'cr.onBusy': 'VIP 节点被占用时', 'cr.wait': '等待', 'cr.kill': '停止其上的任务',
    'cr.none': '（无）', 'cr.kinds': '创建对象', 'cr.edited': 'YAML 已手动修改；修改表单会重新生成。',
    'cr.editTitle': '编辑', 'cr.save': '保存', 'cr.saved': '已保存', 'cr.created.created': '已创建', 'cr.created.configured': '已保存',
    'cr.created.unchanged': '未改变',
  },
});

const PLATFORM = 'platform.ringleader.io/v1alpha1';
const QUEUE_API = 'scheduling.volcano.sh/v1beta1';
const KINDS = ['ResourceGroup', 'Queue', 'Workspace', 'Dataset', 'TrainingJob', 'Image', 'StorageMount', 'Script', 'ScriptRun', 'CheckRun'];
const FRAMEWORKS = ['PyTorchDDP', 'PyTorchDeepSpeed', 'TensorFlowPS', 'MPI', 'MindSpore'];

/** A YAML scalar: plain where YAML reads it back as the same string, quoted otherwise. */
function scalar(v) {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  const plain = /^[A-Za-z_/\u4e00-\u9fff][\w./\u4e00-\u9fff-]*$/.test(s)
    && !/^(true|false|yes|no|on|off|null|~)$/i.test(s);
  return plain ? s : JSON.stringify(s);
}

/** Block-style YAML of plain objects, arrays and scalars, as people write jobs. */
export function toYaml(v, indent = '') {
  if (Array.isArray(v)) {
    if (!v.length) return ' []';
    return v.map((x) => {
      if (x && typeof x === 'object' && !Array.isArray(x)) {
        const inner = toYaml(x, `${indent}  `).replace(/^\n\s*/, '');
        return `\n${indent}- ${inner}`;
      }
      return `\n${indent}-${toYaml(x, `${indent}  `)}`;
    }).join('');
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return ' {}';
    return keys.map((k) => `\n${indent}${scalar(k)}:${toYaml(v[k], `${indent}  `)}`).join('');
  }
  return ` ${scalar(v)}`;
}

/** Drops empty strings, nulls, empty arrays and empty objects, recursively. */
function prune(v) {
  if (Array.isArray(v)) {
    const items = v.map(prune).filter((x) => x !== undefined);
    return items.length ? items : undefined;
  }
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v === '' || v === null ? undefined : v;
}

/**
 * `over` laid onto `base`: what the form sets replaces the saved value (an
 * emptied field removes it, once pruned), and what the form has no input
 * for (a queue's capability, a job's stop) is kept as saved.
 */
function overlay(base, over) {
  const plain = (v) => v && typeof v === 'object' && !Array.isArray(v);
  if (!plain(base) || !plain(over)) return over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = overlay(base[k], v);
  return out;
}

/** Where each kind with an edit form is read from, and whether it is namespaced. */
const SAVED = {
  TrainingJob: [PLATFORM, 'trainingjobs', true], Dataset: [PLATFORM, 'datasets', true], Queue: [QUEUE_API, 'queues', false],
  ResourceGroup: [PLATFORM, 'resourcegroups', false], Workspace: [PLATFORM, 'workspaces', false],
};

/** A saved object as the base of an edit: what its writer set, not what the server did. */
function editable(o) {
  const meta = o.metadata || {};
  return { apiVersion: o.apiVersion, kind: o.kind,
    metadata: { name: meta.name, namespace: meta.namespace, labels: meta.labels, annotations: meta.annotations }, spec: o.spec };
}

/** A number field's value: empty, a number, or the text as typed (the API then names the field and the value). */
const num = (s) => {
  const text = String(s).trim();
  const n = Number(text);
  return text === '' || !Number.isFinite(n) ? text : n;
};
const lines = (s) => String(s).split('\n').map((l) => l.trim()).filter(Boolean);

/** Names of a collection the identity may list ([] when it may not). */
async function names(path, signal) {
  try {
    const body = await api(path, { signal });
    return ((body && body.items) || []).map((o) => get(o, 'metadata.name')).sort();
  } catch (_) {
    return [];
  }
}

/** A labelled input whose `data-field` is the API field it sets. */
function field(id, label, input, apiField) {
  input.id = `cr-${id}`;
  input.name = id;
  if (apiField) input.dataset.field = apiField;
  return h('label', { for: input.id, class: 'form-field' }, h('span', {}, label), input);
}

const text = (value = '') => h('input', { value, autocomplete: 'off' });
const area = (value = '') => h('textarea', { rows: 3, spellcheck: 'false' }, value);
function select(options, value) {
  const s = h('select', {}, options.map(([v, label]) => h('option', { value: v }, label)));
  if (value !== undefined) s.value = value;
  return s;
}
function multi(options) {
  return h('select', { multiple: true, size: Math.min(6, Math.max(2, options.length)) }, options.map((o) => h('option', { value: o }, o)));
}
const chosen = (s) => [...s.selectedOptions].map((o) => o.value);

/** Sets inputs from a saved object: `[input, value]` pairs; a value not set leaves the input as it is. */
function setAll(pairs) {
  for (const [input, v] of pairs) {
    if (v === undefined || v === null) continue;
    // A select offers what the identity could list; a saved value beyond that is still shown.
    if (input.tagName === 'SELECT' && !input.multiple && ![...input.options].some((o) => o.value === String(v))) {
      input.append(h('option', { value: String(v) }, String(v)));
    }
    input.value = String(v);
  }
}

/** Selects `values` in a multiple select, adding the ones it does not offer. */
function pick(select, values) {
  const want = new Set((values || []).map(String));
  for (const v of want) if (![...select.options].some((o) => o.value === v)) select.append(h('option', { value: v }, v));
  [...select.options].forEach((o) => { o.selected = want.has(o.value); });
}

/** A choice among `options` when there are any, else a text input (the identity may list none). */
function choice(options, value = '') {
  if (!options.length) return text(value);
  const s = select(options.map((o) => [o, o]));
  s.value = value || options[0];
  return s;
}

/** Each kind's form: its inputs, and the object they make. */
const FORMS = {
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
  async TrainingJob(signal, ns) {
    const [queues, nodes, datasets, images] = await Promise.all([
      names(collection(QUEUE_API, 'queues'), signal), names(collection('v1', 'nodes'), signal),
      ns ? names(collection(PLATFORM, 'datasets', ns), signal) : [], names(collection(PLATFORM, 'images'), signal)]);
    // The workspace's own queues are the ones its jobs use; a member, who
    // may not list the cluster's, may read these (the workspace grants it).
    let ownQueues = [];
    let wsNodes = [];
    try {
      const ws = ns ? await api(`${collection(PLATFORM, 'workspaces')}/${encodeURIComponent(ns)}`, { signal }) : null;
      ownQueues = get(ws, 'spec.queues', []);
      const group = get(ws, 'spec.resourceGroup');
      if (!nodes.length && group) wsNodes = groupNodes(await api(`${collection(PLATFORM, 'resourcegroups')}/${encodeURIComponent(group)}`, { signal }));
    } catch (_) { /* not readable: the fields fall back to what could be listed */ }
    const imageList = h('datalist', { id: 'cr-images' }, images.map((i) => h('option', { value: i })));
    const f = { name: text(), namespace: text(ns || ''), queue: choice(ownQueues.length ? ownQueues : queues), image: text(),
      framework: select(FRAMEWORKS.map((x) => [x, x])), command: text(), env: area(), datasets: multi(datasets),
      shm: text(), visibility: select([['only-me', t('cr.onlyMe')], ['workspace', t('cr.wholeWorkspace')]]),
      vip: multi([]), onBusy: select([['wait', t('cr.wait')], ['kill', t('cr.kill')]]), description: area() };
    f.image.setAttribute('list', 'cr-images');
    const preview = vipPreview(() => f.namespace.value.trim());
    const showVip = () => preview.update(chosen(f.vip), f.onBusy.value);
    f.vip.addEventListener('change', showVip);
    f.onBusy.addEventListener('change', showVip);
    // The VIP machines offered are the chosen queue's group's, re-read as
    // the queue changes (a machine chosen outside it is dropped: the API
    // would refuse it); a newer read wins over an older one.
    const vipHintBox = h('p', { id: 'cr-vip-hint', class: 'muted' });
    f.vip.setAttribute('aria-describedby', 'cr-vip-hint');
    let vipRead = 0;
    const offerVip = async () => {
      const mine = ++vipRead;
      const { group, nodes: offered } = await vipMachines(f.queue.value.trim(), nodes, wsNodes, signal);
      if (mine !== vipRead || signal.aborted) return;
      const keep = new Set(chosen(f.vip));
      f.vip.replaceChildren(...offered.map((n) => h('option', { value: n, selected: keep.has(n) }, n)));
      f.vip.size = Math.min(6, Math.max(2, offered.length));
      f.vip.dataset.group = group || '';
      vipHintBox.replaceChildren(...vipHint(group));
      showVip();
      changed();
    };
    const roles = h('tbody', { id: 'cr-roles' });
    const addRole = (name = 'Master', count = 1) => {
      const cells = { name: text(name), count: text(String(count)), gpu: text(), npu: text(), cpu: text(), memory: text() };
      const i = roles.children.length;
      Object.entries(cells).forEach(([k, input]) => {
        input.name = `role-${k}`;
        input.dataset.field = k === 'name' || k === 'count' ? `spec.roles[${i}].${k}` : `spec.roles[${i}].resources.${k}`;
        input.setAttribute('aria-label', `${t(k === 'name' ? 'cr.role' : `cr.${k}`)} ${i + 1}`);
      });
      const row = h('tr', { class: 'role-row' }, Object.values(cells).map((c) => h('td', {}, c)),
        h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => { row.remove(); changed(); } }, t('cr.removeRole'))));
      row.cells_ = cells;
      roles.append(row);
      changed();
    };
    let changed = () => {};
    await offerVip();
    f.queue.addEventListener('change', offerVip);
    const roleTable = h('table', { class: 'roles' },
      h('thead', {}, h('tr', {}, ['cr.role', 'cr.count', 'cr.gpu', 'cr.npu', 'cr.cpu', 'cr.memory', 'cr.removeRole'].map((k) => h('th', {}, t(k))))),
      roles);
    const form = {
      namespace: f.namespace,
      fields: [imageList, field('name', t('cr.name'), f.name, 'metadata.name'), field('namespace', t('cr.namespace'), f.namespace, 'metadata.namespace'),
        field('queue', t('cr.queue'), f.queue, 'spec.queue'), field('framework', t('cr.framework'), f.framework, 'spec.framework'),
        field('image', t('cr.imageRef'), f.image, 'spec.image'), field('command', t('cr.command'), f.command, 'spec.command'),
        h('fieldset', { class: 'form-field' }, h('legend', {}, t('cr.roles')), scroller(roleTable),
          h('button', { type: 'button', id: 'cr-add-role', onclick: () => addRole('Worker', 1) }, t('cr.addRole'))),
        field('env', t('cr.env'), f.env, 'spec.env'), field('datasets', t('cr.datasets'), f.datasets, 'spec.mounts'),
        field('shm', t('cr.shm'), f.shm, 'spec.sharedMemoryGB'), field('visibility', t('cr.visibility'), f.visibility, 'spec.visibility'),
        field('vip', t('cr.vip'), f.vip, 'spec.vip.nodes'), vipHintBox, field('onBusy', t('cr.onBusy'), f.onBusy, 'spec.vip.onBusy'), preview.box,
        field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => {
        const vip = chosen(f.vip);
        return { apiVersion: PLATFORM, kind: 'TrainingJob', metadata: { name: f.name.value.trim(), namespace: f.namespace.value.trim() },
          spec: { description: f.description.value.trim(), queue: f.queue.value, image: f.image.value.trim(), framework: f.framework.value,
            command: f.command.value.trim(),
            env: lines(f.env.value).map((l) => { const at = l.indexOf('='); return at < 0 ? { name: l, value: '' } : { name: l.slice(0, at), value: l.slice(at + 1) }; }),
            roles: [...roles.children].map((r) => ({ name: r.cells_.name.value.trim(), count: num(r.cells_.count.value),
              resources: { gpu: num(r.cells_.gpu.value), npu: num(r.cells_.npu.value), cpu: r.cells_.cpu.value.trim(), memory: r.cells_.memory.value.trim() } })),
            mounts: chosen(f.datasets).map((d) => ({ dataset: d })), sharedMemoryGB: num(f.shm.value), visibility: f.visibility.value,
            vip: vip.length ? { nodes: vip, onBusy: f.onBusy.value } : undefined } };
      },
      ready: (onChange) => { changed = onChange; if (!roles.children.length) addRole(); },
      /** The form set from a saved job (edit, or clone with edits). */
      fill: (job, name) => {
        const sp = job.spec || {};
        f.name.value = name;
        f.namespace.value = get(job, 'metadata.namespace');
        setAll([[f.queue, sp.queue], [f.image, sp.image], [f.framework, sp.framework], [f.command, sp.command],
          [f.description, sp.description], [f.visibility, sp.visibility], [f.shm, sp.sharedMemoryGB]]);
        f.env.value = (sp.env || []).map((e) => `${e.name}=${e.value ?? ''}`).join('\n');
        const mounted = new Set((sp.mounts || []).map((m) => m.dataset).filter(Boolean));
        [...f.datasets.options].forEach((o) => { o.selected = mounted.has(o.value); });
        pick(f.vip, get(sp, 'vip.nodes', []));
        if (sp.vip && sp.vip.onBusy) f.onBusy.value = sp.vip.onBusy;
        offerVip();
        roles.replaceChildren();
        for (const r of sp.roles || []) {
          addRole(r.name, r.count);
          const cells = roles.lastChild.cells_;
          for (const k of ['gpu', 'npu', 'cpu', 'memory']) {
            const v = get(r, `resources.${k}`);
            if (v !== undefined && v !== null) cells[k].value = String(v);
          }
        }
      },
    };
    return form;
  },
};

Object.assign(FORMS, {
  async Image(signal, ns) {
    const f = { name: text(), namespace: text(ns || 'platform-system'), image: text(), version: text(), framework: text(),
      machineType: text(), os: text(), jobType: select([['training', 'training'], ['inference', 'inference'], ['notebook', 'notebook']]), description: area() };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('namespace', t('cr.namespace'), f.namespace, 'metadata.namespace'),
        field('image', t('cr.ref'), f.image, 'spec.image'), field('version', t('cr.version'), f.version, 'spec.version'),
        field('framework', t('cr.framework'), f.framework, 'spec.framework'), field('machineType', t('cr.machineType'), f.machineType, 'spec.machineType'),
        field('os', t('cr.os'), f.os, 'spec.os'), field('jobType', t('cr.jobType'), f.jobType, 'spec.jobType'),
        field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => ({ apiVersion: PLATFORM, kind: 'Image', metadata: { name: f.name.value.trim(), namespace: f.namespace.value.trim() },
        spec: { image: f.image.value.trim(), version: f.version.value.trim(), framework: f.framework.value.trim(),
          machineType: f.machineType.value.trim(), os: f.os.value.trim(), jobType: f.jobType.value, description: f.description.value.trim() } }),
    };
  },
  async StorageMount(signal) {
    const nodes = await names(collection('v1', 'nodes'), signal);
    const f = { name: text(), dir: text(), source: text(), nodes: multi(nodes) };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('dir', t('cr.nodeDirectory'), f.dir, 'spec.nodeDirectory'),
        field('source', t('cr.source'), f.source, 'spec.source'), field('nodes', t('cr.nodes'), f.nodes, 'spec.nodes')],
      build: () => ({ apiVersion: PLATFORM, kind: 'StorageMount', metadata: { name: f.name.value.trim() },
        spec: { nodeDirectory: f.dir.value.trim(), source: f.source.value.trim(), nodes: chosen(f.nodes), mounted: true } }),
    };
  },
  async Script() {
    const f = { name: text(), content: area(), timeout: text(), description: area() };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('content', t('cr.content'), f.content, 'spec.content'),
        field('timeout', t('cr.timeout'), f.timeout, 'spec.timeoutSeconds'), field('description', t('cr.description'), f.description, 'spec.description')],
      build: () => ({ apiVersion: PLATFORM, kind: 'Script', metadata: { name: f.name.value.trim() },
        spec: { content: f.content.value, timeoutSeconds: num(f.timeout.value), description: f.description.value.trim() } }),
    };
  },
  async ScriptRun(signal) {
    const [scripts, nodes] = await Promise.all([names(collection(PLATFORM, 'scripts'), signal), names(collection('v1', 'nodes'), signal)]);
    const f = { name: text(), script: select(scripts.map((x) => [x, x])), nodes: multi(nodes) };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('script', t('cr.script'), f.script, 'spec.script'),
        field('nodes', t('cr.nodes'), f.nodes, 'spec.nodes')],
      build: () => ({ apiVersion: PLATFORM, kind: 'ScriptRun', metadata: { name: f.name.value.trim() },
        spec: { script: f.script.value, nodes: chosen(f.nodes) } }),
    };
  },
  async CheckRun(signal) {
    const nodes = await names(collection('v1', 'nodes'), signal);
    const f = { name: text(), type: select(['server', 'network', 'collective'].map((x) => [x, t(`cr.${x}`)])), nodes: multi(nodes),
      baseline: select([['', t('cr.none')], ...nodes.map((n) => [n, n])]),
      operations: multi(['all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all']), devicesPerNode: text() };
    return {
      fields: [field('name', t('cr.name'), f.name, 'metadata.name'), field('type', t('cr.checkType'), f.type, 'spec.type'),
        field('nodes', t('cr.nodes'), f.nodes, 'spec.nodes'), field('baseline', t('cr.baseline'), f.baseline, 'spec.baselineNode'),
        field('operations', t('cr.operations'), f.operations, 'spec.operations'),
        field('devicesPerNode', t('cr.devicesPerNode'), f.devicesPerNode, 'spec.devicesPerNode')],
      build: () => ({ apiVersion: 'ringleader.io/v1alpha1', kind: 'CheckRun', metadata: { name: f.name.value.trim() },
        spec: { type: f.type.value, nodes: chosen(f.nodes), baselineNode: f.baseline.value, operations: chosen(f.operations),
          devicesPerNode: num(f.devicesPerNode.value) } }),
    };
  },
});

page('create', async (main, args, params, signal) => {
  const kind = KINDS.includes(args[0]) ? args[0] : 'TrainingJob';
  const editing = Boolean(params.edit && SAVED[kind]);
  main.append(h('h1', { id: 'create-title' }, editing ? `${t('cr.editTitle')}: ${t(`cr.${kind}`)} ${params.edit}` : `${t('cr.title')}: ${t(`cr.${kind}`)}`),
    h('nav', { 'aria-label': t('cr.kinds'), class: 'toolbar', id: 'create-kinds' },
      KINDS.map((k) => h('a', { href: `#/create/${k}${qs({ ns: params.ns })}`, 'data-kind': k, 'aria-current': k === kind ? 'page' : 'false' }, t(`cr.${k}`)))));
  const form = await FORMS[kind](signal, params.ns || '');
  const yaml = h('textarea', { id: 'cr-yaml', rows: 18, spellcheck: 'false', 'aria-label': t('cr.yaml') });
  const note = h('p', { id: 'cr-note', class: 'muted', role: 'status', 'aria-live': 'polite' });
  const result = h('div', { id: 'create-result', 'aria-live': 'polite' });
  let edited = false;
  let base = null;
  const render = () => {
    const built = form.build();
    yaml.value = toYaml(prune(base ? overlay(base, built) : built) || {}).replace(/^\n/, '') + '\n';
    edited = false;
    note.textContent = '';
  };
  yaml.addEventListener('input', () => { edited = true; note.textContent = t('cr.edited'); });
  const el = h('form', { id: 'create-form', class: 'create' }, ...form.fields,
    h('label', { for: 'cr-yaml' }, t('cr.yaml')), yaml, note,
    h('div', { class: 'toolbar' }, h('button', { type: 'submit', id: 'create' }, editing ? t('cr.save') : t('cr.create'))), result);
  el.addEventListener('input', (ev) => { if (ev.target !== yaml) render(); });
  el.addEventListener('change', (ev) => { if (ev.target !== yaml) render(); });
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    result.replaceChildren();
    el.querySelectorAll('[aria-invalid]').forEach((x) => x.removeAttribute('aria-invalid'));
    try {
      const body = await api(`/apis/ringleader.io/v1alpha1/apply${qs({ source: 'console' })}`,
        { method: 'POST', body: yaml.value, type: 'application/yaml' });
      const items = (body && body.items) || [];
      result.replaceChildren(h('h2', {}, editing ? t('cr.saved') : t('cr.created')), h('ul', { id: 'created' }, items.map((r) => {
        const i = JOB_KINDS.findIndex((k) => k.kind === r.kind && sameGroup(k.group, r.apiVersion));
        const action = r.action ? t(`cr.created.${r.action}`) : '';
        const label = `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${action.startsWith('cr.') ? r.action : action}`;
        return h('li', {}, i >= 0 ? h('a', { href: `#/jobs/${i}/${encodeURIComponent(r.namespace || 'default')}/${encodeURIComponent(r.name)}` }, label) : label);
      })));
    } catch (e) {
      const placed = placeErrors(yaml.value, e.causes || []);
      for (const p of placed) {
        // The input that sets the field, or the one setting its nearest parent.
        const inputs = [...el.querySelectorAll('[data-field]')];
        const hit = inputs.find((x) => x.dataset.field === p.field)
          || inputs.filter((x) => p.field && p.field.startsWith(x.dataset.field)).sort((a, b) => b.dataset.field.length - a.dataset.field.length)[0];
        if (hit) hit.setAttribute('aria-invalid', 'true');
      }
      result.replaceChildren(h('div', { class: 'error', role: 'alert', id: 'create-errors' },
        h('strong', {}, placed.length ? t('cr.refused') : (e.message || String(e))),
        h('ul', {}, placed.map((p) => h('li', { class: 'field-error', 'data-field': p.field || '', 'data-line': p.line + 1 },
          p.line >= 0 ? `${t('line')} ${p.line + 1}: ` : '', p.message)))));
    }
  });
  main.append(el);
  if (form.ready) form.ready(render);
  // `?edit=NAME` (or, for a TrainingJob, `?clone=NAME`): the form starts
  // from the saved object; an edit keeps its name and namespace, and what
  // the form has no input for.
  const from = params.edit || params.clone;
  const [group, plural, namespaced] = SAVED[kind] || [];
  if (from && form.fill && group && (params.edit || kind === 'TrainingJob') && (!namespaced || params.ns)) {
    try {
      const saved = await api(`${collection(group, plural, namespaced ? params.ns : '')}/${encodeURIComponent(from)}`, { signal });
      form.fill(saved, params.edit ? from : `${from}-copy`);
      el.querySelector('#cr-name').value = params.edit ? from : `${from}-copy`;
      if (params.edit) {
        base = editable(saved);
        for (const id of ['#cr-name', '#cr-namespace']) { const x = el.querySelector(id); if (x) x.readOnly = true; }
      }
    } catch (e) {
      result.replaceChildren(h('div', { class: 'error', role: 'alert' }, e.message || String(e)));
    }
  }
  render();
}, true);
