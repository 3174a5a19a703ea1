// The training-job form (seed 004): framework, image, queue, roles ×
// instances with their resources, env, datasets, shared memory,
// visibility and VIP machines (those of the queue's resource group, with
// what runs on them shown before Create).
import { h, api, get, collection, scroller } from '../../app.js';
import { t } from '../../i18n.js';
import { vipPreview, vipMachines, vipHint, groupNodes } from '../vip.js';
import { PLATFORM, QUEUE_API, num, lines, names, field, text, area, select, multi, chosen, setAll, pick, choice } from './inputs.js';

const FRAMEWORKS = ['PyTorchDDP', 'PyTorchDeepSpeed', 'TensorFlowPS', 'MPI', 'MindSpore'];

export const trainingForm = {
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
