// Jobs: every job kind in one list (server-side paging, filters), and a job's
// detail: runs (TrainingJob), pods, live logs, events, YAML, timeline, the
// why-pending explanation and the actions (stop, re-run, clone, delete).
import {
  page, h, api, list, qs, lines, watch, get, age, badge, table, tabs, pagedList, errorBox, go,
  JOB_KINDS, collection, jobPhase, session, can, loading,
} from '../app.js';
import { t, strings } from '../i18n.js';
import { containerState, podsTrouble, coalesce } from '../shared.js';
import { metricsPanel, metricsSection, podSeries } from '../metrics.js';

strings({
  en: {
    jobs: 'Jobs', kindFilter: 'Job kind', labelSelector: 'Label selector', phaseFilter: 'Phase (this page)', apply: 'Apply',
    pods: 'Pods', events: 'Events', yaml: 'YAML', timeline: 'Timeline', runs: 'Runs', logs: 'Log', why: 'Why pending',
    role: 'Role', restarts: 'Restarts', podIP: 'Pod IP', hostIP: 'Host IP', reason: 'Reason', message: 'Message',
    count: 'Count', last: 'Last seen', type: 'Type', time: 'Time', state: 'State', actions: 'Actions',
    delete: 'Delete', confirmDelete: 'Delete this object? Its pods are stopped.', stop: 'Stop', rerun: 'Run again', clone: 'Clone',
    newName: 'Name of the copy', follow: 'Following the log live', logEnded: 'The log ended.', choosePod: 'Pod',
    notPending: 'Nothing is pending: every pod of this job is placed.', deleted: 'Deleted.',
    runCreated: 'Run created: ', editForm: 'Edit', cloneForm: 'Clone with changes', stopped: 'Stop requested.', killedBy: 'Killed by',
    allKinds: 'All job kinds', kindsRefused: 'Not shown (you may not list them):',
    cause: 'Cause', inTrouble: 'Nothing waits to be placed, but these pods cannot run:', metrics: 'Metrics',
  },
  zh: {
    jobs: '作业', kindFilter: '作业类型', labelSelector: '标签选择器', phaseFilter: '状态（本页）', apply: '应用',
    pods: '容器组', events: '事件', yaml: 'YAML', timeline: '时间线', runs: '运行记录', logs: '日志', why: '等待原因',
    role: '角色', restarts: '重启次数', podIP: 'Pod IP', hostIP: '主机 IP', reason: '原因', message: '信息',
    count: '次数', last: '最近', type: '类型', time: '时间', state: '状态', actions: '操作',
    delete: '删除', confirmDelete: '确定删除？其容器组将被停止。', stop: '停止', rerun: '重新运行', clone: '复制',
    newName: '副本名称', follow: '正在实时查看日志', logEnded: '日志已结束。', choosePod: '容器组',
    notPending: '没有等待：该作业的容器组均已调度。', deleted: '已删除。',
    runCreated: '已创建运行：', editForm: '编辑', cloneForm: '复制并修改', stopped: '已请求停止。', killedBy: '被抢占者',
    allKinds: '全部作业类型', kindsRefused: '未显示（您无权查看）：',
    cause: '原因', inTrouble: '没有等待调度的容器组，但以下容器组无法运行：', metrics: '监控指标',
  },
});

const RUNS = { group: 'platform.ringleader.io/v1alpha1', plural: 'runs' };

function kindLabel(k) { return k.label || k.kind; }

function objectPath(k, ns, name) { return `${collection(k.group, k.plural, ns)}/${encodeURIComponent(name)}`; }

/** The label selector of a job's pods, by the labels its controller sets. */
export function podSelector(k, job) {
  const name = get(job, 'metadata.name');
  switch (k.kind) {
    case 'Job': return k.group.startsWith('batch.volcano') ? `volcano.sh/job-name=${name}` : `batch.kubernetes.io/job-name=${name}`;
    case 'Deployment': {
      const m = get(job, 'spec.selector.matchLabels', {});
      return Object.entries(m).map(([a, b]) => `${a}=${b}`).join(',');
    }
    default: return `training.kubeflow.org/job-name=${name}`;
  }
}

/** The job a pod belongs to, by the labels job controllers set or its owner. */
function podJob(p) {
  const l = get(p, 'metadata.labels', {});
  const owners = get(p, 'metadata.ownerReferences', []);
  const owner = (Array.isArray(owners) ? owners : []).find((o) => o.controller) || owners[0] || {};
  return l['platform.ringleader.io/training-job'] || l['training.kubeflow.org/job-name'] || l['volcano.sh/job-name']
    || l['batch.kubernetes.io/job-name'] || owner.name || '';
}

const FINISHED = ['Succeeded', 'Completed', 'Complete'];

/**
 * A job's state as shown: the controller's phase, unless its pods cannot
 * run (CrashLoopBackOff, ImagePullBackOff …) or failed: then that, with the
 * first cause (the container's termination message or exit code).
 */
export function jobState(o, trouble) {
  const p = jobPhase(o);
  if (!trouble || FINISHED.some((f) => p.startsWith(f))) return [badge(p)];
  const state = p === 'Failed' ? 'Failed' : trouble.trouble;
  return [badge(state), trouble.cause ? h('span', { class: 'cause' }, ` ${trouble.cause}`) : null];
}

/**
 * Troubled pods of a namespace by job: a crash-looping pod is a failed pod
 * shown in back-off, so the failed pods hold them (few, unlike pending
 * ones), listed once and kept live.
 */
async function liveTroubles(ns, signal, onChange) {
  const path = collection('v1', 'pods', ns);
  const params = { fieldSelector: 'status.phase=Failed' };
  const first = await list(path, { ...params, limit: 500 }, signal);
  const pods = new Map(first.items.map((p) => [`${get(p, 'metadata.namespace')}/${get(p, 'metadata.name')}`, p]));
  const emit = () => {
    const byJob = new Map();
    for (const p of pods.values()) {
      const k = `${get(p, 'metadata.namespace')}/${podJob(p)}`;
      byJob.set(k, [...(byJob.get(k) || []), p]);
    }
    onChange(new Map([...byJob].map(([k, ps]) => [k, podsTrouble(ps)]).filter(([, tr]) => tr)));
  };
  emit();
  const later = coalesce(emit, 300);
  watch(path, first.resourceVersion, (type, p) => {
    const k = `${get(p, 'metadata.namespace')}/${get(p, 'metadata.name')}`;
    if (type === 'DELETED' || get(p, 'status.phase') !== 'Failed') pods.delete(k); else pods.set(k, p);
    later();
  }, signal, () => liveTroubles(ns, signal, onChange), params);
}

// ---- list ----

page('jobs', async (main, args, params, signal) => {
  if (args.length >= 3) return detail(main, args, signal);
  // No kind chosen: every kind the server serves, together.
  const all = params.kind === undefined || params.kind === '';
  const kindIdx = all ? -1 : Math.min(Math.max(Number(params.kind) || 0, 0), JOB_KINDS.length - 1);
  const ns = params.ns ?? session.namespace;
  session.namespace = ns;
  const sel = params.labelSelector || '';
  const phase = params.phase || '';
  const kindSel = h('select', { id: 'kind', name: 'kind' },
    h('option', { value: '', selected: all }, t('allKinds')),
    JOB_KINDS.map((j, i) => (j.absent ? null : h('option', { value: i, selected: i === kindIdx }, kindLabel(j)))));
  const nsIn = h('input', { id: 'ns', name: 'ns', value: ns, placeholder: t('allNamespaces') });
  const selIn = h('input', { id: 'selector', name: 'selector', value: sel, placeholder: 'team=nlp' });
  const phaseIn = h('input', { id: 'phase', name: 'phase', value: phase, placeholder: 'Running' });
  const form = h('form', { class: 'toolbar', role: 'search' },
    h('label', { for: 'kind' }, t('kindFilter'), kindSel),
    h('label', { for: 'ns' }, t('namespace'), nsIn),
    h('label', { for: 'selector' }, t('labelSelector'), selIn),
    h('label', { for: 'phase' }, t('phaseFilter'), phaseIn),
    h('button', { type: 'submit' }, t('apply')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(`#/jobs${qs({ kind: kindSel.value, ns: nsIn.value.trim(), labelSelector: selIn.value.trim(), phase: phaseIn.value.trim() })}`);
  });
  main.append(h('h1', {}, t('jobs')), form);
  let troubles = new Map();
  const troubleOf = (o) => troubles.get(`${get(o, 'metadata.namespace')}/${get(o, 'metadata.name')}`);
  const shownPhase = (o) => { const tr = troubleOf(o); return tr && jobPhase(o) !== 'Failed' ? tr.trouble : jobPhase(o); };
  const filter = phase ? (o) => shownPhase(o).toLowerCase() === phase.toLowerCase() : null;
  const columns = (kindOf) => [
    [t('name'), (o) => h('a', { href: `#/jobs/${kindOf(o)}/${encodeURIComponent(get(o, 'metadata.namespace'))}/${encodeURIComponent(get(o, 'metadata.name'))}` }, get(o, 'metadata.name'))],
    [t('kind'), (o) => kindLabel(JOB_KINDS[kindOf(o)])],
    [t('namespace'), (o) => get(o, 'metadata.namespace')],
    [t('phase'), (o) => h('span', { class: 'job-state', 'data-job': get(o, 'metadata.name') }, jobState(o, troubleOf(o)))],
    [t('queue'), (o) => get(o, 'spec.runPolicy.schedulingPolicy.queue') || get(o, 'spec.queue') || get(o, 'metadata.labels.volcano\u002esh/queue-name', '')],
    [t('age'), (o) => age(get(o, 'metadata.creationTimestamp'))],
  ];
  let paged;
  if (all) {
    paged = everyKind(main, { ns, sel, signal, filter, columns });
  } else {
    const k = JOB_KINDS[kindIdx];
    paged = pagedList(main, {
      path: collection(k.group, k.plural, ns), params: { labelSelector: sel }, signal, caption: kindLabel(k), filter, columns: columns(() => kindIdx),
    });
  }
  // Without the pods' states the list still shows the controller's phases.
  liveTroubles(ns, signal, (m) => { troubles = m; paged.rerender(); }).catch(() => {});
}, true);

/**
 * Every served job kind in one table, newest first: a page is up to
 * `limit` objects of each kind (the API pages each collection on its own;
 * "next" moves on the kinds that have more). Changes re-list the shown
 * page. A kind this user may not list is named under the table, not shown
 * as an error: the others are still worth seeing.
 */
function everyKind(container, { ns, sel, signal, filter, columns, limit = 50 }) {
  const kinds = JOB_KINDS.map((k, i) => ({ k, i })).filter(({ k }) => !k.absent);
  const view = h('div', { class: 'paged', id: 'all-jobs' }, loading());
  container.appendChild(view);
  const stack = [new Map(kinds.map(({ i }) => [i, '']))];
  let rows = [];
  let next = new Map();
  let refused = [];
  const kindOf = new WeakMap();
  const render = () => {
    const shown = (filter ? rows.filter(filter) : rows);
    view.replaceChildren(
      table(columns((o) => kindOf.get(o)), shown, { caption: t('allKinds') }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: stack.length <= 1, onclick: () => { stack.pop(); load(); } }, t('previous')),
        h('span', {}, `${t('page')} ${stack.length}`),
        h('button', { type: 'button', disabled: !next.size, onclick: () => { stack.push(next); load(); } }, t('next'))),
      refused.length ? h('p', { class: 'muted', id: 'kinds-refused' }, `${t('kindsRefused')} ${refused.join(', ')}`) : '');
  };
  let watches = null;
  const load = async () => {
    if (watches) watches.abort();
    watches = new AbortController();
    signal.addEventListener('abort', () => watches.abort(), { once: true });
    const conts = stack[stack.length - 1];
    const pages = await Promise.all([...conts].map(async ([i, cont]) => {
      const k = JOB_KINDS[i];
      try {
        return { i, page: await list(collection(k.group, k.plural, ns), { labelSelector: sel, limit, continue: cont }, signal) };
      } catch (e) {
        return { i, error: e };
      }
    }));
    if (signal.aborted) return;
    rows = [];
    next = new Map();
    refused = [];
    const again = coalesce(load, 500);
    for (const { i, page: p, error } of pages) {
      if (error) { refused.push(kindLabel(JOB_KINDS[i])); continue; }
      for (const o of p.items) { kindOf.set(o, i); rows.push(o); }
      if (p.continue) next.set(i, p.continue);
      const k = JOB_KINDS[i];
      watch(collection(k.group, k.plural, ns), p.resourceVersion, () => again(), watches.signal, again, { labelSelector: sel });
    }
    rows.sort((a, b) => get(b, 'metadata.creationTimestamp').localeCompare(get(a, 'metadata.creationTimestamp'))
      || get(a, 'metadata.name').localeCompare(get(b, 'metadata.name')));
    render();
  };
  load().catch((e) => { if (!signal.aborted) view.replaceChildren(errorBox(e)); });
  return { rerender: render };
}

// ---- detail ----

async function detail(main, [kindIdx, ns, name], signal) {
  const k = JOB_KINDS[Number(kindIdx)] || JOB_KINDS[0];
  const path = objectPath(k, ns, name);
  const job = await api(path, { signal });
  let current = job;
  let trouble = null;
  const phaseSlot = h('span', { id: 'job-phase' }, jobState(job, null));
  const showState = () => phaseSlot.replaceChildren(...jobState(current, trouble).filter(Boolean));
  const note = h('p', { role: 'status', class: 'muted' });
  const actions = h('div', { class: 'toolbar' });
  main.append(h('h1', {}, `${kindLabel(k)} ${ns}/${name} `, phaseSlot), actions, note);

  // Keep the phase live, and whatever tab reads the job (its timeline).
  const onJob = new Set();
  watch(collection(k.group, k.plural, ns), get(job, 'metadata.resourceVersion'), (type, o) => {
    if (get(o, 'metadata.name') !== name) return;
    if (type === 'DELETED') { phaseSlot.replaceChildren(badge(t('deleted'))); return; }
    current = o;
    showState();
    for (const f of onJob) f(o);
  }, signal, null, { fieldSelector: `metadata.name=${name}` });
  const live = (draw, s) => {
    draw(current);
    onJob.add(draw);
    s.addEventListener('abort', () => onJob.delete(draw), { once: true });
  };
  if (k.kind !== 'TrainingJob') {
    livePods(ns, podSelector(k, job), signal, (pods) => { trouble = podsTrouble(pods); showState(); })
      .catch(() => {});
  }

  actions.append(h('button', {
    type: 'button', class: 'danger', id: 'delete-job', onclick: async () => {
      if (!confirm(t('confirmDelete'))) return;
      try { await api(path, { method: 'DELETE', signal }); note.textContent = t('deleted'); } catch (e) { note.replaceChildren(errorBox(e)); }
    },
  }, t('delete')));

  // Actions this identity may not take are not offered.
  const offer = (button, verb, apiVersion, plural) => {
    button.hidden = true;
    can(verb, apiVersion, plural, ns).then((ok) => { button.hidden = !ok; });
    return button;
  };
  offer(actions.querySelector('#delete-job'), 'delete', k.group, k.plural);
  const items = [];
  if (k.kind === 'TrainingJob') {
    actions.prepend(
      offer(h('button', { type: 'button', id: 'rerun', onclick: () => newRun(job, note, signal) }, t('rerun')), 'create', RUNS.group, RUNS.plural),
      offer(h('button', { type: 'button', id: 'clone', onclick: () => cloneJob(job, note, signal) }, t('clone')), 'create', k.group, k.plural),
      offer(h('a', { id: 'edit-form', class: 'button', href: `#/create/TrainingJob${qs({ ns, edit: name })}` }, t('editForm')), 'patch', k.group, k.plural),
      offer(h('a', { id: 'clone-form', class: 'button', href: `#/create/TrainingJob${qs({ ns, clone: name })}` }, t('cloneForm')), 'create', k.group, k.plural));
    items.push([t('runs'), (panel, s) => runsTab(panel, job, note, s)]);
  } else {
    items.push([t('pods'), (panel, s) => podsTab(panel, ns, podSelector(k, job), s)]);
    items.push([t('logs'), (panel, s) => logTab(panel, ns, podSelector(k, job), s)]);
    items.push([t('why'), (panel, s) => whyTab(panel, ns, k, job, s)]);
  }
  const selector = k.kind === 'TrainingJob' ? `platform.ringleader.io/training-job=${name}` : podSelector(k, job);
  items.push([t('metrics'), (panel, s) => metricsTab(panel, k, ns, name, selector, s)]);
  items.push([t('events'), (panel, s) => eventsTab(panel, ns, name, s)]);
  items.push([t('timeline'), (panel, s) => live((o) => timelineTab(panel, o), s)]);
  items.push([t('yaml'), (panel, s) => yamlTab(panel, path, s)]);
  tabs(main, items, signal);
}

const POD_COLUMNS = () => [
    [t('name'), (p) => h('a', { href: `#/pods/${encodeURIComponent(get(p, 'metadata.namespace'))}/${encodeURIComponent(get(p, 'metadata.name'))}` }, get(p, 'metadata.name'))],
    [t('phase'), (p) => badge(get(p, 'metadata.deletionTimestamp') ? 'Terminating' : (containerState(p).trouble || get(p, 'status.phase')))],
    [t('cause'), (p) => containerState(p).cause],
    [t('node'), (p) => get(p, 'spec.nodeName')],
    [t('restarts'), (p) => String(Math.max(0, ...get(p, 'status.containerStatuses', []).map((c) => c.restartCount || 0)))],
    [t('podIP'), (p) => get(p, 'status.podIP')],
    [t('hostIP'), (p) => get(p, 'status.hostIP')],
    [t('age'), (p) => age(get(p, 'metadata.creationTimestamp'))],
];

/** The pods of a selector, kept live through one watch. */
async function livePods(ns, selector, signal, onChange) {
  const path = collection('v1', 'pods', ns);
  const first = await list(path, { labelSelector: selector, limit: 500 }, signal);
  const pods = new Map(first.items.map((p) => [get(p, 'metadata.name'), p]));
  const emit = () => onChange([...pods.values()].sort((a, b) => get(a, 'metadata.name').localeCompare(get(b, 'metadata.name'))));
  emit();
  watch(path, first.resourceVersion, (type, p) => {
    if (type === 'DELETED') pods.delete(get(p, 'metadata.name')); else pods.set(get(p, 'metadata.name'), p);
    emit();
  }, signal, () => livePods(ns, selector, signal, onChange), { labelSelector: selector });
}

/** Pods a page at a time (a gang may have thousands), the shown page kept live. */
function podsTab(panel, ns, selector, signal) {
  pagedList(panel, { path: collection('v1', 'pods', ns), params: { labelSelector: selector }, signal, caption: t('pods'), columns: POD_COLUMNS() });
}

/** The chosen pod's log, followed live (the API streams it while the pod runs). */
async function logTab(panel, ns, selector, signal, preset) {
  const pick = h('select', { id: 'log-pod', name: 'log-pod' });
  const out = h('pre', { class: 'log', id: 'log', 'aria-live': 'off', tabindex: '0' });
  const state = h('p', { class: 'muted', role: 'status' });
  panel.append(h('div', { class: 'toolbar' }, h('label', { for: 'log-pod' }, t('choosePod'), pick)), state, out);
  let current = null;
  const follow = async (pod) => {
    if (current) current.abort();
    current = new AbortController();
    signal.addEventListener('abort', () => current.abort(), { once: true });
    out.textContent = '';
    state.textContent = t('follow');
    const path = `${collection('v1', 'pods', ns)}/${encodeURIComponent(pod)}/log${qs({ follow: true, tailLines: 2000 })}`;
    try {
      await lines(path, (line) => {
        out.append(`${line}\n`);
        // Bounded: a chatty pod cannot grow the tab without end.
        while (out.childNodes.length > 5000) out.removeChild(out.firstChild);
        out.scrollTop = out.scrollHeight;
      }, current.signal);
      state.textContent = t('logEnded');
    } catch (e) {
      if (!current.signal.aborted) state.replaceChildren(errorBox(e));
    }
  };
  pick.addEventListener('change', () => follow(pick.value));
  if (preset) {
    pick.append(h('option', { value: preset }, preset));
    follow(preset);
    return;
  }
  let first = true;
  await livePods(ns, selector, signal, (pods) => {
    const names = pods.map((p) => get(p, 'metadata.name'));
    const chosen = pick.value;
    pick.replaceChildren(...names.map((n) => h('option', { value: n, selected: n === chosen }, n)));
    if (first && names.length) { first = false; follow(names[0]); }
  });
}

async function eventsTab(panel, ns, name, signal) {
  const path = collection('v1', 'events', ns);
  const params = { fieldSelector: `involvedObject.name=${name}` };
  const first = await list(path, { ...params, limit: 500 }, signal);
  const events = new Map(first.items.map((e) => [get(e, 'metadata.name'), e]));
  const render = () => panel.replaceChildren(table([
    [t('type'), (e) => badge(e.type === 'Warning' ? 'Warning' : 'Normal')],
    [t('reason'), (e) => e.reason || ''],
    [t('message'), (e) => e.message || ''],
    [t('count'), (e) => e.count || 1],
    [t('last'), (e) => age(e.lastTimestamp || e.eventTime || get(e, 'metadata.creationTimestamp'))],
  ], [...events.values()], { caption: t('events') }));
  render();
  watch(path, first.resourceVersion, (type, e) => {
    if (type === 'DELETED') events.delete(get(e, 'metadata.name')); else events.set(get(e, 'metadata.name'), e);
    render();
  }, signal, null, params);
}

/** How many pods' figures a job's or run's charts draw (a gang may have thousands). */
const CHARTED_PODS = 8;

/** The job's pods by phase and the figures of its first pods and their devices, over a chosen range. */
function metricsTab(panel, k, ns, name, selector, signal) {
  const resource = `${k.plural}.${k.group.split('/')[0]}`;
  metricsPanel(panel, async () => {
    const pods = (await list(collection('v1', 'pods', ns), { labelSelector: selector, limit: CHARTED_PODS }, signal));
    const phases = ['Pending', 'Running', 'Succeeded', 'Failed'].map((p) => `job/${ns}/${resource}/${name}/pods-${p}`);
    return {
      names: [...phases, ...podSeries(pods.items)],
      note: pods.continue ? `${t('metrics.firstPods')} ${pods.items.map((p) => get(p, 'metadata.name')).join(', ')}` : '',
    };
  }, signal, { gridId: 'job-metrics' });
}

function timelineTab(panel, job) {
  const conds = get(job, 'status.conditions', []);
  const entries = (Array.isArray(conds) ? conds : []).map((c) => ({ time: c.lastTransitionTime || c.lastUpdateTime || '', state: c.type, message: c.message || c.reason || '' }));
  for (const e of get(job, 'status.timeline', [])) entries.push({ time: e.time || '', state: e.state || '', message: e.message || '' });
  entries.sort((a, b) => String(a.time).localeCompare(String(b.time)));
  panel.replaceChildren(h('ol', { class: 'timeline' }, entries.length ? entries.map((e) => h('li', {}, h('time', { datetime: e.time }, e.time), ' ', badge(e.state), ' ', e.message)) : h('li', { class: 'muted' }, t('none'))));
}

async function yamlTab(panel, path, signal) {
  const res = await fetch(`${path}?output=yaml`, { headers: { Authorization: `Bearer ${session.token}`, Accept: 'application/yaml' }, signal });
  const text = await res.text();
  if (!res.ok) { panel.replaceChildren(errorBox({ message: `${res.status} ${res.statusText}`, causes: [{ message: text }] })); return; }
  panel.replaceChildren(h('pre', { id: 'yaml', tabindex: '0' }, text));
}

/** Why pods wait: each pending pod's PodScheduled condition, and the PodGroup's. */
async function whyTab(panel, ns, k, job, signal) {
  const pods = (await list(collection('v1', 'pods', ns), { labelSelector: podSelector(k, job), limit: 500 }, signal)).items;
  const pending = pods.filter((p) => !get(p, 'spec.nodeName'));
  const rows = pending.map((p) => {
    const c = get(p, 'status.conditions', []).find((x) => x.type === 'PodScheduled') || {};
    return { name: get(p, 'metadata.name'), reason: c.reason || 'Pending', message: c.message || '' };
  });
  const groups = (await list(collection('scheduling.volcano.sh/v1beta1', 'podgroups', ns), { limit: 500 }, signal)).items
    .filter((g) => get(g, 'metadata.name').includes(get(job, 'metadata.name')));
  for (const g of groups) {
    for (const c of get(g, 'status.conditions', [])) {
      if (c.type === 'Unschedulable' && c.status === 'True') rows.push({ name: `podgroup/${get(g, 'metadata.name')}`, reason: c.reason || c.type, message: c.message || '' });
    }
  }
  const troubled = pods.map((p) => ({ name: get(p, 'metadata.name'), ns: get(p, 'metadata.namespace'), ...containerState(p) })).filter((r) => r.trouble);
  const podLink = (r) => h('a', { href: `#/pods/${encodeURIComponent(r.ns)}/${encodeURIComponent(r.name)}` }, r.name);
  if (rows.length) {
    panel.replaceChildren(table([
      [t('name'), (r) => r.name], [t('reason'), (r) => r.reason], [t('message'), (r) => r.message],
    ], rows, { caption: t('why') }));
  } else if (troubled.length) {
    // "Nothing is pending" would hide a job that cannot run: say why instead.
    panel.replaceChildren(h('p', { id: 'why' }, t('inTrouble')), table([
      [t('name'), podLink], [t('state'), (r) => badge(r.trouble)], [t('cause'), (r) => r.cause], [t('restarts'), (r) => String(r.restarts)],
    ], troubled, { caption: t('why') }));
  } else {
    panel.replaceChildren(h('p', { id: 'why' }, t('notPending')));
  }
}

// ---- TrainingJob runs ----

async function runsTab(panel, job, note, signal) {
  const ns = get(job, 'metadata.namespace');
  const name = get(job, 'metadata.name');
  const path = collection(RUNS.group, RUNS.plural, ns);
  const selector = `platform.ringleader.io/training-job=${name}`;
  const first = await list(path, { labelSelector: selector, limit: 500 }, signal);
  const runs = new Map(first.items.map((r) => [get(r, 'metadata.name'), r]));
  const detailBox = h('div', { id: 'run-detail' });
  // The run whose detail is open, redrawn as its watch reports it.
  let shown = null;
  const open = (r) => {
    if (shown) shown.abort.abort();
    const abort = new AbortController();
    signal.addEventListener('abort', () => abort.abort(), { once: true });
    shown = { name: get(r, 'metadata.name'), abort, update: showRun(detailBox, r, abort.signal) };
  };
  const render = () => {
    const sorted = [...runs.values()].sort((a, b) => get(b, 'metadata.creationTimestamp').localeCompare(get(a, 'metadata.creationTimestamp')));
    panel.replaceChildren(table([
      [t('name'), (r) => h('button', { type: 'button', class: 'link', 'data-open-run': get(r, 'metadata.name'), onclick: () => open(runs.get(get(r, 'metadata.name')) || r) }, get(r, 'metadata.name'))],
      [t('state'), (r) => badge(get(r, 'status.state'))],
      [t('age'), (r) => age(get(r, 'metadata.creationTimestamp'))],
      [t('actions'), (r) => h('button', {
        type: 'button', 'data-run': get(r, 'metadata.name'), disabled: ['succeeded', 'failed', 'stopped', 'stopping'].includes(get(r, 'status.state')) || get(r, 'spec.stop', false),
        onclick: async () => {
          try {
            await api(`${path}/${encodeURIComponent(get(r, 'metadata.name'))}`, { method: 'PATCH', type: 'application/merge-patch+json', body: { spec: { stop: true } }, signal });
            note.textContent = t('stopped');
          } catch (e) { note.replaceChildren(errorBox(e)); }
        },
      }, t('stop'))],
    ], sorted, { caption: t('runs') }), detailBox);
  };
  render();
  watch(path, first.resourceVersion, (type, r) => {
    if (type === 'DELETED') runs.delete(get(r, 'metadata.name')); else runs.set(get(r, 'metadata.name'), r);
    render();
    if (shown && shown.name === get(r, 'metadata.name') && type !== 'DELETED') shown.update(r);
  }, signal, null, { labelSelector: selector });
}

/**
 * A run's detail: its pods and states, timeline, logs and charts; returns
 * the function that redraws it from a newer version of the run (the
 * charts and an open log stay as they are).
 */
function showRun(box, run, signal) {
  const ns = get(run, 'metadata.namespace');
  let current = run;
  const killedBox = h('div');
  const podsBox = h('div', { id: 'run-pods' });
  const timeline = h('ol', { id: 'run-timeline' });
  const logs = h('div');
  const draw = () => {
    const killed = get(current, 'status.killedBy', null);
    killedBox.replaceChildren(killed ? h('p', {}, `${t('killedBy')}: ${killed.namespace || ''}/${killed.trainingJob || killed.name || ''} ${killed.run || ''}`) : '');
    const podLink = (p) => (p.name ? h('a', { href: `#/pods/${encodeURIComponent(ns)}/${encodeURIComponent(p.name)}` }, p.name) : '');
    podsBox.replaceChildren(table([
      [t('role'), (p) => p.role || ''], [t('name'), podLink], [t('phase'), (p) => badge(p.phase)],
      [t('restarts'), (p) => String(p.restarts || 0)], [t('podIP'), (p) => p.podIP || ''], [t('hostIP'), (p) => p.hostIP || ''],
      [t('logs'), (p) => h('button', { type: 'button', onclick: () => { const l = h('div'); logs.replaceChildren(l); logTab(l, ns, '', signal, p.name); } }, t('logs'))],
    ], (get(current, 'status.pods', []) || []).filter(Boolean), { caption: t('pods') }));
    timeline.replaceChildren(...(get(current, 'status.timeline', []) || []).filter(Boolean)
      .map((e) => h('li', {}, h('time', {}, e.time || ''), ' ', badge(e.state), ' ', e.message || '')));
  };
  draw();
  box.replaceChildren(h('h2', {}, get(run, 'metadata.name')), killedBox, podsBox, logs, h('h2', {}, t('timeline')), timeline);
  // The run's pods' figures: its pods by name (gone ones still have their history), their devices while they hold them.
  metricsSection(box, async () => {
    const wanted = (get(current, 'status.pods', []) || []).filter((p) => p && p.name).slice(0, CHARTED_PODS).map((p) => p.name);
    const live = (await list(collection('v1', 'pods', ns), { labelSelector: `platform.ringleader.io/training-job=${get(current, 'spec.trainingJob')}`, limit: 500 }, signal)).items;
    const pods = wanted.map((n) => live.find((p) => get(p, 'metadata.name') === n) || { metadata: { namespace: ns, name: n } });
    return podSeries(pods);
  }, signal, 'run-metrics');
  return (r) => { current = r; draw(); };
}

async function newRun(job, note, signal) {
  const ns = get(job, 'metadata.namespace');
  const name = get(job, 'metadata.name');
  const path = collection(RUNS.group, RUNS.plural, ns);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const runs = (await list(path, { labelSelector: `platform.ringleader.io/training-job=${name}`, limit: 500 }, signal)).items;
    const n = 1 + Math.max(0, ...runs.map((r) => Number(get(r, 'metadata.name').slice(name.length + 2)) || 0));
    const body = {
      apiVersion: RUNS.group, kind: 'Run',
      metadata: { name: `${name}-r${n}`, namespace: ns, labels: { 'platform.ringleader.io/training-job': name },
        ownerReferences: [{ apiVersion: RUNS.group, kind: 'TrainingJob', name, uid: get(job, 'metadata.uid'), blockOwnerDeletion: true }] },
      spec: { trainingJob: name },
    };
    try {
      await api(path, { method: 'POST', body, signal });
      note.textContent = `${t('runCreated')}${name}-r${n}`;
      return;
    } catch (e) {
      if (e.status !== 409) { note.replaceChildren(errorBox(e)); return; }
    }
  }
}

async function cloneJob(job, note, signal) {
  const ns = get(job, 'metadata.namespace');
  const name = prompt(t('newName'), `${get(job, 'metadata.name')}-copy`);
  if (!name) return;
  const meta = { name, namespace: ns };
  if (job.metadata.labels) meta.labels = job.metadata.labels;
  if (job.metadata.annotations) meta.annotations = job.metadata.annotations;
  try {
    await api(collection('platform.ringleader.io/v1alpha1', 'trainingjobs', ns), { method: 'POST', body: { apiVersion: 'platform.ringleader.io/v1alpha1', kind: 'TrainingJob', metadata: meta, spec: job.spec }, signal });
    go(`#/jobs/${JOB_KINDS.findIndex((k) => k.kind === 'TrainingJob')}/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`);
  } catch (e) { note.replaceChildren(errorBox(e)); }
}

