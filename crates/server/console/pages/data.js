// Data: the workspaces' datasets and images (namespaced, server-side paged,
// filtered by namespace) and the cluster's storage mounts with each node's
// mounted state, one tab each, all live through the paged lists' watches.
import { page, h, get, age, badge, pagedList, tabs, go, collection, qs, session, can } from '../app.js';
import { t, strings } from '../i18n.js';

strings({
  en: {
    'data.title': 'Data', 'data.datasets': 'Datasets', 'data.images': 'Images', 'data.storage': 'Storage mounts',
    'data.ns': 'Namespace (datasets and images)', 'data.apply': 'Apply', 'data.type': 'Type', 'data.visibility': 'Visibility',
    'data.source': 'Source', 'data.description': 'Description', 'data.image': 'Image', 'data.version': 'Version',
    'data.framework': 'Framework', 'data.machine': 'Machine type', 'data.os': 'OS', 'data.jobType': 'Job type',
    'data.preset': 'Preset', 'data.updated': 'Updated', 'data.dir': 'Node directory', 'data.desired': 'Desired',
    'data.nodes': 'Nodes', 'data.mounted': 'mounted', 'data.unmounted': 'unmounted', 'data.waiting': 'not reported yet',
    'data.yes': 'yes', 'data.no': 'no', 'data.bucket': 'bucket', 'data.presets': 'Preset images',
    'data.edit': 'Edit', 'data.editLabel': 'Edit dataset',
  },
  zh: {
    'data.title': '数据', 'data.datasets': '数据集', 'data.images': '镜像', 'data.storage': '存储挂载',
    'data.ns': '命名空间（数据集与镜像）', 'data.apply': '应用', 'data.type': '类型', 'data.visibility': '可见范围',
    'data.source': '来源', 'data.description': '描述', 'data.image': '镜像地址', 'data.version': '版本',
    'data.framework': '框架', 'data.machine': '机型', 'data.os': '操作系统', 'data.jobType': '作业类型',
    'data.preset': '预置', 'data.updated': '更新时间', 'data.dir': '节点目录', 'data.desired': '期望状态',
    'data.nodes': '节点', 'data.mounted': '已挂载', 'data.unmounted': '未挂载', 'data.waiting': '尚未上报',
    'data.yes': '是', 'data.no': '否', 'data.bucket': '存储桶', 'data.presets': '预置镜像',
    'data.edit': '编辑', 'data.editLabel': '编辑数据集',
  },
});

const GROUP = 'platform.ringleader.io/v1alpha1';
const yes = (b) => (b ? t('data.yes') : t('data.no'));

page('data', (main, args, params, signal) => {
  const ns = params.ns ?? session.namespace;
  session.namespace = ns;
  const nsIn = h('input', { id: 'data-ns', name: 'ns', value: ns, placeholder: t('allNamespaces') });
  const form = h('form', { class: 'toolbar', role: 'search' },
    h('label', { for: 'data-ns' }, t('data.ns'), nsIn),
    h('button', { type: 'submit', id: 'data-apply' }, t('data.apply')));
  main.append(h('h1', {}, t('data.title')), form);
  const initial = Math.min(2, Math.max(0, Number(params.tab) || 0));
  let current = initial;
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(`#/data${qs({ ns: nsIn.value.trim(), tab: current || '' })}`);
  });
  // Each tab remembers itself so a namespace change keeps the tab shown.
  const tab = (i, render) => (panel, s) => { current = i; render(panel, s); };
  tabs(main, [
    [t('data.datasets'), tab(0, (panel, s) => datasets(panel, ns, s))],
    [t('data.images'), tab(1, (panel, s) => images(panel, ns, s))],
    [t('data.storage'), tab(2, (panel, s) => storage(panel, s))],
  ], signal);
  if (initial) {
    const b = main.querySelector(`#tab-${initial}`);
    if (b) b.click();
  }
}, true);

async function datasets(panel, ns, signal) {
  // Edit is offered to who may patch datasets here (visibility may still refuse one that is not theirs).
  const editable = await can('patch', GROUP, 'datasets', ns);
  const edit = (d) => {
    const name = get(d, 'metadata.name');
    const href = `#/create/Dataset${qs({ ns: get(d, 'metadata.namespace'), edit: name })}`;
    return h('a', { class: 'button', href, 'data-edit': name, 'aria-label': `${t('data.editLabel')} ${name}` }, t('data.edit'));
  };
  pagedList(panel, {
    path: collection(GROUP, 'datasets', ns), signal, caption: t('data.datasets'),
    columns: [
      [t('name'), (d) => get(d, 'metadata.name')],
      [t('namespace'), (d) => get(d, 'metadata.namespace')],
      [t('data.type'), (d) => get(d, 'spec.type')],
      [t('data.visibility'), (d) => get(d, 'spec.visibility')],
      [t('data.source'), (d) => get(d, 'spec.source.path') || (get(d, 'spec.source.bucket') ? `${t('data.bucket')}: ${get(d, 'spec.source.bucket')}` : '')],
      [t('data.description'), (d) => get(d, 'spec.description')],
      [t('age'), (d) => age(get(d, 'metadata.creationTimestamp'))],
      ...(editable ? [[t('data.edit'), edit]] : []),
    ],
  });
}

const PRESETS = 'platform-system';

function images(panel, ns, signal) {
  imageList(panel, ns, t('data.images'), signal);
  // A workspace's members also use the preset images, which live in their own namespace.
  if (ns && ns !== PRESETS) {
    const box = h('div', { id: 'preset-images' });
    panel.append(box);
    imageList(box, PRESETS, t('data.presets'), signal);
  }
}

function imageList(panel, ns, caption, signal) {
  pagedList(panel, {
    path: collection(GROUP, 'images', ns), signal, caption,
    columns: [
      [t('name'), (i) => get(i, 'metadata.name')],
      [t('namespace'), (i) => get(i, 'metadata.namespace')],
      [t('data.image'), (i) => h('code', {}, get(i, 'spec.image'))],
      [t('data.version'), (i) => get(i, 'spec.version')],
      [t('data.framework'), (i) => get(i, 'spec.framework')],
      [t('data.machine'), (i) => get(i, 'spec.machineType')],
      [t('data.os'), (i) => get(i, 'spec.os')],
      [t('data.jobType'), (i) => get(i, 'spec.jobType')],
      [t('data.preset'), (i) => yes(get(i, 'spec.preset', false))],
      [t('data.updated'), (i) => get(i, 'status.updateTime')],
    ],
  });
}

/** Each node of a mount with its reported state (nodes not reported yet say so). */
function mountNodes(m) {
  const reported = new Map(get(m, 'status.nodes', []).map((n) => [n.node, n]));
  const names = [...new Set([...get(m, 'spec.nodes', []), ...reported.keys()])];
  return h('ul', { class: 'mount-nodes', 'data-mount': get(m, 'metadata.name') }, names.map((n) => {
    const r = reported.get(n);
    const state = r ? r.state : '';
    const word = state === 'mounted' ? t('data.mounted') : (state === 'unmounted' ? t('data.unmounted') : (state || t('data.waiting')));
    return h('li', { 'data-node': n, 'data-state': state || 'unknown' },
      h('a', { href: `#/nodes/${encodeURIComponent(n)}` }, n), ': ',
      h('span', { class: `badge ${state === 'mounted' ? 'ok' : (state ? 'warn' : '')}` }, word),
      r && r.message ? ` ${r.message}` : null);
  }));
}

function storage(panel, signal) {
  pagedList(panel, {
    path: collection(GROUP, 'storagemounts'), signal, caption: t('data.storage'),
    columns: [
      [t('name'), (m) => get(m, 'metadata.name')],
      [t('data.dir'), (m) => h('code', {}, get(m, 'spec.nodeDirectory'))],
      [t('data.source'), (m) => get(m, 'spec.source')],
      [t('data.desired'), (m) => badge(get(m, 'spec.mounted', false) ? t('data.mounted') : t('data.unmounted'))],
      [t('data.nodes'), mountNodes],
      [t('age'), (m) => age(get(m, 'metadata.creationTimestamp'))],
    ],
  });
}
