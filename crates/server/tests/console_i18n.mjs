// Loads every console module under node with the few browser globals they
// touch at import time, then prints what the i18n test compares: keys only
// in one language, keys used by a literal t('…') but missing from either
// table, and badge states without a translation.
import fs from 'node:fs';

const store = () => { const m = new Map(); return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => m.set(k, v), removeItem: (k) => m.delete(k) }; };
globalThis.localStorage = store();
globalThis.sessionStorage = store();
globalThis.navigator = { language: 'en' };
globalThis.location = { hash: '' };
globalThis.addEventListener = () => {};
globalThis.document = { getElementById: () => null, querySelectorAll: () => [], addEventListener: () => {} };

const dir = process.argv[2];
const i18n = await import(`${dir}/i18n.js`);
const app = await import(`${dir}/app.js`);
await import(`${dir}/shared.js`);
// Pages and the modules a page is split into (pages/create/…), all scanned.
const pages = fs.readdirSync(`${dir}/pages`, { recursive: true }).filter((f) => f.endsWith('.js')).sort();
for (const f of pages) await import(`${dir}/pages/${f}`);

const { en, zh } = i18n.tables();
const has = (k) => k in en && k in zh;
const used = new Set();
for (const f of ['app.js', 'shared.js', 'metrics.js', ...pages.map((p) => `pages/${p}`)]) {
  const src = fs.readFileSync(`${dir}/${f}`, 'utf8');
  for (const m of src.matchAll(/\bt\(\s*(['"])([^'"`]+)\1\s*\)/g)) used.add(m[2]);
}
console.log(JSON.stringify({
  onlyEn: Object.keys(en).filter((k) => !(k in zh)),
  onlyZh: Object.keys(zh).filter((k) => !(k in en)),
  untranslatedUse: [...used].filter((k) => !has(k)).sort(),
  statesWithout: app.STATES.filter((s) => !has(`state.${s}`)),
  keys: Object.keys(en).length,
  used: used.size,
}));
