import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that went through the proxy, with the body the client sent. */
export interface Exchange {
  readonly method: string;
  readonly path: string;
  body: Buffer;
  status?: number;
}

/**
 * Decides what happens to a request before it is forwarded: 'forward' (after whatever the
 * test does to the real server first), or 'answered' (the hook answered, or holds it).
 */
export type Hook = (req: IncomingMessage, res: ServerResponse) => Promise<'forward' | 'answered'> | 'forward' | 'answered';

export interface ForwardingProxy {
  readonly url: string;
  readonly seen: Exchange[];
  hook: Hook;
  close(): Promise<void>;
}

/**
 * A real HTTP server in front of the real service: it passes every request on untouched,
 * records what the client sent, and lets a test act between two of the client's requests
 * (or stand in for an older server) without a line of test code in the client or the service.
 */
export async function startForwardingProxy(upstream: string): Promise<ForwardingProxy> {
  const seen: Exchange[] = [];
  const proxy: ForwardingProxy = { url: '', seen, hook: () => 'forward', close: async () => undefined };
  const server = createServer((req, res) => {
    const exchange: Exchange = { method: req.method ?? '', path: req.url ?? '', body: Buffer.alloc(0) };
    seen.push(exchange);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => (exchange.body = Buffer.concat(chunks)));
    req.pause();
    void Promise.resolve(proxy.hook(req, res)).then((decision) => {
      if (decision === 'answered') return req.resume();
      // Each on a connection of its own: a refused upload's unread bytes must not sit in front of the next request.
      const onward = request(new URL(exchange.path, upstream), { method: exchange.method, headers: req.headers, agent: false });
      onward.on('response', (answer) => {
        exchange.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      onward.on('error', () => res.destroy());
      req.pipe(onward);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  });
}
