import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/adapters/config/config.js';
import { SilentLogger, type Logger } from '../../src/adapters/log/logger.js';
import { startService, type RunningService } from '../../src/service.js';
import { adoptionsDone } from './store.js';
import { snapshot } from './tree.js';
import { until } from './until.js';

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';

export interface Harness {
  readonly url: string;
  readonly root: string;
  readonly docsRoot: string;
  readonly deploysRoot: string;
  readonly previewsRoot: string;
  readonly service: RunningService;
  createUser(username: string): Promise<string>;
  /** A tarball deploy; resolves once its answer has come and its new objects are in the store. */
  deploy(token: string, project: string | undefined, archive: Buffer | undefined, options?: { fileFirst?: boolean; preview?: string }): Promise<Reply>;
  call(method: string, path: string, options?: { token?: string; json?: unknown; body?: string | Buffer; headers?: Record<string, string> }): Promise<Reply>;
  /** Waits until background deletions have emptied DEPLOYS_ROOT/.trash. */
  trashEmptied(): Promise<void>;
  /**
   * Waits until the background work earlier requests queued is done: the service's
   * adoptions, deletions and collections (a prune's collection waits for deploys to be
   * quiet), then DEPLOYS_ROOT unchanged for a while. For a "before" snapshot.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/** The real composed service, on an ephemeral port, over temp directories and a real SQLite file. */
export async function startHarness(env: Record<string, string> = {}, logger: Logger = new SilentLogger()): Promise<Harness> {
  const root = await mkdtemp(join(tmpdir(), 'sitedrop-test-'));
  // Off unless a test asks: siblings made in the background would change the trees other tests compare before and after.
  const config = loadConfig({ DATA_DIR: root, PORT: '0', HOST: '127.0.0.1', PUBLIC_BASE: 'https://sites.example.test/', PRECOMPRESS: 'off', ...env });
  const service = await startService(config, ADMIN_TOKEN, logger);

  const call: Harness['call'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body: string | Buffer | undefined = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    const response = await fetch(`${service.url}${path}`, { method, headers, body });
    const text = await response.text();
    // The few answers that are not JSON (metrics, the CLI) keep their text.
    const json = response.headers.get('content-type')?.startsWith('application/json') ?? false;
    return { status: response.status, body: text === '' ? {} : json ? JSON.parse(text) : { text }, headers: response.headers };
  };

  const trashEmptied = (): Promise<void> => until(async () => (await readdir(join(config.deploysRoot, '.trash'))).length === 0, 'the trash to be emptied', 20_000);

  return {
    url: service.url,
    root,
    docsRoot: config.docsRoot,
    deploysRoot: config.deploysRoot,
    previewsRoot: config.previewsRoot,
    service,
    call,
    async createUser(username) {
      const reply = await call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username } });
      if (reply.status !== 200) throw new Error(`creating ${username}: ${JSON.stringify(reply.body)}`);
      return reply.body.token as string;
    },
    async deploy(token, project, archive, options = {}) {
      const form = new FormData();
      const addProject = () => {
        if (project !== undefined) form.append('project', project);
        if (options.preview !== undefined) form.append('preview', options.preview);
      };
      const addFile = () => archive !== undefined && form.append('file', new Blob([archive]), 'site.tar.gz');
      if (options.fileFirst) {
        addFile();
        addProject();
      } else {
        addProject();
        addFile();
      }
      const response = await fetch(`${service.url}/api/v1/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      });
      const reply = { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
      // The service adopts a tarball's new objects into the store after it answers: the
      // tests see the tree as the deploy leaves it (release-adoption.test.ts tests the wait itself).
      await adoptionsDone(config.deploysRoot, 20_000);
      return reply;
    },
    trashEmptied,
    async settled() {
      await trashEmptied();
      await service.idle();
      let last = JSON.stringify(await snapshot(config.deploysRoot));
      for (;;) {
        await new Promise((r) => setTimeout(r, 200));
        const now = JSON.stringify(await snapshot(config.deploysRoot));
        if (now === last) return;
        last = now;
      }
    },
    async close() {
      await service.stop(1000);
      await rm(root, { recursive: true, force: true });
    },
  };
}
