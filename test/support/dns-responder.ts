import { createSocket, type Socket } from 'node:dgram';

/**
 * A tiny authoritative DNS server over UDP for tests: it answers TXT questions from the
 * records a test sets (NXDOMAIN for names it has none for), or, `silent`, never answers.
 * Enough of RFC 1035 for c-ares: one question, no compression in what it reads.
 */
export interface DnsResponder {
  /** `127.0.0.1:<port>`, for DNS_SERVERS. */
  readonly address: string;
  readonly txt: Map<string, string[]>;
  /** Names it never answers, as a server that drops some questions. */
  readonly unanswered: Set<string>;
  /** Names asked, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

function readName(packet: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  for (let length = packet[at] ?? 0; length > 0; length = packet[at] ?? 0) {
    labels.push(packet.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  return { name: labels.join('.'), end: at + 1 };
}

function txtData(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length || i === 0; i += 255) {
    const piece = bytes.subarray(i, i + 255);
    chunks.push(Buffer.from([piece.length]), piece);
  }
  return Buffer.concat(chunks);
}

function answer(query: Buffer, records: string[] | undefined): Buffer {
  const { end } = readName(query, 12);
  const question = query.subarray(12, end + 4);
  const type = query.readUInt16BE(end);
  const found = records === undefined ? [] : type === 16 ? records : [];
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  // QR, AA, RD copied; RCODE 3 (NXDOMAIN) when the name is unknown.
  header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | (records === undefined ? 3 : 0), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(found.length, 6);
  const answers = found.map((text) => {
    const data = txtData(text);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // the question's name
    rr.writeUInt16BE(16, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(0, 6);
    rr.writeUInt16BE(data.length, 10);
    return Buffer.concat([rr, data]);
  });
  return Buffer.concat([header, question, ...answers]);
}

export async function startDnsResponder(options: { silent?: boolean } = {}): Promise<DnsResponder> {
  const socket: Socket = createSocket('udp4');
  const txt = new Map<string, string[]>();
  const asked: string[] = [];
  const unanswered = new Set<string>();
  socket.on('message', (query, from) => {
    const { name } = readName(query, 12);
    asked.push(name);
    if (options.silent || unanswered.has(name.toLowerCase())) return;
    socket.send(answer(query, txt.get(name.toLowerCase())), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    txt,
    unanswered,
    asked,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
