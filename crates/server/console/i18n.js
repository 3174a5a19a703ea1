// English and Chinese strings. Each page registers its own with `strings()`
// so a page and its words live in one file; `t()` falls back to English,
// then to the key, so a missing translation shows up rather than breaking.
const LANG_KEY = 'ringleader-lang';
const dict = { en: {}, zh: {} };

export function strings(more) {
  for (const l of Object.keys(dict)) Object.assign(dict[l], more[l] || {});
}

export function lang() {
  const saved = localStorage.getItem(LANG_KEY);
  if (saved === 'en' || saved === 'zh') return saved;
  return (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export function setLang(l) { localStorage.setItem(LANG_KEY, l); }

/** Both tables, for the test that holds them to the same keys. */
export function tables() { return dict; }

export function t(key) {
  return dict[lang()][key] ?? dict.en[key] ?? key;
}

strings({
  en: {
    title: 'ringleader console', login: 'Sign in to ringleader', token: 'Access token',
    tokenHelp: 'The bearer token of your identity (ringleader token create, or <data-dir>/token for the admin). It is kept in this tab only.',
    signIn: 'Sign in', badToken: 'The token was not accepted.', logout: 'Sign out', language: 'Language',
    none: 'Nothing here yet.', unknown: 'Unknown', previous: 'Previous', next: 'Next', page: 'Page',
    newItems: 'New objects were created; reload the first page to see them.', namespace: 'Namespace', allNamespaces: 'All namespaces',
    name: 'Name', kind: 'Kind', phase: 'Phase', age: 'Age', node: 'Node', queue: 'Queue', filter: 'Filter',
    'nav.overview': 'Overview', 'nav.jobs': 'Jobs', 'nav.submit': 'Submit', 'nav.nodes': 'Nodes', 'nav.queues': 'Queues',
    'nav.workspaces': 'Workspaces', 'nav.data': 'Data', 'nav.checks': 'Checks', 'nav.charts': 'Charts',
    skip: 'Skip to content', loading: 'Loading\u2026',
    connLost: 'The API cannot be reached: what is shown may be out of date. Retrying\u2026',
    'state.Running': 'Running', 'state.Succeeded': 'Succeeded', 'state.Completed': 'Completed', 'state.Ready': 'Ready',
    'state.Open': 'Open', 'state.Healthy': 'Healthy', 'state.True': 'True', 'state.Pass': 'Pass', 'state.Pending': 'Pending',
    'state.Closed': 'Closed', 'state.Closing': 'Closing', 'state.Saved': 'Saved', 'state.Creating': 'Creating',
    'state.Queued': 'Queued', 'state.Inqueue': 'Inqueue', 'state.Stopping': 'Stopping', 'state.Restarting': 'Restarting',
    'state.Terminating': 'Terminating', 'state.Failed': 'Failed', 'state.CrashLoopBackOff': 'CrashLoopBackOff',
    'state.ImagePullBackOff': 'ImagePullBackOff', 'state.ErrImagePull': 'ErrImagePull',
    'state.CreateContainerConfigError': 'CreateContainerConfigError', 'state.Aborted': 'Aborted',
    'state.Unhealthy': 'Unhealthy', 'state.NotReady': 'NotReady', 'state.Abnormal': 'Abnormal', 'state.False': 'False',
    'state.Fail': 'Fail',
  },
  zh: {
    title: 'ringleader 控制台', login: '登录 ringleader', token: '访问令牌',
    tokenHelp: '您身份的 Bearer 令牌（ringleader token create，管理员为 <data-dir>/token）。仅保存在当前标签页。',
    signIn: '登录', badToken: '令牌无效。', logout: '退出', language: '语言',
    none: '暂无数据。', unknown: '未知', previous: '上一页', next: '下一页', page: '第',
    newItems: '有新对象创建；回到第一页查看。', namespace: '命名空间', allNamespaces: '全部命名空间',
    name: '名称', kind: '类型', phase: '状态', age: '时长', node: '节点', queue: '队列', filter: '筛选',
    'nav.overview': '总览', 'nav.jobs': '作业', 'nav.submit': '提交', 'nav.nodes': '节点', 'nav.queues': '队列',
    'nav.workspaces': '工作空间', 'nav.data': '数据', 'nav.checks': '检测', 'nav.charts': '监控图表',
    skip: '跳到正文', loading: '正在加载\u2026',
    connLost: '无法连接 API：当前显示的内容可能已过时。正在重试\u2026',
    'state.Running': '运行中', 'state.Succeeded': '已成功', 'state.Completed': '已完成', 'state.Ready': '就绪',
    'state.Open': '开放', 'state.Healthy': '健康', 'state.True': '是', 'state.Pass': '通过', 'state.Pending': '等待中',
    'state.Closed': '已关闭', 'state.Closing': '关闭中', 'state.Saved': '已保存', 'state.Creating': '创建中',
    'state.Queued': '排队中', 'state.Inqueue': '已入队', 'state.Stopping': '停止中', 'state.Restarting': '重启中',
    'state.Terminating': '终止中', 'state.Failed': '失败', 'state.CrashLoopBackOff': '反复崩溃 (CrashLoopBackOff)',
    'state.ImagePullBackOff': '镜像拉取失败 (ImagePullBackOff)', 'state.ErrImagePull': '镜像拉取错误 (ErrImagePull)',
    'state.CreateContainerConfigError': '容器配置错误 (CreateContainerConfigError)', 'state.Aborted': '已中止',
    'state.Unhealthy': '不健康', 'state.NotReady': '未就绪', 'state.Abnormal': '异常', 'state.False': '否',
    'state.Fail': '未通过',
  },
});
