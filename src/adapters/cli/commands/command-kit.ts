import type { Command } from 'commander';
import type { ApiClient, Json } from '../api-client.js';
import { out } from '../output.js';
import { UsageError } from '../usage-error.js';

interface Globals {
  server: string;
  token?: string;
}

/** What `--json` asks for: the server's answer as it came; else the lines a person reads. */
export interface JsonOption {
  readonly json?: boolean;
}

export const JSON_HELP = "print the server's response";

/**
 * A client of the server the command names, with its token or the variable's. The HTTP
 * client (and Node's http, https and zlib with it) loads here, when a command runs, not
 * for `--help` or a usage error.
 */
export async function client(command: Command, tokenVariable: 'SITEDROP_TOKEN' | 'SITEDROP_ADMIN_TOKEN'): Promise<ApiClient> {
  const { server, token } = command.optsWithGlobals<Globals>();
  const chosen = token ?? process.env[tokenVariable];
  if (!chosen) throw new UsageError(`no token: pass --token or set ${tokenVariable}`);
  const { ApiClient } = await import('../api-client.js');
  return new ApiClient(server, chosen);
}

export const userClient = (command: Command): Promise<ApiClient> => client(command, 'SITEDROP_TOKEN');
export const adminClient = (command: Command): Promise<ApiClient> => client(command, 'SITEDROP_ADMIN_TOKEN');

/** The one output of every command that answers: the server's JSON with `--json`, else `lines`. */
export function print(options: JsonOption, answer: Json, lines: () => string[]): void {
  if (options.json) out(JSON.stringify(answer));
  else for (const line of lines()) out(line);
}

/** A rollback's or a promotion's line. */
export const liveLine = (project: string, answer: { release: string; previous: string | null }): string =>
  `${project} is live on ${answer.release} (was ${answer.previous ?? '-'})`;
