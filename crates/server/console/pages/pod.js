// A pod: its phase, node and devices, each container's state (reason, exit
// code, termination message, restarts, the last termination), its events
// and its log (this run's or the previous one's, followed while it runs,
// downloadable), all kept live through one watch of the pod.
import { page, h, api, list, qs, lines, watch, get, age, badge, table, errorBox, collection, session } from '../app.js';
import { t, strings } from '../i18n.js';
import { heldDevices, jobLink, fill, containerState } from '../shared.js';
import { metricsSection, podSeries } from '../metrics.js';

strings({
  en: {
    'pod.title': 'Pod', 'pod.summary': 'Summary', 'pod.containers': 'Containers', 'pod.events': 'Events', 'pod.log': 'Log',
    'pod.devices': 'Devices', 'pod.job': 'Job', 'pod.started': 'Started', 'pod.container': 'Container',
    'pod.exitCode': 'Exit code', 'pod.lastState': 'Last termination (exit code: termination message)',
    'pod.previous': 'Previous run\u2019s log', 'pod.download': 'Download this run\u2019s log',
    'pod.downloadPrevious': 'Download the previous run\u2019s log', 'pod.noLog': 'The log is empty.',
    'pod.noPrevious': 'There is no previous run\u2019s log.', 'pod.gone': 'The pod was deleted.',
    'pod.notPlaced': 'Not placed yet',
  },
  zh: {
    'pod.title': '容器组', 'pod.summary': '概要', 'pod.containers': '容器', 'pod.events': '事件', 'pod.log': '日志',
    'pod.devices': '设备', 'pod.job': '作业', 'pod.started': '启动时间', 'pod.container': '容器',
    'pod.exitCode': '退出码', 'pod.lastState': '上次终止（退出码：终止信息）',
    'pod.previous': '上一次运行的日志', 'pod.download': '下载本次运行的日志',
    'pod.downloadPrevious': '下载上一次运行的日志', 'pod.noLog': '日志为空。',
    'pod.noPrevious': '没有上一次运行的日志。', 'pod.gone': '该容器组已被删除。',
    'pod.notPlaced': '尚未调度',
  },
});

/** `exit 3 (Error): message` of a `terminated` state, or ''. */
function ended(term) {
  if (!term) return '';
  const head = `${t('pod.exitCode')} ${term.exitCode ?? '?'}${term.reason ? ` (${term.reason})` : ''}`;
  return term.message ? `${head}: ${term.message}` : head;
}

function podPath(ns, name) { return `${collection('v1', 'pods', ns)}/${encodeURIComponent(name)}`; }

page('pods', async (main, [ns, name], params, signal) => {
  const path = podPath(ns, name);
  let pod = await api(path, { signal });
  const phase = h('span', { id: 'pod-phase' });
  const summary = h('dl', { id: 'pod-summary', class: 'summary' });
  const containers = h('div', { id: 'pod-containers' });
  const events = h('div', { id: 'pod-events' });
  const logBox = h('div', { id: 'pod-log' });
  const metricsBox = h('div');
  main.append(h('h1', {}, `${t('pod.title')} ${ns}/${name} `, phase),
    h('section', { 'aria-labelledby': 'pod-summary-title' }, h('h2', { id: 'pod-summary-title' }, t('pod.summary')), summary),
    h('section', { 'aria-labelledby': 'pod-containers-title' }, h('h2', { id: 'pod-containers-title' }, t('pod.containers')), containers),
    metricsBox,
    h('section', { 'aria-labelledby': 'pod-events-title' }, h('h2', { id: 'pod-events-title' }, t('pod.events')), events),
    h('section', { 'aria-labelledby': 'pod-log-title' }, h('h2', { id: 'pod-log-title' }, t('pod.log')), logBox));
  // Its own figures and its devices', from the pod as last seen (devices come with placement).
  metricsSection(metricsBox, async () => podSeries([pod]), signal, 'pod-metrics');

  const render = () => {
    const st = containerState(pod);
    phase.replaceChildren(badge(get(pod, 'metadata.deletionTimestamp') ? 'Terminating' : (st.trouble || get(pod, 'status.phase'))));
    const node = get(pod, 'spec.nodeName');
    const row = (label, value) => [h('dt', {}, label), h('dd', {}, value === '' || value === undefined ? '\u2014' : value)];
    fill(summary,
      row(t('phase'), get(pod, 'status.phase')),
      row(t('reason'), get(pod, 'status.reason')),
      row(t('message'), get(pod, 'status.message')),
      row(t('pod.job'), jobLink(pod, get(pod, 'metadata.ownerReferences.0.name') || get(pod, 'metadata.labels', {})['platform.ringleader.io/training-job'] || '')),
      row(t('node'), node ? h('a', { href: `#/nodes/${encodeURIComponent(node)}` }, node) : t('pod.notPlaced')),
      row(t('pod.devices'), heldDevices(pod).join(', ')),
      row(t('podIP'), get(pod, 'status.podIP')),
      row(t('hostIP'), get(pod, 'status.hostIP')),
      row(t('pod.started'), get(pod, 'status.startTime')),
      row(t('age'), age(get(pod, 'metadata.creationTimestamp'))));
    const statuses = get(pod, 'status.containerStatuses', []);
    const specs = get(pod, 'spec.containers', []);
    const rows = specs.map((c) => statuses.find((s) => s.name === c.name) || { name: c.name });
    containers.replaceChildren(table([
      [t('pod.container'), (c) => c.name],
      [t('state'), (c) => badge(Object.keys(c.state || {})[0] || t('unknown'))],
      [t('reason'), (c) => get(c, 'state.waiting.reason') || get(c, 'state.terminated.reason')],
      [t('pod.exitCode'), (c) => String(get(c, 'state.terminated.exitCode', ''))],
      [t('message'), (c) => get(c, 'state.terminated.message') || get(c, 'state.waiting.message')],
      [t('restarts'), (c) => String(c.restartCount || 0)],
      [t('pod.lastState'), (c) => ended(get(c, 'lastState.terminated', null))],
    ], rows, { caption: t('pod.containers') }));
  };
  render();
  watch(collection('v1', 'pods', ns), get(pod, 'metadata.resourceVersion'), (type, o) => {
    if (get(o, 'metadata.name') !== name) return;
    if (type === 'DELETED') { phase.replaceChildren(badge(t('pod.gone'))); return; }
    pod = o;
    render();
  }, signal, null, { fieldSelector: `metadata.name=${name}` });

  podEvents(events, ns, name, signal).catch((e) => { if (!signal.aborted) events.replaceChildren(errorBox(e)); });
  podLog(logBox, ns, name, () => pod, params.previous === '1', signal);
});

async function podEvents(box, ns, name, signal) {
  const path = collection('v1', 'events', ns);
  const params = { fieldSelector: `involvedObject.name=${name}` };
  const first = await list(path, { ...params, limit: 500 }, signal);
  const all = new Map(first.items.map((e) => [get(e, 'metadata.name'), e]));
  const render = () => box.replaceChildren(table([
    [t('type'), (e) => badge(e.type === 'Warning' ? 'Warning' : 'Normal')],
    [t('reason'), (e) => e.reason || ''],
    [t('message'), (e) => e.message || ''],
    [t('count'), (e) => String(e.count || 1)],
    [t('last'), (e) => age(e.lastTimestamp || e.eventTime || get(e, 'metadata.creationTimestamp'))],
  ], [...all.values()].filter((e) => get(e, 'involvedObject.kind', 'Pod') === 'Pod'), { caption: t('pod.events') }));
  render();
  watch(path, first.resourceVersion, (type, e) => {
    if (type === 'DELETED') all.delete(get(e, 'metadata.name')); else all.set(get(e, 'metadata.name'), e);
    render();
  }, signal, null, params);
}

/** Saves a log through the API (a plain link could not carry the token). */
async function download(ns, name, previous, note, signal) {
  try {
    const res = await fetch(`${podPath(ns, name)}/log${qs({ previous: previous ? true : '' })}`,
      { headers: { Authorization: `Bearer ${session.token}` }, cache: 'no-store', signal });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}: ${(await res.text()).slice(0, 300)}`);
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', { href: url, download: `${ns}_${name}${previous ? '.previous' : ''}.log` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    if (!signal.aborted) note.replaceChildren(errorBox(e));
  }
}

/** The log, this run's (followed while the pod runs) or the previous one's. */
function podLog(box, ns, name, podNow, previousFirst, signal) {
  const toggle = h('input', { type: 'checkbox', id: 'log-previous', name: 'log-previous', checked: previousFirst });
  const out = h('pre', { class: 'log', id: 'log', 'aria-live': 'off', tabindex: '0' });
  const note = h('p', { class: 'muted', role: 'status', id: 'log-note' });
  box.append(h('div', { class: 'toolbar' },
    h('label', { for: 'log-previous' }, toggle, ' ', t('pod.previous')),
    h('button', { type: 'button', id: 'log-download', onclick: () => download(ns, name, false, note, signal) }, t('pod.download')),
    h('button', { type: 'button', id: 'log-download-previous', onclick: () => download(ns, name, true, note, signal) }, t('pod.downloadPrevious'))),
  note, out);
  let current = null;
  const show = async () => {
    if (current) current.abort();
    current = new AbortController();
    signal.addEventListener('abort', () => current.abort(), { once: true });
    const previous = toggle.checked;
    const follow = !previous && get(podNow(), 'status.phase') === 'Running';
    out.textContent = '';
    note.textContent = follow ? t('follow') : '';
    let any = false;
    try {
      await lines(`${podPath(ns, name)}/log${qs({ previous: previous ? true : '', follow: follow ? true : '', tailLines: 2000 })}`, (line) => {
        any = true;
        out.append(`${line}\n`);
        // Bounded: a chatty pod cannot grow the page without end.
        while (out.childNodes.length > 5000) out.removeChild(out.firstChild);
        out.scrollTop = out.scrollHeight;
      }, current.signal);
      if (!any) note.textContent = previous ? t('pod.noPrevious') : t('pod.noLog');
      else if (follow) note.textContent = t('logEnded');
    } catch (e) {
      if (current.signal.aborted) return;
      if (previous && (e.status === 400 || e.status === 404)) note.textContent = t('pod.noPrevious');
      else note.replaceChildren(errorBox(e));
    }
  };
  toggle.addEventListener('change', show);
  show();
}
