import type { Command } from 'commander';
import { err, out } from '../output.js';
import { UsageError } from '../usage-error.js';
import { JSON_HELP, print, userClient, type JsonOption } from './command-kit.js';

interface CreateOptions extends JsonOption {
  readonly name: string;
  readonly scope: string;
  readonly expiresInDays?: string;
}

function expiry(options: CreateOptions): { expiresInDays?: number } {
  if (options.expiresInDays === undefined) return {};
  const days = Number(options.expiresInDays);
  if (!Number.isInteger(days)) throw new UsageError(`--expires-in-days must be a whole number, not ${options.expiresInDays}`);
  return { expiresInDays: days };
}

export function keysCommand(cli: Command): void {
  const keys = cli.command('keys').description("a project's deploy keys: CI secrets that deploy it and nothing else");
  keys
    .command('create <project>')
    .description("make a deploy key and print its token (shown this once; use it as a pipeline's SITEDROP_TOKEN)")
    .requiredOption('--name <name>', 'what the key is for, e.g. "GitHub Actions"')
    .requiredOption('--scope <scope>', "'deploy' (live deploys and previews) or 'preview' (previews only)")
    .option('--expires-in-days <days>', 'days until the key stops working (default: never)')
    .option('--json', JSON_HELP)
    .action(async (project: string, options: CreateOptions, command: Command) => {
      const answer = await (await userClient(command)).createKey(project, { name: options.name, scope: options.scope, ...expiry(options) });
      print(options, answer, () => [answer.token]);
      // Beside the token, not in it: stdout stays the token alone, for a pipe into a CI secret.
      if (!options.json) err(`key ${answer.id} can deploy ${project} (${options.scope}); its token is shown this once`);
    });
  keys
    .command('list <project>')
    .description("list a project's deploy keys (never their tokens)")
    .option('--json', JSON_HELP)
    .action(async (project: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).keys(project);
      print(options, answer, () =>
        answer.keys.map((k) => `${k.id}  ${k.scope.padEnd(7)}  expires ${k.expiresAt ?? 'never'}  last used ${k.lastUsedAt ?? 'never'}  ${k.name}`),
      );
    });
  keys
    .command('revoke <project> <id>')
    .description('revoke a deploy key at once')
    .action(async (project: string, id: string, _options: unknown, command: Command) => {
      await (await userClient(command)).revokeKey(project, id);
      out(`revoked ${id}`);
    });
}
