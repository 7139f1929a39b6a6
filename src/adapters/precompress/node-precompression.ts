import { fork, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { Precompression } from '../../application/ports/precompression.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';
import { DeploysTree } from '../fs/layout/deploys-tree.js';
import { script } from '../fs/threads/fs-threads.js';
import { PREVIEW_ROOTS, type PreviewRoots } from '../fs/publish/node-preview-links.js';
import { LOGGER, type Logger } from '../log/logger.js';
import { DeployActivity } from './deploy-activity.js';
import type { SiblingAnswer, SiblingJob } from './precompress-protocol.js';
import { isServed, servedReleases } from './served-releases.js';
import { SIBLING_SETTINGS } from './sibling-settings.js';

const PAUSE_FILE = '.pause';

/** How long the compressing process outlives its last release: it goes when there is nothing to do. */
const IDLE_MS = 1000;
/** How long no deploy must have run before siblings are made: deploys come in bursts. */
const QUIET_MS = 500;
/** How long a release gives way at most: under a steady stream of deploys its siblings still come within a minute. */
const PATIENCE_MS = 15_000;

interface Queued {
  /** When it was queued, for its patience. */
  readonly since: number;
  readonly user: Username;
  readonly project: ProjectName;
  readonly release: ReleaseId;
}

/**
 * Releases' compressed siblings (release-siblings.ts), made on one thread of their own,
 * one release at a time in the order queued, after the deploy that queued them has gone
 * on: nothing here is awaited by a deploy, and a failure is logged, never thrown. The
 * thread starts with the first release and ends once idle. Each release gets a scratch
 * directory as a staging area does (deploys-tree.ts), so a crash's leftovers go at start-up.
 * It gives way to deploys: it starts only once none has run for QUIET_MS, and a deploy
 * that starts makes the run wait where it is (a pause file it looks for between files,
 * precompress-process.ts) until none has run for QUIET_MS again, so nothing it did is
 * done twice; for PATIENCE_MS at most a release. (Not SIGSTOP: a stopped process outlives
 * a service killed meanwhile, while a waiting one sees its parent go and ends.) A release
 * no longer served when its turn comes is skipped.
 */
@injectable()
export class NodePrecompression implements Precompression {
  private readonly waiting: Queued[] = [];
  private readonly keys = new Set<string>();
  private draining: Promise<void> | undefined;
  private worker: ChildProcess | undefined;
  private answer: ((answer: SiblingAnswer) => void) | undefined;
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The release being made now, and its job's pause file. */
  private current: { readonly queued: Queued; readonly pauseFile: string } | undefined;
  /** Set while the run waits for a deploy. */
  private paused = false;
  /** Times the release under way gave way, for the log. */
  private pauses = 0;

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(PREVIEW_ROOTS) private readonly previewRoots: PreviewRoots,
    @inject(LOGGER) private readonly logger: Logger,
    @inject(DeployActivity) private readonly activity: DeployActivity,
  ) {
    activity.onBusy(() => this.giveWay());
  }

  queue(user: Username, project: ProjectName, release: ReleaseId): void {
    const key = `${user}/${project}/${release}`;
    if (this.closed || this.keys.has(key)) return;
    this.keys.add(key);
    clearTimeout(this.idleTimer);
    this.waiting.push({ since: Date.now(), user, project, release });
    // Begun on a later turn of the event loop: the caller (a publish, under its lock) goes on first.
    this.draining ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
  }

  /** Queues every release served now (a start-up's: those published before siblings were made get them). */
  async queueServed(): Promise<number> {
    const served = await servedReleases(this.tree.roots.docsRoot, this.previewRoots.previewsRoot);
    for (const { user, project, release } of served) this.queue(user, project, release);
    return served.length;
  }

  idle(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /** Stops: what is queued is dropped, the release under way is cut (its scratch thrown away; start-up finishes live ones). */
  async close(): Promise<void> {
    this.closed = true;
    this.waiting.length = 0;
    clearTimeout(this.idleTimer);
    if (this.worker) await stop(this.worker);
    await this.draining;
  }

  private async drain(): Promise<void> {
    clearTimeout(this.idleTimer);
    for (let next = this.waiting.shift(); next !== undefined && !this.closed; next = this.waiting.shift()) {
      await this.activity.quiet(QUIET_MS, next.since + PATIENCE_MS - Date.now());
      if (this.closed) break;
      this.keys.delete(`${next.user}/${next.project}/${next.release}`);
      if (!(await this.served(next))) {
        this.logger.info('precompression skipped: release no longer served', { user: next.user, project: next.project, release: next.release });
        continue;
      }
      this.pauses = 0;
      const failed = await this.precompress(next).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      this.current = undefined;
      if (failed && !this.closed) this.logger.warn('precompression failed', { user: next.user, project: next.project, release: next.release, error: failed.message });
    }
    this.draining = undefined;
    this.idleTimer = setTimeout(() => void (this.worker && stop(this.worker)), IDLE_MS);
    this.idleTimer.unref();
  }

  /** A deploy started: the release under way stops where it is until deploys are quiet again, within its patience. */
  private giveWay(): void {
    const current = this.current;
    if (current === undefined || this.paused) return;
    const patience = current.queued.since + PATIENCE_MS - Date.now();
    if (patience <= 0) return;
    this.paused = true;
    this.pauses += 1;
    // Synchronous: the deploy that called this begins only once the run has been told.
    try {
      writeFileSync(current.pauseFile, '');
    } catch (error) {
      // Background work never fails a deploy: the run goes on beside it.
      this.logger.warn('precompression could not give way', { error: (error as Error).message });
    }
    void this.activity.quiet(QUIET_MS, patience).then(() => {
      this.paused = false;
      try {
        rmSync(current.pauseFile, { force: true });
      } catch (error) {
        // Left there, it holds the run until the process's own bound (precompress-process.ts).
        this.logger.warn('precompression could not go on after a deploy', { error: (error as Error).message });
      }
    });
  }

  /** A release replaced while it waited is skipped: most are never served again, and the next deploy's siblings come sooner. */
  private served(next: Queued): Promise<boolean> {
    return isServed(this.tree.roots.docsRoot, this.previewRoots.previewsRoot, next).catch(() => true);
  }

  private async precompress({ since, user, project, release }: Queued): Promise<void> {
    const started = performance.now();
    const scratch = await this.tree.openStagingArea();
    let answer: SiblingAnswer;
    try {
      const job: SiblingJob = {
        id: this.nextId++,
        release: join(this.tree.projectDir(user, project), release),
        store: this.tree.objectsDir(user),
        scratch: scratch.dir,
        // In the scratch, thrown away with it (its other names are numbers).
        pauseFile: join(scratch.dir, PAUSE_FILE),
        settings: SIBLING_SETTINGS,
      };
      this.current = { queued: { since, user, project, release }, pauseFile: job.pauseFile };
      // A deploy that began since the quiet (while the release was checked and its scratch made) was not told.
      if (this.activity.busy) this.giveWay();
      answer = await this.ask(job);
    } finally {
      this.current = undefined;
      this.paused = false;
      await this.tree.throwAwayStagingArea(scratch.dir);
    }
    if ('error' in answer) throw new Error(answer.error);
    this.logger.info('precompressed', { user, project, release, ...answer.tally, pauses: this.pauses, cpuMs: answer.cpuMs, ms: Math.round(performance.now() - started) });
  }

  private ask(job: SiblingJob): Promise<SiblingAnswer> {
    const worker = this.running();
    return new Promise((resolve, reject) => {
      const stopped = (code: number) => reject(new Error(`the precompression thread stopped (exit code ${code})`));
      worker.once('exit', stopped);
      worker.once('error', reject);
      this.answer = (answer) => {
        worker.off('exit', stopped);
        worker.off('error', reject);
        resolve(answer);
      };
      worker.send(job);
    });
  }

  private running(): ChildProcess {
    if (this.worker) return this.worker;
    // Its heap holds one file's bytes at a time; the buffers live outside it.
    // A process of its own: what compressing allocates is handed back whole when it ends, never
    // left in the service's heap for the next deploy's peak to stack on (docs/performance.md).
    const worker = fork(script('../../precompress/precompress-process'), [], {
      execArgv: ['--max-old-space-size=32', '--max-semi-space-size=1'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    worker.on('message', (answer: SiblingAnswer) => this.answer?.(answer));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
    return worker;
  }
}

/** Ends the compressing process; resolves once it has gone. */
function stop(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.kill('SIGKILL');
  return gone;
}
