import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { BadMultipart, type HttpError } from './http-errors.js';
import { watchUpload, type UploadLimits, type UploadSlot } from './upload-body.js';

/**
 * The deploy's multipart body, read as it streams. A failed form reports itself through
 * `failure()`, which outranks whatever the failure then caused downstream; `archive`
 * never rejects (a failed form settles it empty), and the fields not yet known reject
 * with the failure: a form cut short before its `preview` must not read as a live deploy.
 */
export interface DeployForm {
  /** The `project` field, or undefined once the form ends without one. */
  readonly project: Promise<string | undefined>;
  /** The optional `preview` field, or undefined once the form ends without one. */
  readonly preview: Promise<string | undefined>;
  /** The `file` part as it streams in, or undefined once the form ends without one. */
  readonly archive: Promise<Readable | undefined>;
  failure(): HttpError | undefined;
}

const FORM_LIMITS = { fields: 16, fieldSize: 1024, files: 4, parts: 32, headerPairs: 64 };

export function readDeployForm(req: IncomingMessage, limits: UploadLimits, slot: UploadSlot): DeployForm {
  let settleProject!: (value: string | undefined) => void;
  let settleArchive!: (value: Readable | undefined) => void;
  let settlePreview!: (value: string | undefined) => void;
  const refusals: ((error: HttpError) => void)[] = [];
  const field = (settle: (resolve: (value: string | undefined) => void) => void): Promise<string | undefined> => {
    const value = new Promise<string | undefined>((resolve, reject) => {
      settle(resolve);
      refusals.push(reject);
    });
    // A deploy refused before it asks for a field never hears of its rejection.
    value.catch(() => undefined);
    return value;
  };
  const project = field((resolve) => (settleProject = resolve));
  const preview = field((resolve) => (settlePreview = resolve));
  const archive = new Promise<Readable | undefined>((resolve) => (settleArchive = resolve));
  let failed: HttpError | undefined;
  let file: Readable | undefined;

  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: FORM_LIMITS });
  } catch {
    // Not multipart at all (or no boundary).
    failed = new BadMultipart();
    settleProject(undefined);
    settlePreview(undefined);
    settleArchive(undefined);
    return { project, preview, archive, failure: () => failed };
  }

  const fail = (error: HttpError): void => {
    if (failed) return;
    failed = error;
    watch.stop();
    req.unpipe(parser);
    file?.destroy(error);
    for (const refuse of refusals) refuse(error);
    settleArchive(undefined);
  };
  // Its events come later: `fail` never runs before `watch` is set.
  const watch = watchUpload(req, limits, slot, fail);
  parser.on('field', (name, value, info) => {
    // A truncated value cannot be a valid name; keep it invalid rather than shortened.
    const named = info.valueTruncated ? `${value}\u0000` : value;
    if (name === 'project') settleProject(named);
    if (name === 'preview') settlePreview(named);
  });
  parser.on('file', (name, stream) => {
    // busboy errors a part itself when the form breaks; an unheard 'error' would crash the process.
    stream.on('error', () => fail(new BadMultipart()));
    if (name !== 'file' || file) {
      stream.resume();
      return;
    }
    file = stream;
    settleArchive(stream);
    // Once the archive and the fields the deploy waits for are in (a `project` may follow
    // the file), the slot is the unpacking's. Not sooner, or a client could send the
    // archive and then drip a field, its slot beyond taking back.
    const ended = new Promise((resolve) => stream.once('end', resolve));
    Promise.all([ended, project, preview]).then(() => watch.delivered(), () => undefined);
  });
  parser.on('close', () => {
    settleProject(undefined);
    settlePreview(undefined);
    settleArchive(undefined);
  });
  parser.on('error', () => fail(new BadMultipart()));
  // Past a count busboy drops the rest silently: a file part hidden behind 32 decoys
  // would read as "missing", so a form over any of the counts is refused as malformed.
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) parser.on(limit, () => fail(new BadMultipart()));
  req.pipe(parser);
  return { project, preview, archive, failure: () => failed };
}
