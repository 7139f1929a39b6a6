import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient, ServerError } from '../../src/adapters/cli/api-client.js';

/**
 * A server that answers a batch of objects at once with 503, before reading its body, and
 * then reads nothing more on that connection: as a busy server that has refused an upload
 * still has its bytes unread. On any other connection it answers the clean-up's DELETE.
 */
async function refusingServer(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    sockets.push(socket);
    socket.once('data', (head: Buffer) => {
      socket.pause();
      const line = head.toString('latin1').split('\r\n', 1)[0]!;
      const refusal = JSON.stringify({ status: 'error', error: 'too many deploys in progress, retry later' });
      const answer = line.startsWith('PUT ')
        ? `HTTP/1.1 503 Service Unavailable\r\nRetry-After: 10\r\nContent-Type: application/json\r\nContent-Length: ${refusal.length}\r\n\r\n${refusal}`
        : 'HTTP/1.1 204 No Content\r\n\r\n';
      socket.write(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => sockets.length,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('the CLI after an upload the server refused early', () => {
  let closing: (() => Promise<void>) | undefined;
  afterEach(async () => closing?.());

  it('sends the next request on a connection of its own, not behind the refused upload\'s unread bytes', async () => {
    const server = await refusingServer();
    closing = server.close;
    const api = new ApiClient(server.url, 't'.repeat(32));
    // Small enough to be all handed to the kernel, so the request counts as sent.
    await expect(api.uploadObjects('s1', Readable.from([Buffer.alloc(64 * 1024, 1)]))).rejects.toMatchObject({ status: 503, retryAfter: 10 });
    const deleted = api.deleteDeploy('s1');
    const outcome = await Promise.race([deleted.then(() => 'deleted'), new Promise((resolve) => setTimeout(() => resolve('stuck'), 2000))]);
    expect(outcome).toBe('deleted');
    expect(server.connections()).toBe(2);
  });

  it('a refusal carries the server\'s Retry-After, and none when it gave none', () => {
    expect(new ServerError(503, 'busy', {}, 10).retryAfter).toBe(10);
    expect(new ServerError(503, 'busy').retryAfter).toBeUndefined();
  });
});
