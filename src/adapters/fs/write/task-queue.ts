import type { WriterTaskAnswer, WriterTaskRequest } from '../threads/fs-protocol.js';
import { ReleaseInodesWalk } from './release-inodes.js';
import { ReleaseManifestWalk } from './release-manifest.js';
import { ObjectProbe, UploadSharing } from './object-probe.js';
import { ObjectNameMigration } from './store-migration.js';
import { ObjectAdoption, ObjectCollection, ReleaseAdoption } from './store-objects.js';
import { TreeRemoval } from './tree-removal.js';
import type { WriterTask } from './writer-task.js';

function taskFor(request: WriterTaskRequest): WriterTask {
  switch (request.type) {
    case 'adopt':
      return new ObjectAdoption(request.path, request.into);
    case 'adopt-release':
      return new ReleaseAdoption(request.path, request.into, request.objects);
    case 'probe':
      return new ObjectProbe(request.path, request.uploads, request.objects, request.within);
    case 'collect':
      return new ObjectCollection(request.path);
    case 'migrate':
      return new ObjectNameMigration(request.path);
    case 'manifest':
      return new ReleaseManifestWalk(request.path, request.store);
    case 'inodes':
      return new ReleaseInodesWalk(request.path);
    case 'share':
      return new UploadSharing(request.path, request.into, request.objects);
    case 'remove':
      return new TreeRemoval(request.path);
  }
}

/**
 * The writer's tasks: removals, collections, adoptions and shares in the order asked, the
 * first one in progress; in a lane of their own, the walks that derive a release's
 * manifest or its files' inodes; and, ahead of both, the probes. A walk's cost grows with
 * the user's store or a project's releases, and any client with a token can ask for one,
 * so the walks and the ordered lane take turns, a step each: a commit's adoption never
 * waits for walks to finish, only for one step of one. A probe is what a client waits on
 * (its answer lists the objects to send) while the writer builds that client's release
 * from its base: it goes first, and a step of it goes before each batch of writes too
 * (stepProbe), not after the batches in flight. It only looks, and the adoptions it
 * must not overtake are settled before it is asked (node-session-objects.ts).
 */
export class WriterTaskQueue {
  private readonly probes: { id: number; task: WriterTask }[] = [];
  private readonly queued: { id: number; task: WriterTask }[] = [];
  private readonly walks: { id: number; task: WriterTask }[] = [];
  private walkTurn = false;
  private running = false;

  constructor(private readonly answer: (message: WriterTaskAnswer) => void) {}

  /** A task is in hand or waiting. */
  get busy(): boolean {
    return this.running;
  }

  add(request: WriterTaskRequest): void {
    const lane = request.type === 'probe' ? this.probes : request.type === 'manifest' || request.type === 'inodes' ? this.walks : this.queued;
    lane.push({ id: request.id, task: taskFor(request) });
    if (!this.running) {
      this.running = true;
      setImmediate(this.stepOne);
    }
  }

  /** One step of the first probe waiting, if there is one: the writer calls this before each batch. */
  stepProbe(): void {
    if (this.probes.length > 0) this.step(this.probes);
  }

  private readonly stepOne = (): void => {
    this.walkTurn = !this.walkTurn;
    const lane =
      this.probes.length > 0 ? this.probes : (this.walkTurn && this.walks.length > 0) || this.queued.length === 0 ? this.walks : this.queued;
    if (lane.length === 0) {
      this.running = false;
      return;
    }
    this.step(lane);
    // The unpack thread's batches, queued meanwhile, are handled before the next step.
    setImmediate(this.stepOne);
  };

  private step(lane: { id: number; task: WriterTask }[]): void {
    const current = lane[0]!;
    let answer: WriterTaskAnswer | undefined;
    try {
      const { task } = current;
      if (task.step(task.budget)) answer = { type: 'answer', id: current.id, result: task.result() };
    } catch (error) {
      answer = { type: 'answer', id: current.id, error: (error as Error).message };
    }
    if (answer) {
      lane.shift();
      this.answer(answer);
    }
  }
}
