import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readDeployForm } from '../../src/adapters/http/deploy-form.js';
import { ClientGone, TurnTaken } from '../../src/adapters/http/http-errors.js';
import { multipart } from '../support/raw-http.js';

/** A request as the form reads it: a stream with the headers and flags watchUpload looks at. */
function request(): IncomingMessage & PassThrough {
  return Object.assign(new PassThrough(), { headers: { 'content-type': 'multipart/form-data; boundary=FormB0undary' }, complete: false }) as unknown as IncomingMessage & PassThrough;
}

const LIMITS = { maxBytes: 1024 * 1024, idleSeconds: 0, stallSeconds: 0 };

async function drained(archive: Readable): Promise<void> {
  for await (const chunk of archive) void chunk;
}

describe('readDeployForm and its deploy slot', () => {
  const body = multipart('FormB0undary', [{ name: 'project', body: 'site' }, { name: 'file', filename: 'site.tgz', body: Buffer.alloc(4096, 7) }]);

  it('a slot taken back while the archive is still coming fails the form with the reason it was taken back', async () => {
    const req = request();
    const revocation = new AbortController();
    const form = readDeployForm(req, LIMITS, { quiet: () => undefined, revoked: revocation.signal, keep: () => undefined });
    req.write(body.subarray(0, 300));
    expect(await form.project).toBe('site');
    const archive = (await form.archive)!;
    revocation.abort(new TurnTaken(2, 2, 60));
    await expect(drained(archive)).rejects.toBeInstanceOf(TurnTaken);
    expect(form.failure()).toBeInstanceOf(TurnTaken);
  });

  it('once the archive and the fields are in, a slot taken back changes nothing: the deploy goes on and answers for itself', async () => {
    const req = request();
    const revocation = new AbortController();
    const quiet: boolean[] = [];
    let kept = false;
    const form = readDeployForm(req, LIMITS, { quiet: (q) => quiet.push(q), revoked: revocation.signal, keep: () => (kept = true) });
    const preview = multipart('FormB0undary', [{ name: 'project', body: 'site' }, { name: 'preview', body: 'pr-1' }, { name: 'file', filename: 'site.tgz', body: Buffer.alloc(4096, 7) }]);
    // All but the closing delimiter's last bytes: the file part has ended, the request has not.
    req.write(preview.subarray(0, preview.length - 4));
    await drained((await form.archive)!);
    await new Promise((resolve) => setImmediate(resolve));
    revocation.abort(new TurnTaken(2, 2, 60));
    await new Promise((resolve) => setImmediate(resolve));
    expect(form.failure()).toBeUndefined();
    expect(quiet.at(-1)).toBe(false);
    expect(kept).toBe(true);
    req.end(preview.subarray(preview.length - 4));
  });

  it('the archive in but a field still to come (a project after the file): a slot taken back still fails the form', async () => {
    const req = request();
    const revocation = new AbortController();
    const form = readDeployForm(req, LIMITS, { quiet: () => undefined, revoked: revocation.signal, keep: () => undefined });
    const fileFirst = multipart('FormB0undary', [{ name: 'file', filename: 'site.tgz', body: Buffer.alloc(4096, 7) }, { name: 'project', body: 'site-dripped-slowly' }]);
    // Up to the middle of the project's value: the file part has ended, the field has not.
    req.write(fileFirst.subarray(0, fileFirst.length - 30));
    await drained((await form.archive)!);
    await new Promise((resolve) => setImmediate(resolve));
    revocation.abort(new TurnTaken(2, 2, 60));
    expect(form.failure()).toBeInstanceOf(TurnTaken);
    await expect(form.project).rejects.toBeInstanceOf(TurnTaken);
  });

  it('a form cut short before a field the deploy waits for rejects that field: a preview cut mid-name is not a live deploy', async () => {
    const req = request();
    const form = readDeployForm(req, LIMITS, { quiet: () => undefined, revoked: new AbortController().signal, keep: () => undefined });
    const previewLast = multipart('FormB0undary', [{ name: 'project', body: 'site' }, { name: 'file', filename: 'site.tgz', body: Buffer.alloc(4096, 7) }, { name: 'preview', body: 'pr-42' }]);
    req.write(previewLast.subarray(0, previewLast.length - 25));
    expect(await form.project).toBe('site');
    await drained((await form.archive)!);
    // The client hangs up before the preview's name is through.
    req.destroy();
    await expect(form.preview).rejects.toBeInstanceOf(ClientGone);
    expect(form.failure()).toBeInstanceOf(ClientGone);
  });
});
