// The console's core: the API client (token in sessionStorage, never in a
// URL), streamed watches and logs, a DOM builder that only ever sets text
// (so nothing an object holds can become markup), the hash router and the
// shared widgets (tables with server-side paging, tabs, badges).
import { t, lang, setLang } from './i18n.js';

const TOKEN_KEY = 'ringleader-token';
const NAMESPACE_KEY = 'ringleader-namespace';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY) || ''; },
  set token(v) { if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY); },
  /** The namespace last chosen on a page ('' = all): a member who may only read their workspace's is not asked again. */
  get namespace() { return localStorage.getItem(NAMESPACE_KEY) || ''; },
  set namespace(v) { if (v) localStorage.setItem(NAMESPACE_KEY, v); else localStorage.removeItem(NAMESPACE_KEY); },
  user: '',
};

/** An API failure: the HTTP status, the Status message and its causes. */
export class ApiError extends Error {
  constructor(status, message, causes) {
    super(message);
    this.status = status;
    this.causes = causes || [];
  }
}

async function failure(res) {
  let message = `${res.status} ${res.statusText}`;
  let causes = [];
  try {
    const body = await res.json();
    if (body && body.message) message = body.message;
    if (body && body.details && Array.isArray(body.details.causes)) causes = body.details.causes;
  } catch (_) { /* not a Status */ }
  if (res.status === 401) logout();
  return new ApiError(res.status, message, causes);
}

function headers(type) {
  const h = { Authorization: `Bearer ${session.token}`, Accept: 'application/json' };
  if (type) h['Content-Type'] = type;
  return h;
}

// ---- reachability ----

let unreachable = false;
/** Watches waiting to retry: woken when the API answers again, so pages catch up at once rather than after their back-off. */
const wakers = new Set();

/**
 * A fetch that tells the banner whether the API answered: a request that
 * gets no response at all (refused, reset, offline) raises it, and a probe
 * of `/version` every two seconds lowers it once anything answers. An
 * aborted request says nothing either way. A read that got no response
 * waits for the API and is sent again: a page opened meanwhile keeps its
 * loading note (the banner says why) rather than an error it would have to
 * be reopened to clear. A write fails at once, for its form to say so.
 */
async function reach(path, init) {
  const signal = init && init.signal;
  for (;;) {
    try {
      const res = await fetch(path, init);
      if (unreachable) setReachable(true);
      return res;
    } catch (e) {
      if ((e && e.name === 'AbortError') || (signal && signal.aborted)) throw e;
      setReachable(false);
      if (init && init.method && init.method !== 'GET') throw e;
      await new Promise((resolve) => {
        const done = () => { wakers.delete(done); resolve(); };
        wakers.add(done);
        if (signal) signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

function setReachable(ok) {
  const shown = document.getElementById('conn-lost');
  if (ok) {
    unreachable = false;
    if (shown) shown.remove();
    for (const wake of [...wakers]) wake();
    return;
  }
  if (!shown) {
    // Outside <main>: a page's own re-render must not take it away.
    document.body.append(h('div', { id: 'conn-lost', class: 'conn-lost', role: 'alert' }, t('connLost')));
  }
  if (unreachable) return;
  unreachable = true;
  (async () => {
    while (unreachable) {
      await sleep(2000);
      try {
        await fetch('/version', { cache: 'no-store' });
        setReachable(true);
      } catch (_) { /* still down */ }
    }
  })();
}

/** A placeholder shown while a page or section reads its first data. */
export function loading() {
  return h('p', { class: 'muted loading', role: 'status' }, t('loading'));
}

/** One request; JSON in and out unless `type` says otherwise. */
export async function api(path, { method = 'GET', body, type, signal } = {}) {
  const payload = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
  const res = await reach(path, {
    method, signal, body: payload, cache: 'no-store',
    headers: headers(payload === undefined ? undefined : (type || 'application/json')),
  });
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

/** Query string from an object, skipping empty values. */
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** One page of a list: `{items, continue, resourceVersion, remaining}`. */
export async function list(path, params = {}, signal) {
  listsInFlight += 1;
  let body;
  try {
    body = await api(path + qs(params), { signal });
  } finally {
    listed();
  }
  const meta = (body && body.metadata) || {};
  return { items: (body && body.items) || [], continue: meta.continue || '', resourceVersion: meta.resourceVersion || '', remaining: meta.remainingItemCount };
}

/** Streams a response body to `onLine`, line by line, until it ends or `signal` aborts. */
export async function lines(path, onLine, signal) {
  const res = await reach(path, { headers: headers(), signal, cache: 'no-store' });
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let rest = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = rest.indexOf('\n')) >= 0) {
        onLine(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
      }
    }
    if (rest) onLine(rest);
  } finally {
    // A callback that throws (an expired watch) must not leave the stream open.
    reader.cancel().catch(() => {});
  }
}

// Lists in flight, and the watches waiting for them. A watch resumes from
// its list's resourceVersion, so it misses nothing by starting once the
// page's lists are in (at most a second later): a page's first lists then
// do not share the machine with a dozen watch set-ups.
let listsInFlight = 0;
let listsDone = [];
function listed() {
  listsInFlight -= 1;
  if (listsInFlight > 0) return;
  const waiting = listsDone;
  listsDone = [];
  for (const go of waiting) go();
}
function afterLists() {
  if (!listsInFlight) return Promise.resolve();
  return new Promise((go) => { listsDone.push(go); setTimeout(go, 1000); });
}

/**
 * Watches a collection from `resourceVersion`, calling `onEvent(type, object)`
 * for each change, resuming from the last version seen when the stream ends,
 * and calling `onReset()` when the version expired (the caller lists again).
 * Ends when `signal` aborts; retries are spaced so a broken server is not hammered.
 */
export function watch(path, resourceVersion, onEvent, signal, onReset, params = {}) {
  let rv = resourceVersion;
  let failures = 0;
  const run = async () => {
    await afterLists();
    while (!signal.aborted) {
      try {
        await lines(path + qs({ ...params, watch: 1, resourceVersion: rv, allowWatchBookmarks: true }), (line) => {
          if (!line.trim()) return;
          const ev = JSON.parse(line);
          if (ev.type === 'ERROR') {
            if (ev.object && ev.object.code === 410) throw new ApiError(410, 'expired');
            return;
          }
          const v = ev.object && ev.object.metadata && ev.object.metadata.resourceVersion;
          if (v) rv = v;
          failures = 0;
          if (ev.type !== 'BOOKMARK') onEvent(ev.type, ev.object);
        }, signal);
      } catch (e) {
        if (signal.aborted) return;
        if (e.status === 410 && onReset) { onReset(); return; }
        if (e.status === 401 || e.status === 403) return;
        failures += 1;
      }
      await new Promise((resolve) => {
        const done = () => { wakers.delete(done); resolve(); };
        wakers.add(done);
        sleep(Math.min(30000, 500 * 2 ** Math.min(failures, 6)), signal).then(done);
      });
    }
  };
  run();
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const id = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(id); resolve(); }, { once: true });
  });
}

/** Builds an element; strings and numbers become text nodes, never markup. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** An SVG element (charts, device maps). */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/** `a.b.c` of an object, or `fallback`. */
export function get(o, path, fallback = '') {
  let cur = o;
  for (const k of path.split('.')) {
    if (cur === null || cur === undefined) return fallback;
    cur = cur[k];
  }
  return cur === undefined || cur === null ? fallback : cur;
}

/** "3m", "2h" since an RFC 3339 time. */
export function age(ts) {
  if (!ts) return '';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

const PHASE_CLASS = {
  Running: 'ok', Succeeded: 'ok', Completed: 'ok', Ready: 'ok', Open: 'ok', Healthy: 'ok', True: 'ok', Pass: 'ok',
  Pending: 'warn', Closed: 'warn', Closing: 'warn', Saved: 'warn', Creating: 'warn', Queued: 'warn', Inqueue: 'warn', Stopping: 'warn', Restarting: 'warn', Terminating: 'warn',
  Failed: 'bad', CrashLoopBackOff: 'bad', ImagePullBackOff: 'bad', ErrImagePull: 'bad', CreateContainerConfigError: 'bad', Aborted: 'bad', Unhealthy: 'bad', NotReady: 'bad', Abnormal: 'bad', False: 'bad', Fail: 'bad',
};

/** A phase as a coloured badge (colour is never the only cue: the text is there). */
export function badge(phase) {
  const p = String(phase || t('unknown'));
  const known = PHASE_CLASS[p] ? p : p.charAt(0).toUpperCase() + p.slice(1);
  // The state in the reader's language; the API's word stays in data-state.
  const shown = PHASE_CLASS[known] ? t(`state.${known}`) : p;
  return h('span', { class: `badge ${PHASE_CLASS[known] || ''}`, 'data-state': p }, shown);
}

/** The states a badge colours, for the test that holds both languages to them. */
export const STATES = Object.keys(PHASE_CLASS);

/** A table; `columns` are `[label, (row) => cell]`. */
export function table(columns, rows, { caption, empty } = {}) {
  const body = rows.length
    ? rows.map((r) => h('tr', {}, columns.map(([, f]) => h('td', {}, f(r)))))
    : [h('tr', {}, h('td', { colspan: columns.length, class: 'empty' }, empty || t('none')))];
  return scroller(h('table', {}, caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, columns.map(([label]) => h('th', { scope: 'col' }, label)))),
    h('tbody', {}, body)));
}

/**
 * A table in a box of its own that scrolls sideways when the table is wider
 * than the page (many columns, Chinese at 1024 px), so the page itself never
 * does and no column is squeezed to a character a line.
 */
export function scroller(tableEl) {
  return h('div', { class: 'table-scroll' }, tableEl);
}

/**
 * A server-side paged list: fetches `limit` items at a time with the API's
 * continue tokens, shows previous/next, and keeps the shown page live
 * through a watch from the page's version (changes to shown rows update in
 * place; new objects show a "changes" note rather than reshuffling pages).
 */
export function pagedList(container, { path, params = {}, columns, limit = 50, signal, caption, filter }) {
  const stack = [''];
  let rows = [];
  let shownPage = null;
  const view = h('div', { class: 'paged' }, loading());
  container.appendChild(view);
  const status = h('p', { class: 'muted', role: 'status', 'aria-live': 'polite' });
  let watchAbort = null;

  const render = (cont, more) => {
    shownPage = [cont, more];
    const shown = filter ? rows.filter(filter) : rows;
    view.replaceChildren(
      table(columns, shown, { caption }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: stack.length <= 1, onclick: () => { stack.pop(); load(stack[stack.length - 1]); } }, t('previous')),
        h('span', {}, `${t('page')} ${stack.length}`),
        h('button', { type: 'button', disabled: !more, onclick: () => { stack.push(more); load(more); } }, t('next'))),
      status);
  };

  const load = async (cont) => {
    if (watchAbort) watchAbort.abort();
    watchAbort = new AbortController();
    signal.addEventListener('abort', () => watchAbort.abort(), { once: true });
    try {
      const page = await list(path, { ...params, limit, continue: cont }, signal);
      rows = page.items;
      render(cont, page.continue);
      const keyOf = (o) => `${get(o, 'metadata.namespace')}/${get(o, 'metadata.name')}`;
      const local = watchAbort.signal;
      watch(path, page.resourceVersion, (type, obj) => {
        const k = keyOf(obj);
        const i = rows.findIndex((r) => keyOf(r) === k);
        if (type === 'MODIFIED' && i >= 0) rows[i] = obj;
        else if (type === 'DELETED' && i >= 0) rows.splice(i, 1);
        else if (type === 'ADDED' && i < 0 && !page.continue && rows.length < limit) rows.push(obj);
        else if (type === 'ADDED' && i < 0) { status.textContent = t('newItems'); return; }
        else return;
        render(cont, page.continue);
      }, local, () => load(cont), params);
    } catch (e) {
      if (!signal.aborted) view.replaceChildren(errorBox(e));
    }
  };
  load('');
  // Lets the caller redraw the shown page when what its columns read changed.
  return { rerender: () => { if (shownPage) render(...shownPage); } };
}

/** An error as an alert the screen reader announces. */
export function errorBox(e) {
  const causes = (e.causes || []).map((c) => h('li', {}, c.field ? `${c.field}: ${c.message}` : c.message));
  return h('div', { class: 'error', role: 'alert' }, h('strong', {}, e.message || String(e)), causes.length ? h('ul', {}, causes) : null);
}

/** Tabs with the ARIA roles keyboards and screen readers expect. */
export function tabs(container, items, signal) {
  const list_ = h('div', { role: 'tablist', class: 'tabs' });
  const panel = h('div', { role: 'tabpanel', class: 'tabpanel', tabindex: '0' });
  let active = null;
  const buttons = items.map(([label, render], i) => {
    const b = h('button', { type: 'button', role: 'tab', id: `tab-${i}`, 'aria-selected': 'false' }, label);
    b.addEventListener('click', () => select(i));
    b.addEventListener('keydown', (ev) => {
      if (ev.key === 'ArrowRight') buttons[(i + 1) % buttons.length].focus();
      if (ev.key === 'ArrowLeft') buttons[(i + buttons.length - 1) % buttons.length].focus();
    });
    return b;
  });
  const select = (i) => {
    if (active) active.abort();
    active = new AbortController();
    signal.addEventListener('abort', () => active.abort(), { once: true });
    buttons.forEach((b, j) => { b.setAttribute('aria-selected', String(i === j)); b.tabIndex = i === j ? 0 : -1; });
    panel.setAttribute('aria-labelledby', `tab-${i}`);
    panel.replaceChildren();
    items[i][1](panel, active.signal);
  };
  list_.append(...buttons);
  container.append(list_, panel);
  select(0);
}

// ---- kinds the console lists as "jobs" ----

/**
 * Every job kind, with its collection path (namespaced) and label. `group`
 * is the API version, as first guessed: [`discover`] replaces it with the
 * version the server serves the kind at (MPIJob is `kubeflow.org/v2beta1`
 * while its siblings are `v1`). The order is fixed: links name kinds by index.
 */
export const JOB_KINDS = [
  { kind: 'AscendJob', group: 'mindxdl.gitee.com/v1', plural: 'ascendjobs' },
  { kind: 'PyTorchJob', group: 'kubeflow.org/v1', plural: 'pytorchjobs' },
  { kind: 'MPIJob', group: 'kubeflow.org/v2beta1', plural: 'mpijobs' },
  { kind: 'TFJob', group: 'kubeflow.org/v1', plural: 'tfjobs' },
  { kind: 'Job', group: 'batch.volcano.sh/v1alpha1', plural: 'jobs', label: 'Volcano Job' },
  { kind: 'Deployment', group: 'apps/v1', plural: 'deployments' },
  { kind: 'Job', group: 'batch/v1', plural: 'jobs', label: 'batch Job' },
  { kind: 'TrainingJob', group: 'platform.ringleader.io/v1alpha1', plural: 'trainingjobs' },
];

let discovered = null;
const allowed = new Map();

/**
 * Whether this identity may `verb` the `resource` of `apiVersion` (its
 * group) in `namespace` ('' = every namespace / cluster-scoped), asked with
 * a SelfSubjectAccessReview and kept for the session. An unanswerable
 * review counts as allowed: the API still refuses what it must, and a
 * hidden action would be worse than an error.
 */
export function can(verb, apiVersion, resource, namespace = '', name = '') {
  const group = String(apiVersion).includes('/') ? String(apiVersion).split('/')[0] : '';
  const key = `${verb} ${group} ${resource} ${namespace} ${name}`;
  if (!allowed.has(key)) {
    allowed.set(key, api('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      method: 'POST',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb, group, resource, namespace, name } } },
    }).then((r) => get(r, 'status.allowed', false) === true).catch(() => true));
  }
  return allowed.get(key);
}

/** Whether two API versions are of one group (`kubeflow.org/v1`, `kubeflow.org/v2beta1`): an owner may name another version than the one served. */
export function sameGroup(a, b) {
  const g = (v) => (String(v || '').includes('/') ? String(v).split('/')[0] : '');
  return g(a) === g(b);
}

/**
 * Finds the version each job kind is served at from the API's discovery
 * (`/apis`, then `/apis/<group>/<version>`'s resources, preferred version
 * first), once per sign-in. A kind the server does not serve is marked
 * `absent`; when discovery itself fails the guesses stay.
 */
export function discover() {
  if (!discovered) {
    // No page's signal: the answer is shared, and a page left mid-way must not cut it short.
    discovered = (async () => {
      const groups = ((await api('/apis')) || {}).groups || [];
      const served = new Map();
      // A resource list that cannot be read is `null`: the guess stays rather than the kind vanishing.
      const resources = (gv) => {
        if (!served.has(gv)) served.set(gv, api(`/apis/${gv}`).then((b) => new Set(((b && b.resources) || []).map((r) => r.name))).catch(() => null));
        return served.get(gv);
      };
      for (const k of JOB_KINDS) {
        const name = k.group.includes('/') ? k.group.split('/')[0] : '';
        if (!name) continue;
        const g = groups.find((x) => x.name === name);
        if (!g) { k.absent = true; continue; }
        const versions = [get(g, 'preferredVersion.groupVersion'), ...(g.versions || []).map((v) => v.groupVersion)].filter(Boolean);
        const lists = await Promise.all([...new Set(versions)].map(async (gv) => [gv, await resources(gv)]));
        const found = lists.find(([, names]) => names && names.has(k.plural));
        if (found) { k.group = found[0]; k.absent = false; } else if (lists.every(([, names]) => names)) k.absent = true;
      }
    })().catch((e) => { discovered = null; throw e; });
  }
  return discovered;
}

/** The collection path of a kind in a namespace (all namespaces when empty). */
export function collection(group, plural, ns) {
  const base = group.includes('/') ? `/apis/${group}` : `/api/${group}`;
  return ns ? `${base}/namespaces/${encodeURIComponent(ns)}/${plural}` : `${base}/${plural}`;
}

/** The job phase the controller writes (`status.state` / `status.phase` / conditions). */
export function jobPhase(o) {
  const s = o.status || {};
  // A TrainingJob has no phase of its own: its runs do.
  if (o.kind === 'TrainingJob') return s.lastRun ? `${s.lastRun} (${s.runs || 1})` : 'Saved';
  if (s.state && typeof s.state === 'object' && s.state.phase) return s.state.phase;
  if (typeof s.phase === 'string') return s.phase;
  const r = s.ringleader || {};
  if (r.phase) return r.phase;
  const conds = Array.isArray(s.conditions) ? s.conditions.filter((c) => c.status === 'True') : [];
  if (conds.length) return conds[conds.length - 1].type;
  return '';
}

// ---- router ----

const pages = new Map();
const nav = [];

/** Registers a page for `#/name`; `inNav` puts it in the side bar. */
export function page(name, render, inNav) {
  pages.set(name, render);
  if (inNav) nav.push(name);
}

export function go(hash) { location.hash = hash; }

/** Parses `#/name/a/b?x=1` into `[name, [a, b], {x: 1}]`. */
function parse(hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return [parts[0] || 'overview', parts.slice(1), Object.fromEntries(new URLSearchParams(query || ''))];
}

let current = null;

async function show() {
  const main = document.getElementById('main');
  if (!session.token) { renderLogin(); return; }
  renderChrome();
  if (current) current.abort();
  current = new AbortController();
  const mine = current.signal;
  const [name, args, params] = parse(location.hash);
  const render = pages.get(name) || pages.get('overview');
  // Not an empty page while the first data is read: a note the page's own content follows.
  const wait = loading();
  main.replaceChildren(wait);
  main.setAttribute('aria-busy', 'true');
  // Kinds at the versions the server serves before any page asks for them.
  try { await discover(); } catch (_) { /* the guesses stay */ }
  if (mine.aborted) return;
  document.querySelectorAll('#nav a').forEach((a) => a.setAttribute('aria-current', a.dataset.page === name ? 'page' : 'false'));
  try {
    await render(main, args, params, mine);
  } catch (e) {
    if (!mine.aborted) main.replaceChildren(errorBox(e));
  }
  if (mine.aborted) return;
  wait.remove();
  main.removeAttribute('aria-busy');
  main.focus({ preventScroll: true });
}

function logout() {
  session.token = '';
  discovered = null;
  allowed.clear();
  if (current) current.abort();
  renderLogin();
}

function renderLogin(message) {
  document.getElementById('nav').replaceChildren();
  document.getElementById('user').replaceChildren(langButton());
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'current-password', required: true, 'aria-describedby': 'token-help' });
  const err = h('div', { id: 'login-error', role: 'alert' }, message || '');
  const form = h('form', { id: 'login-form', class: 'card login' },
    h('h1', {}, t('login')),
    h('label', { for: 'token' }, t('token')), input,
    h('p', { id: 'token-help', class: 'muted' }, t('tokenHelp')),
    h('button', { type: 'submit', id: 'login' }, t('signIn')), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    try {
      // Tried before it is kept: a refused token never reaches sessionStorage.
      const res = await fetch('/version', { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
      if (res.status === 401) { err.textContent = t('badToken'); return; }
      if (!res.ok) { err.textContent = `${res.status} ${res.statusText}`; return; }
      session.token = token;
      show();
    } catch (e) {
      err.textContent = e.message || String(e);
    }
  });
  document.getElementById('main').replaceChildren(form);
  input.focus();
}

function langButton() {
  return h('button', { type: 'button', id: 'lang', 'aria-label': t('language'), onclick: () => { setLang(lang() === 'zh' ? 'en' : 'zh'); show(); } }, lang() === 'zh' ? 'English' : '中文');
}

const navGuards = new Map();

/** Shows page `name` in the side bar only when `check()` resolves true (a SelfSubjectAccessReview). */
export function navGuard(name, check) { navGuards.set(name, check); }

function renderChrome() {
  document.documentElement.lang = lang() === 'zh' ? 'zh-CN' : 'en';
  document.getElementById('nav').replaceChildren(h('ul', {}, nav.map((name) => {
    const li = h('li', {}, h('a', { href: `#/${name}`, 'data-page': name }, t(`nav.${name}`)));
    const guard = navGuards.get(name);
    if (guard) guard().then((ok) => { li.hidden = !ok; }).catch(() => {});
    return li;
  })));
  document.getElementById('user').replaceChildren(langButton(),
    h('button', { type: 'button', id: 'logout', onclick: logout }, t('logout')));
}

export function start() {
  window.addEventListener('hashchange', show);
  show();
}
