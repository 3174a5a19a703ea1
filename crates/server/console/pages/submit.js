// Submit: YAML (one or many documents, any kind the API serves) applied as
// `ringleader apply` does; a refusal shows each error beside its line.
import { page, h, api, qs, JOB_KINDS, sameGroup, can, navGuard, session } from '../app.js';
import { t, strings } from '../i18n.js';

strings({
  en: {
    submitTitle: 'Submit YAML', yamlLabel: 'Job YAML', submit: 'Submit', namespaceDefault: 'Namespace for documents without one',
    applied: 'Applied', fieldErrors: 'The YAML was refused; nothing was applied.', line: 'line', example: 'Load an example',
  },
  zh: {
    submitTitle: '提交 YAML', yamlLabel: '作业 YAML', submit: '提交', namespaceDefault: '未指定命名空间的文档所用命名空间',
    applied: '已应用', fieldErrors: 'YAML 被拒绝，未应用任何对象。', line: '行', example: '载入示例',
  },
});

const EXAMPLE = `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: hello
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
            command: ["sh", "-c", "echo hello from $RANK; sleep 30"]
`;

/** Splits `a.b[0].c` into `['a', 'b', 0, 'c']`. */
export function pathSegments(field) {
  const out = [];
  for (const part of field.split('.')) {
    const m = part.match(/^([^[\]]*)((?:\[\d+\])*)$/);
    if (!m) { out.push(part); continue; }
    if (m[1]) out.push(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
  }
  return out;
}

const indentOf = (line) => line.length - line.trimStart().length;
const meaningful = (line) => line.trim() && !line.trim().startsWith('#');

/**
 * The 0-based line of `field` in one YAML document's lines (block style, as
 * people write jobs), or the deepest line found on the way when the field
 * itself is missing (an absent required field points at its parent).
 */
export function lineOfField(docLines, field) {
  let from = 0;
  let parentIndent = -1;
  let found = -1;
  for (const seg of pathSegments(field)) {
    let hit = -1;
    if (typeof seg === 'number') {
      let n = -1;
      for (let i = from; i < docLines.length; i += 1) {
        const l = docLines[i];
        if (!meaningful(l)) continue;
        if (indentOf(l) < parentIndent || (indentOf(l) === parentIndent && !l.trimStart().startsWith('- '))) break;
        if (l.trimStart().startsWith('- ') && indentOf(l) >= parentIndent) {
          n += 1;
          if (n === seg) { hit = i; parentIndent = indentOf(l) + 1; break; }
        }
      }
    } else {
      const re = new RegExp(`^(- )?["']?${seg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}["']?\\s*:`);
      for (let i = from; i < docLines.length; i += 1) {
        const l = docLines[i];
        if (!meaningful(l)) continue;
        if (i > from && indentOf(l) <= parentIndent && !(found >= 0 && i === found)) break;
        const body = l.trimStart();
        if (re.test(body) && indentOf(l) > parentIndent - 1) {
          hit = i;
          parentIndent = indentOf(l) + (body.startsWith('- ') ? 2 : 0);
          break;
        }
      }
    }
    if (hit < 0) break;
    found = hit;
    from = hit + 1;
  }
  return found;
}

/** The first line of each `---`-separated document in `text`. */
function docStarts(lines) {
  const starts = [0];
  lines.forEach((l, i) => { if (/^---\s*$/.test(l) && i > 0) starts.push(i + 1); });
  return starts;
}

/** `{line, message}` for each cause of a refused apply (line 0-based, -1 unknown). */
export function placeErrors(text, causes) {
  const lines = text.split('\n');
  const starts = docStarts(lines);
  return causes.map((c) => {
    const msg = c.message || '';
    const doc = Number((msg.match(/^console\[(\d+)\]/) || [])[1] || 0);
    const at = msg.match(/line (\d+)/);
    if (!c.field && at) return { line: Number(at[1]) - 1, message: msg };
    const start = starts[doc] ?? 0;
    const end = starts[doc + 1] !== undefined ? starts[doc + 1] - 1 : lines.length;
    const rel = c.field ? lineOfField(lines.slice(start, end), c.field) : -1;
    return { line: rel >= 0 ? start + rel : -1, field: c.field, message: msg };
  });
}

page('submit', (main) => {
  const area = h('textarea', { id: 'yaml-input', name: 'yaml', spellcheck: 'false', 'aria-describedby': 'submit-result', 'aria-label': t('yamlLabel') });
  area.value = EXAMPLE;
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
  const ns = h('input', { id: 'submit-ns', name: 'namespace', value: 'default' });
  const result = h('div', { id: 'submit-result', 'aria-live': 'polite' });
  let bad = new Set();
  const renderGutter = () => {
    const n = area.value.split('\n').length;
    gutter.replaceChildren(...Array.from({ length: n }, (_, i) => h('div', { class: bad.has(i) ? 'bad' : '' }, String(i + 1))));
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener('input', () => { bad = new Set(); renderGutter(); });
  area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
  const form = h('form', { id: 'submit-form' },
    h('label', { for: 'yaml-input' }, t('yamlLabel')),
    h('div', { class: 'editor' }, gutter, area),
    h('div', { class: 'toolbar' },
      h('label', { for: 'submit-ns' }, t('namespaceDefault'), ns),
      h('button', { type: 'submit', id: 'submit' }, t('submit'))),
    result);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    result.replaceChildren();
    try {
      const body = await api(`/apis/ringleader.io/v1alpha1/apply${qs({ source: 'console', namespace: ns.value.trim() })}`,
        { method: 'POST', body: area.value, type: 'application/yaml' });
      const items = (body && body.items) || (Array.isArray(body) ? body : []);
      result.replaceChildren(h('h2', {}, t('applied')), h('ul', { id: 'applied' }, items.map((r) => {
        const i = JOB_KINDS.findIndex((k) => k.kind === r.kind && sameGroup(k.group, r.apiVersion));
        const label = `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name} ${r.action || ''}`;
        return h('li', {}, i >= 0 ? h('a', { href: `#/jobs/${i}/${encodeURIComponent(r.namespace || 'default')}/${encodeURIComponent(r.name)}` }, label) : label);
      })));
    } catch (e) {
      const placed = placeErrors(area.value, e.causes || []);
      bad = new Set(placed.filter((p) => p.line >= 0).map((p) => p.line));
      renderGutter();
      result.replaceChildren(h('div', { class: 'error', role: 'alert', id: 'submit-errors' },
        h('strong', {}, placed.length ? t('fieldErrors') : (e.message || String(e))),
        h('ul', {}, placed.map((p) => h('li', { class: 'field-error', 'data-line': p.line + 1, 'data-field': p.field || '' },
          p.line >= 0 ? h('button', {
            type: 'button', class: 'link', onclick: () => {
              const lines = area.value.split('\n');
              const pos = lines.slice(0, p.line).reduce((a, l) => a + l.length + 1, 0);
              area.focus();
              area.setSelectionRange(pos, pos + lines[p.line].length);
            },
          }, `${t('line')} ${p.line + 1}`) : null, ' ', p.message)))));
    }
  });
  main.append(h('h1', {}, t('submitTitle')), form);
  renderGutter();
}, true);

// Offered only to an identity that may create some kind of job in its namespace.
navGuard('submit', async () => {
  const ns = session.namespace || 'default';
  const answers = await Promise.all(JOB_KINDS.filter((k) => !k.absent).map((k) => can('create', k.group, k.plural, ns)));
  return answers.some(Boolean);
});
