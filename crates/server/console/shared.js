// What the operator pages (overview, nodes, queues, workspaces, data) share:
// bounded listing, live collections, device and resource figures, job
// links, and the allocation figures read from the embedded history.
import { h, api, list, watch, get, errorBox, collection, JOB_KINDS, sameGroup, loading } from './app.js';

/** Cluster-scoped objects by name, namespaced ones by namespace/name. */
export function keyOf(o) {
  const ns = get(o, 'metadata.namespace');
  return ns ? `${ns}/${get(o, 'metadata.name')}` : get(o, 'metadata.name');
}

/**
 * Every object of a collection, `limit` (500) a request and at most `maxPages`
 * requests (so a huge collection costs a bounded amount); `complete` says
 * whether the end was reached. The version is the first page's: continue
 * tokens list at that same snapshot, so a watch from it misses nothing.
 */
export async function listAll(path, params, signal, maxPages = 20, limit = 500) {
  let items = [];
  let cont = '';
  let resourceVersion = '';
  for (let i = 0; i < maxPages; i += 1) {
    const p = await list(path, { ...params, limit, continue: cont }, signal);
    items = items.concat(p.items);
    if (!resourceVersion) resourceVersion = p.resourceVersion;
    cont = p.continue;
    if (!cont) return { items, resourceVersion, complete: true };
  }
  return { items, resourceVersion, complete: false };
}

/** Calls `fn` at most once per `ms`, after the last of a burst of calls. */
export function coalesce(fn, ms = 150) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

/**
 * A collection kept live: listed (bounded), then watched from that version.
 * `onChange(items, complete)` runs after the list and after each burst of
 * events. Resolves after the first list; rejects with its error (a 403
 * included) so the caller can show it. A watch whose version expired lists
 * again; a failure then goes to `onError`.
 */
export async function liveCollection(path, params, signal, onChange, onError) {
  const load = async () => {
    const first = await listAll(path, params, signal);
    const objects = new Map(first.items.map((o) => [keyOf(o), o]));
    const emit = () => onChange([...objects.values()], first.complete);
    const later = coalesce(emit);
    emit();
    watch(path, first.resourceVersion, (type, o) => {
      if (type === 'DELETED') objects.delete(keyOf(o)); else objects.set(keyOf(o), o);
      later();
    }, signal, () => load().catch((e) => { if (!signal.aborted && onError) onError(e); }), params);
  };
  await load();
}

/** Replaces an element's children, skipping the absent ones (`cond ? x : null`). */
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

/** A table labelled by a heading rather than a caption of its own. */
export function labelled(tableEl, headingId) {
  // `table()` wraps its table in a scrolling box: the label belongs on the table.
  (tableEl.tagName === 'TABLE' ? tableEl : tableEl.querySelector('table')).setAttribute('aria-labelledby', headingId);
  return tableEl;
}

/** Lets long names (resource names, pod names) break anywhere rather than overflow (CSSOM: the CSP forbids style attributes). */
export function wrap(el) {
  el.style.overflowWrap = 'anywhere';
  return el;
}

/** A section whose body is replaced as its data changes; a failure shows in it. */
export function section(id, title) {
  const body = h('div', { class: 'section-body' }, loading());
  const el = h('section', { id, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), body);
  return { el, body, fail: (e) => body.replaceChildren(errorBox(e)) };
}

/** Whole devices of a quantity ("8", 8); NaN when it is not a whole number. */
export function count(q) {
  if (typeof q === 'number') return q;
  return /^\d+$/.test(String(q).trim()) ? Number(q) : NaN;
}

/** Accelerator resources of a capacity map: the extended ones (names with a `/`). */
export function accelerators(capacity) {
  return Object.entries(capacity || {})
    .filter(([k]) => k.includes('/') && !k.startsWith('hugepages'))
    .map(([k, v]) => [k, count(v)])
    .filter(([, v]) => Number.isFinite(v));
}

/** `a: 1, b: 2` of a resource map (quantities shown as written). */
export function resources(m) {
  const entries = Object.entries(m || {});
  return entries.length ? entries.map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ') : '';
}

/** Whether a core Node's Ready condition is True. */
export function nodeReady(node) {
  const c = get(node, 'status.conditions', []).find((x) => x.type === 'Ready');
  return !!c && c.status === 'True';
}

/** Device ids a pod holds (`ringleader.io/devices`, comma-separated). */
export function heldDevices(pod) {
  const raw = get(pod, 'metadata.annotations', {})['ringleader.io/devices'] || '';
  return raw.split(',').map((s) => s.trim()).filter(Boolean);
}

/** A bar that says its figure in words too (the colour is never the only cue). */
export function meter(used, total, label) {
  const span = h('span');
  const frac = total > 0 ? Math.min(1, Math.max(0, used / total)) : 0;
  span.style.width = `${Math.round(frac * 100)}%`; // CSSOM, not a style attribute: the CSP forbids inline styles.
  return h('div', { class: 'bar', role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': used, 'aria-valuetext': `${used} / ${total}` }, span);
}

/** The TrainingJob's index in JOB_KINDS (its job page's route). */
export const TRAINING = JOB_KINDS.findIndex((k) => k.kind === 'TrainingJob');

/** The console link of the job a pod belongs to, or '' when it cannot be told. */
export function jobHref(pod) {
  const ns = encodeURIComponent(get(pod, 'metadata.namespace'));
  const tj = get(pod, 'metadata.labels', {})['platform.ringleader.io/training-job'];
  if (tj && TRAINING >= 0) return `#/jobs/${TRAINING}/${ns}/${encodeURIComponent(tj)}`;
  const owners = get(pod, 'metadata.ownerReferences', []);
  const owner = (Array.isArray(owners) ? owners : []).find((o) => o.controller) || owners[0];
  if (!owner) return '';
  let i = JOB_KINDS.findIndex((k) => k.kind === owner.kind && sameGroup(k.group, owner.apiVersion));
  let name = owner.name || '';
  if (i < 0 && owner.kind === 'ReplicaSet') {
    // A Deployment's ReplicaSet is `<deployment>-<hash>`.
    i = JOB_KINDS.findIndex((k) => k.kind === 'Deployment');
    name = name.replace(/-[a-z0-9]+$/, '');
  }
  return i >= 0 && name ? `#/jobs/${i}/${ns}/${encodeURIComponent(name)}` : '';
}

/** The job a pod belongs to as a link, or its name as text. */
export function jobLink(pod, text) {
  const href = jobHref(pod);
  return href ? h('a', { href }, text) : text;
}

export const QUEUES = collection('scheduling.volcano.sh/v1beta1', 'queues');
export const RESOURCE_GROUPS = collection('platform.ringleader.io/v1alpha1', 'resourcegroups');
export const RL_NODES = collection('ringleader.io/v1alpha1', 'nodes');
const HISTORY = '/apis/ringleader.io/v1alpha1/history';

/**
 * Devices allocated per queue and resource, `Map(queue → Map(resource → n))`,
 * from each queue's `status.allocated` where the status holds it, else from
 * the history's latest `queue/<q>/devices-allocated/<resource>`; `null` when
 * neither is readable (no history on this server, or no permission).
 */
export async function queueAllocation(queues, signal) {
  const out = new Map();
  let fromStatus = false;
  for (const q of queues) {
    const alloc = get(q, 'status.allocated', null);
    if (alloc && typeof alloc === 'object') {
      fromStatus = true;
      out.set(get(q, 'metadata.name'), new Map(accelerators(alloc)));
    }
  }
  if (fromStatus) return out;
  try {
    const body = await api(`${HISTORY}?prefix=queue/&sinceSeconds=120`, { signal });
    latestByObject(body, /^queue\/([^/]+)\/devices-allocated\/(.+)$/, out);
    return out;
  } catch (e) {
    if (signal.aborted) throw e;
    return null;
  }
}

/** Files each history series' latest point under `out[object][resource]`, the two taken from its name by `re`. */
function latestByObject(body, re, out) {
  for (const s of (body && body.series) || []) {
    const m = String(s.name || '').match(re);
    const last = Array.isArray(s.points) && s.points.length ? s.points[s.points.length - 1] : null;
    if (!m || !last) continue;
    if (!out.has(m[1])) out.set(m[1], new Map());
    out.get(m[1]).set(m[2], Number(last[1]) || 0);
  }
}

/**
 * Devices allocated per node and resource, `Map(node → Map(resource → n))`,
 * from the history's latest `node/<node>/devices-allocated/<resource>`,
 * named one by one (the nodes and resources are known from the Node list)
 * so the answer holds only those series; `null` when the history is not
 * readable. Pods in no queue count here, unlike in the queues' figures.
 */
export async function nodeAllocation(nodes, signal) {
  const names = [];
  for (const n of nodes) {
    for (const [res] of accelerators(get(n, 'status.capacity', {}))) names.push(`node/${get(n, 'metadata.name')}/devices-allocated/${res}`);
  }
  const out = new Map();
  try {
    for (let i = 0; i < names.length; i += 100) { // 100 names keep the URL short
      const body = await api(`${HISTORY}?series=${encodeURIComponent(names.slice(i, i + 100).join(','))}&sinceSeconds=120`, { signal });
      latestByObject(body, /^node\/([^/]+)\/devices-allocated\/(.+)$/, out);
    }
    return out;
  } catch (e) {
    if (signal.aborted) throw e;
    return null;
  }
}

/** `a: 1, b: 2` of a Map of resource → devices (zeros left out). */
export function deviceList(m) {
  const entries = m ? [...m.entries()].filter(([, v]) => v) : [];
  return entries.length ? entries.map(([k, v]) => `${k}: ${v}`).join(', ') : '0';
}

/** Waiting reasons that mean a container cannot run as it is (the kubelet's words). */
const STUCK = ['CrashLoopBackOff', 'ImagePullBackOff', 'ErrImagePull', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError', 'StartError'];

/**
 * What is wrong with a pod's containers, from their states: `trouble` is
 * the waiting reason of one that cannot run (CrashLoopBackOff,
 * ImagePullBackOff …) or `Failed` for a failed pod, '' when nothing is;
 * `cause` is the first cause: the last termination's message or exit code,
 * else the waiting message.
 */
export function containerState(pod) {
  const statuses = get(pod, 'status.containerStatuses', []);
  const said = (term) => (term ? (term.message ? String(term.message).trim() : `exit code ${term.exitCode}${term.reason ? ` (${term.reason})` : ''}`) : '');
  for (const c of Array.isArray(statuses) ? statuses : []) {
    const reason = get(c, 'state.waiting.reason');
    if (STUCK.includes(reason)) {
      return { trouble: reason, cause: said(get(c, 'lastState.terminated', null)) || get(c, 'state.waiting.message'), restarts: c.restartCount || 0 };
    }
  }
  if (get(pod, 'status.phase') === 'Failed') {
    const term = (Array.isArray(statuses) ? statuses : []).map((c) => get(c, 'state.terminated', null)).find((x) => x && x.exitCode);
    return { trouble: 'Failed', cause: said(term) || get(pod, 'status.message') || get(pod, 'status.reason'), restarts: 0 };
  }
  return { trouble: '', cause: '', restarts: 0 };
}

/** The first trouble of a job's pods (one that cannot run before a plain failure), with the pod it is in; null when none. */
export function podsTrouble(pods) {
  let failed = null;
  for (const p of pods) {
    const s = containerState(p);
    if (!s.trouble) continue;
    if (s.trouble !== 'Failed') return { ...s, pod: get(p, 'metadata.name') };
    if (!failed) failed = { ...s, pod: get(p, 'metadata.name') };
  }
  return failed;
}
