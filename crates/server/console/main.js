// Entry point: loads every page (each registers itself) and starts the router.
import { start } from './app.js';
import './pages/overview.js';
import './pages/jobs.js';
import './pages/pod.js';
import './pages/submit.js';
import './pages/create.js';
import './pages/nodes.js';
import './pages/queues.js';
import './pages/workspaces.js';
import './pages/data.js';
import './pages/checks.js';
import './pages/charts.js';

start();
