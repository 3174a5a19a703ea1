// Workspaces: each workspace with its resource group, queues, members and
// their roles, live; a workspace's detail lists its members (an admin may
// add or remove one: a merge patch of spec.members guarded by the object's
// resource version) and its queues with their state and capability.
import { page, h, api, get, badge, table, errorBox, collection, JOB_KINDS, qs, can } from '../app.js';
import { t, strings } from '../i18n.js';
import { liveCollection, resources, labelled, fill, QUEUES } from '../shared.js';

strings({
  en: {
    'ws.title': 'Workspaces', 'ws.displayName': 'Display name', 'ws.group': 'Resource group', 'ws.queues': 'Queues',
    'ws.members': 'Members', 'ws.state': 'State', 'ws.namespace': 'Namespace', 'ws.jobs': 'Training jobs',
    'ws.user': 'User', 'ws.role': 'Role', 'ws.admin': 'admin', 'ws.member': 'member', 'ws.add': 'Add member',
    'ws.remove': 'Remove', 'ws.removeLabel': 'Remove member', 'ws.added': 'Member saved.', 'ws.removed': 'Member removed.',
    'ws.back': 'All workspaces', 'ws.workspace': 'Workspace', 'ws.description': 'Description', 'ws.message': 'Message',
    'ws.capability': 'Capability', 'ws.weight': 'Weight', 'ws.noQueue': 'Not readable or deleted',
    'ws.confirmRemove': 'Remove this member from the workspace? They lose access to its namespace.',
    'ws.edit': 'Edit', 'ws.editLabel': 'Edit workspace',
  },
  zh: {
    'ws.title': '工作空间', 'ws.displayName': '显示名称', 'ws.group': '资源组', 'ws.queues': '队列',
    'ws.members': '成员', 'ws.state': '状态', 'ws.namespace': '命名空间', 'ws.jobs': '训练作业',
    'ws.user': '用户', 'ws.role': '角色', 'ws.admin': '管理员', 'ws.member': '成员', 'ws.add': '添加成员',
    'ws.remove': '移除', 'ws.removeLabel': '移除成员', 'ws.added': '成员已保存。', 'ws.removed': '成员已移除。',
    'ws.back': '全部工作空间', 'ws.workspace': '工作空间', 'ws.description': '描述', 'ws.message': '信息',
    'ws.capability': '容量上限', 'ws.weight': '权重', 'ws.noQueue': '无法读取或已删除',
    'ws.confirmRemove': '确定将该成员移出工作空间？其将失去对该命名空间的访问权限。',
    'ws.edit': '编辑', 'ws.editLabel': '编辑工作空间',
  },
});

const WORKSPACES = collection('platform.ringleader.io/v1alpha1', 'workspaces');
const TRAINING = JOB_KINDS.findIndex((k) => k.kind === 'TrainingJob');

const roleText = (r) => (r === 'admin' ? t('ws.admin') : t('ws.member'));

/** Its edit form, for an identity that may patch workspaces. */
function editLink(name, allowed) {
  return allowed ? h('a', { class: 'button', id: `edit-Workspace-${name}`, href: `#/create/Workspace${qs({ edit: name })}`, 'aria-label': `${t('ws.editLabel')} ${name}` }, t('ws.edit')) : null;
}
// By name: a workspace's own admins may patch it (and only it) without patching workspaces at large.
const mayEdit = (name = '') => can('patch', 'platform.ringleader.io/v1alpha1', 'workspaces', '', name);

function jobsLink(ns) {
  return h('a', { href: `#/jobs${qs({ kind: TRAINING, ns })}` }, ns);
}

page('workspaces', async (main, args, params, signal) => {
  if (args.length) return detail(main, args[0], signal);
  main.append(h('h1', { id: 'workspaces-title' }, t('ws.title')));
  const body = h('div', { id: 'workspaces' });
  main.append(body);
  let editable = false;
  let shown = [];
  mayEdit().then((ok) => { editable = ok; if (ok) render(shown); });
  const render = (items) => {
    shown = items;
    const rows = [...items].sort((a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name')));
    body.replaceChildren(labelled(table([
      [t('name'), (w) => h('a', { href: `#/workspaces/${encodeURIComponent(get(w, 'metadata.name'))}` }, get(w, 'metadata.name'))],
      [t('ws.displayName'), (w) => get(w, 'spec.displayName')],
      [t('ws.group'), (w) => get(w, 'spec.resourceGroup')],
      [t('ws.queues'), (w) => get(w, 'spec.queues', []).join(', ')],
      [t('ws.members'), (w) => h('ul', { class: 'plain' }, get(w, 'spec.members', []).map((m) => h('li', {}, `${m.user} (${roleText(m.role)})`)))],
      [t('ws.state'), (w) => badge(get(w, 'status.state'))],
      [t('ws.namespace'), (w) => { const ns = get(w, 'status.namespace') || get(w, 'metadata.name'); return jobsLink(ns); }],
      [t('ws.edit'), (w) => editLink(get(w, 'metadata.name'), editable)],
    ], rows), 'workspaces-title'));
  };
  try {
    await liveCollection(WORKSPACES, {}, signal, render, (e) => body.replaceChildren(errorBox(e)));
  } catch (e) {
    if (!signal.aborted) body.replaceChildren(errorBox(e));
  }
}, true);

async function detail(main, name, signal) {
  const path = `${WORKSPACES}/${encodeURIComponent(name)}`;
  let ws = await api(path, { signal });
  const head = h('div', { id: 'workspace-head' });
  const note = h('div', { id: 'workspace-note', role: 'status', 'aria-live': 'polite' });
  const members = h('div', { id: 'workspace-members' });
  const queuesBox = h('div', { id: 'workspace-queues' });
  main.append(h('p', {}, h('a', { href: '#/workspaces' }, t('ws.back'))), head, note,
    h('h2', { id: 'workspace-members-title' }, t('ws.members')), members, memberForm(),
    h('h2', { id: 'workspace-queues-title' }, t('ws.queues')), queuesBox);

  let queues = new Map();
  let queuesError = null;
  let editable = false;
  mayEdit(name).then((ok) => { editable = ok; if (ok) render(); });
  const render = () => {
    const ns = get(ws, 'status.namespace') || name;
    fill(head,
      h('h1', {}, `${t('ws.workspace')} ${name} `, badge(get(ws, 'status.state'))), editLink(name, editable),
      h('dl', { class: 'facts' },
        [[t('ws.displayName'), get(ws, 'spec.displayName')], [t('ws.description'), get(ws, 'spec.description')],
          [t('ws.group'), get(ws, 'spec.resourceGroup')], [t('ws.message'), get(ws, 'status.message')]]
          .filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
        h('dt', {}, t('ws.jobs')), h('dd', {}, jobsLink(ns))));
    members.replaceChildren(labelled(table([
      [t('ws.user'), (m) => m.user || ''],
      [t('ws.role'), (m) => roleText(m.role)],
      [t('ws.remove'), (m) => h('button', {
        type: 'button', class: 'danger', 'data-member': m.user, 'aria-label': `${t('ws.removeLabel')} ${m.user}`,
        onclick: () => removeMember(m.user),
      }, t('ws.remove'))],
    ], get(ws, 'spec.members', [])), 'workspace-members-title'));
    const names = get(ws, 'spec.queues', []);
    queuesBox.replaceChildren(queuesError ? errorBox(queuesError) : labelled(table([
      [t('queue'), (n) => h('a', { href: '#/queues' }, n)],
      [t('ws.state'), (n) => (queues.has(n) ? badge(get(queues.get(n), 'status.state') || 'Open') : t('ws.noQueue'))],
      [t('ws.weight'), (n) => String(get(queues.get(n), 'spec.weight', ''))],
      [t('ws.capability'), (n) => resources(get(queues.get(n), 'spec.capability', {}))],
    ], names), 'workspace-queues-title'));
  };

  /** Writes the member list with the version it was read at (a concurrent edit is a 409, not lost). */
  const saveMembers = async (list_, done) => {
    try {
      ws = await api(path, {
        method: 'PATCH', type: 'application/merge-patch+json', signal,
        body: { metadata: { resourceVersion: get(ws, 'metadata.resourceVersion') }, spec: { members: list_ } },
      });
      note.textContent = done;
      render();
      return true;
    } catch (e) {
      if (!signal.aborted) note.replaceChildren(errorBox(e));
      return false;
    }
  };
  function removeMember(user) {
    if (!confirm(t('ws.confirmRemove'))) return;
    saveMembers(get(ws, 'spec.members', []).filter((m) => m.user !== user), t('ws.removed'));
  }
  function memberForm() {
    const user = h('input', { id: 'member-user', name: 'user', required: true, autocomplete: 'off' });
    const role = h('select', { id: 'member-role', name: 'role' },
      h('option', { value: 'member' }, t('ws.member')), h('option', { value: 'admin' }, t('ws.admin')));
    const form = h('form', { class: 'toolbar', id: 'member-form', 'aria-label': t('ws.add') },
      h('label', { for: 'member-user' }, t('ws.user'), user),
      h('label', { for: 'member-role' }, t('ws.role'), role),
      h('button', { type: 'submit', id: 'member-add' }, t('ws.add')));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const u = user.value.trim();
      if (!u) return;
      const rest = get(ws, 'spec.members', []).filter((m) => m.user !== u);
      saveMembers([...rest, { user: u, role: role.value }], t('ws.added')).then((ok) => { if (ok) user.value = ''; });
    });
    return form;
  }

  render();
  // The workspace and the queues it names, live for who may list them. Its
  // people may only `get` it and its queues, by name (the workspace grants
  // that): for them the page is what was read, the queues read one by one,
  // and a queue that cannot be read says so in its row.
  liveCollection(WORKSPACES, { fieldSelector: `metadata.name=${name}` }, signal, (items) => {
    if (items[0]) { ws = items[0]; render(); }
  }).catch((e) => { if (!signal.aborted && e.status !== 403) note.replaceChildren(errorBox(e)); });
  liveCollection(QUEUES, {}, signal, (items) => {
    queues = new Map(items.map((q) => [get(q, 'metadata.name'), q]));
    queuesError = null;
    render();
  }).catch(async (e) => {
    if (signal.aborted) return;
    if (e.status !== 403) { queuesError = e; render(); return; }
    const named = get(ws, 'spec.queues', []);
    const read = await Promise.all(named.map((q) => api(`${QUEUES}/${encodeURIComponent(q)}`, { signal }).catch(() => null)));
    if (signal.aborted) return;
    queues = new Map(read.filter(Boolean).map((q) => [get(q, 'metadata.name'), q]));
    render();
  });
}
