// The YAML a Create form shows: built from the object the form makes,
// pruned of what was left empty, and for an edit laid over the saved
// object so what the form has no input for is kept.

/** A YAML scalar: plain where YAML reads it back as the same string, quoted otherwise. */
function scalar(v) {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  const plain = /^[A-Za-z_/\u4e00-\u9fff][\w./\u4e00-\u9fff-]*$/.test(s)
    && !/^(true|false|yes|no|on|off|null|~)$/i.test(s);
  return plain ? s : JSON.stringify(s);
}

/** Block-style YAML of plain objects, arrays and scalars, as people write jobs. */
export function toYaml(v, indent = '') {
  if (Array.isArray(v)) {
    if (!v.length) return ' []';
    return v.map((x) => {
      if (x && typeof x === 'object' && !Array.isArray(x)) {
        const inner = toYaml(x, `${indent}  `).replace(/^\n\s*/, '');
        return `\n${indent}- ${inner}`;
      }
      return `\n${indent}-${toYaml(x, `${indent}  `)}`;
    }).join('');
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return ' {}';
    return keys.map((k) => `\n${indent}${scalar(k)}:${toYaml(v[k], `${indent}  `)}`).join('');
  }
  return ` ${scalar(v)}`;
}

/** Drops empty strings, nulls, empty arrays and empty objects, recursively. */
export function prune(v) {
  if (Array.isArray(v)) {
    const items = v.map(prune).filter((x) => x !== undefined);
    return items.length ? items : undefined;
  }
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v === '' || v === null ? undefined : v;
}

/**
 * `over` laid onto `base`: what the form sets replaces the saved value (an
 * emptied field removes it, once pruned), and what the form has no input
 * for (a queue's capability, a job's stop) is kept as saved.
 */
export function overlay(base, over) {
  const plain = (v) => v && typeof v === 'object' && !Array.isArray(v);
  if (!plain(base) || !plain(over)) return over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = overlay(base[k], v);
  return out;
}

/** A saved object as the base of an edit: what its writer set, not what the server did. */
export function editable(o) {
  const meta = o.metadata || {};
  return { apiVersion: o.apiVersion, kind: o.kind,
    metadata: { name: meta.name, namespace: meta.namespace, labels: meta.labels, annotations: meta.annotations }, spec: o.spec };
}
