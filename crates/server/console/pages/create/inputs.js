// The Create forms' inputs: labelled controls whose `data-field` names the
// API field they set (so a refusal marks them), and the readers that fill
// them from what the identity may list or from a saved object.
import { h, api, get } from '../../app.js';

/** The API versions the forms write. */
export const PLATFORM = 'platform.ringleader.io/v1alpha1';
export const QUEUE_API = 'scheduling.volcano.sh/v1beta1';

/** A number field's value: empty, a number, or the text as typed (the API then names the field and the value). */
export const num = (s) => {
  const text = String(s).trim();
  const n = Number(text);
  return text === '' || !Number.isFinite(n) ? text : n;
};
export const lines = (s) => String(s).split('\n').map((l) => l.trim()).filter(Boolean);

/** Names of a collection the identity may list ([] when it may not). */
export async function names(path, signal) {
  try {
    const body = await api(path, { signal });
    return ((body && body.items) || []).map((o) => get(o, 'metadata.name')).sort();
  } catch (_) {
    return [];
  }
}

/** A labelled input whose `data-field` is the API field it sets. */
export function field(id, label, input, apiField) {
  input.id = `cr-${id}`;
  input.name = id;
  if (apiField) input.dataset.field = apiField;
  return h('label', { for: input.id, class: 'form-field' }, h('span', {}, label), input);
}

export const text = (value = '') => h('input', { value, autocomplete: 'off' });
export const area = (value = '') => h('textarea', { rows: 3, spellcheck: 'false' }, value);
export function select(options, value) {
  const s = h('select', {}, options.map(([v, label]) => h('option', { value: v }, label)));
  if (value !== undefined) s.value = value;
  return s;
}
export function multi(options) {
  return h('select', { multiple: true, size: Math.min(6, Math.max(2, options.length)) }, options.map((o) => h('option', { value: o }, o)));
}
export const chosen = (s) => [...s.selectedOptions].map((o) => o.value);

/** Sets inputs from a saved object: `[input, value]` pairs; a value not set leaves the input as it is. */
export function setAll(pairs) {
  for (const [input, v] of pairs) {
    if (v === undefined || v === null) continue;
    // A select offers what the identity could list; a saved value beyond that is still shown.
    if (input.tagName === 'SELECT' && !input.multiple && ![...input.options].some((o) => o.value === String(v))) {
      input.append(h('option', { value: String(v) }, String(v)));
    }
    input.value = String(v);
  }
}

/** Selects `values` in a multiple select, adding the ones it does not offer. */
export function pick(select, values) {
  const want = new Set((values || []).map(String));
  for (const v of want) if (![...select.options].some((o) => o.value === v)) select.append(h('option', { value: v }, v));
  [...select.options].forEach((o) => { o.selected = want.has(o.value); });
}

/** A choice among `options` when there are any, else a text input (the identity may list none). */
export function choice(options, value = '') {
  if (!options.length) return text(value);
  const s = select(options.map((o) => [o, o]));
  s.value = value || options[0];
  return s;
}

