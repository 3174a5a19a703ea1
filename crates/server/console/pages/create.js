// Create: forms for what seeds 003/004 make on the platform (a resource
// group, a queue with its quota, a workspace with members, a dataset, a
// training job). A form builds the object and shows it as YAML, which stays
// editable: what is sent is that text, through the same apply as Submit,
// so the API's validation speaks (strict fields included) and each refusal
// marks both the form field and the YAML line it names. The forms
// themselves are in create/ (platform, training, operations), built of
// create/inputs.js; create/yaml.js writes the YAML.
import { page, h, api, collection, qs, JOB_KINDS, sameGroup } from '../app.js';
import { t, strings } from '../i18n.js';
import { placeErrors } from './submit.js';
import { toYaml, prune, overlay, editable } from './create/yaml.js';
import { PLATFORM, QUEUE_API } from './create/inputs.js';
import { platformForms } from './create/platform.js';
import { trainingForm } from './create/training.js';
import { operationForms } from './create/operations.js';

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

const KINDS = ['ResourceGroup', 'Queue', 'Workspace', 'Dataset', 'TrainingJob', 'Image', 'StorageMount', 'Script', 'ScriptRun', 'CheckRun'];

/** Where each kind with an edit form is read from, and whether it is namespaced. */
const SAVED = {
  TrainingJob: [PLATFORM, 'trainingjobs', true], Dataset: [PLATFORM, 'datasets', true], Queue: [QUEUE_API, 'queues', false],
  ResourceGroup: [PLATFORM, 'resourcegroups', false], Workspace: [PLATFORM, 'workspaces', false],
};

/** Each kind's form (a module per area). */
const FORMS = { ...platformForms, ...trainingForm, ...operationForms };

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
