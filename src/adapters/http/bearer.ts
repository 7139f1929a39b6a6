import type { IncomingMessage } from 'node:http';

/** The token of `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 7235). */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1];
}
