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
      return new ReleaseManifestWalk(request.path, request.store, request.records);
    case 'inodes':
      return new ReleaseInodesWalk(request.path);
    case 'share':
      return new UploadSharing(request.path, request.into, request.objects);
    case 'remove':
      return new TreeRemoval(request.path);
  }
}

type Entry = { readonly id: number; readonly type: WriterTaskRequest['type']; readonly task: WriterTask };
type Lane = 'probes' | 'ordered' | 'walks';
/** Whose turn it is, step by step: probes every other one. */
const TURNS: readonly Lane[] = ['probes', 'ordered', 'probes', 'walks'];

/**
 * The writer's tasks, in three lanes: removals, collections, migrations, adoptions and
 * shares in the order asked, the first one in progress; the walks that derive a
 * release's manifest or its files' inodes; and the probes. A walk's cost grows with the
 * user's store or a project's releases, and any client with a token can ask for walks
 * and probes, so the lanes take turns a step each: a commit's adoption never waits for
 * walks or probes to finish, only for a step of one. A probe is what a client waits on
 * (its answer lists the objects to send) while the writer builds that client's release
 * from its base, so probes have every other turn, a step before each batch of writes too
 * (stepProbe), and take turns among themselves: a small one is not held behind a large one.
 *
 * A probe may so overtake an adoption asked for after its own was settled
 * (node-session-objects.ts), or a collection: it then answers missing an object that is
 * not, or present one about to go, which costs a second upload or a publish's 409, never
 * a wrong release. It does not overtake a store's name migration, whose old names it
 * does not look under.
 */
export class WriterTaskQueue {
  private readonly lanes: Record<Lane, Entry[]> = { probes: [], ordered: [], walks: [] };
  private turn = 0;
  private running = false;

  constructor(private readonly answer: (message: WriterTaskAnswer) => void) {}

  /** A task is in hand or waiting. */
  get busy(): boolean {
    return this.running;
  }

  add(request: WriterTaskRequest): void {
    this.lanes[this.laneOf(request.type)].push({ id: request.id, type: request.type, task: taskFor(request) });
    if (!this.running) {
      this.running = true;
      setImmediate(this.stepOne);
    }
  }

  /** A step of a waiting probe, if there is one: the writer calls this before each batch. */
  stepProbe(): void {
    if (this.lanes.probes.length > 0) this.step(this.lanes.probes);
  }

  private laneOf(type: WriterTaskRequest['type']): Lane {
    if (type === 'manifest' || type === 'inodes') return 'walks';
    if (type === 'probe' && !this.lanes.ordered.some((entry) => entry.type === 'migrate')) return 'probes';
    return 'ordered';
  }

  private readonly stepOne = (): void => {
    const turns = TURNS.map((_, i) => TURNS[(this.turn + i) % TURNS.length]!);
    this.turn = (this.turn + 1) % TURNS.length;
    const lane = turns.map((name) => this.lanes[name]).find((entries) => entries.length > 0);
    if (lane === undefined) {
      this.running = false;
      return;
    }
    this.step(lane);
    // The unpack thread's batches, queued meanwhile, are handled before the next step.
    setImmediate(this.stepOne);
  };

  /** A step of the lane's first task; a probe not done yet goes to the back of its lane. */
  private step(lane: Entry[]): void {
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
    } else if (lane === this.lanes.probes) lane.push(lane.shift()!);
  }
}
