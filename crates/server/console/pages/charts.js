// Charts of the embedded history (GET /apis/ringleader.io/v1alpha1/history):
// any node, pod, job or queue series by prefix, one chart a series, with
// the same time and unit axes and range picker as the detail pages.
import { page, h, qs } from '../app.js';
import { t, strings } from '../i18n.js';
import { metricsPanel, RANGES } from '../metrics.js';

strings({
  en: { chartsTitle: 'Charts', seriesPrefix: 'Series (prefix)', show: 'Show', noSeries: 'No series under this prefix yet.' },
  zh: { chartsTitle: '监控图表', seriesPrefix: '序列（前缀）', show: '显示', noSeries: '该前缀下暂无序列。' },
});

page('charts', async (main, args, params, signal) => {
  const prefix = params.prefix || 'node/';
  const input = h('input', { id: 'series-prefix', name: 'prefix', value: prefix });
  const form = h('form', { class: 'toolbar', role: 'search' },
    h('label', { for: 'series-prefix' }, t('seriesPrefix'), input),
    h('button', { type: 'submit' }, t('show')));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); location.hash = `#/charts${qs({ prefix: input.value.trim() })}`; });
  main.append(h('h1', {}, t('chartsTitle')), form);
  const range = Number(params.window);
  metricsPanel(main, null, signal, {
    prefix, perSeries: true, gridId: 'charts', empty: t('noSeries'), range: RANGES.includes(range) ? range : undefined,
  });
}, true);
