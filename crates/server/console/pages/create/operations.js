// Forms for what runs the platform day to day: a preset image, a storage
// mount on machines, a script and a run of it, and a server / network /
// collective check with its machines and baseline.
import { collection } from '../../app.js';
import { t } from '../../i18n.js';
import { PLATFORM, num, names, field, text, area, select, multi, chosen } from './inputs.js';

export const operationForms = {
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
};
