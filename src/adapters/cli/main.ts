#!/usr/bin/env node
/**
 * `sitedrop`: deploy a folder or a .tar.gz in one command, see releases, roll back, and
 * administer users. A driving adapter like the HTTP one, except that it speaks HTTP to
 * the server rather than calling use cases: it works against any sitedrop anywhere.
 * Exit codes: 0 success, 1 the server refused (its message printed), 2 a usage error,
 * 130 interrupted (Ctrl-C) during a deploy.
 */
import { Command, CommanderError } from 'commander';
import { ApiClient, ServerError, type Json } from './api-client.js';
import { deploy, Interrupted, type DeployOptions } from './deploy-command.js';
import { domainsCommand } from './domains-command.js';
import { isHashThread } from './hash-threads.js';
import { err, megabytes, out } from './output.js';
import { UsageError } from './usage-error.js';

interface Globals {
  server: string;
  token?: string;
}

function client(command: Command, tokenVariable: 'SITEDROP_TOKEN' | 'SITEDROP_ADMIN_TOKEN'): ApiClient {
  const { server, token } = command.optsWithGlobals<Globals>();
  const chosen = token ?? process.env[tokenVariable];
  if (!chosen) throw new UsageError(`no token: pass --token or set ${tokenVariable}`);
  return new ApiClient(server, chosen);
}

function print(json: boolean | undefined, result: Json, lines: () => string[]): void {
  if (json) out(JSON.stringify(result));
  else for (const line of lines()) out(line);
}

export function program(): Command {
  const cli = new Command('sitedrop')
    .description('Publish static sites to a sitedrop server.')
    .option('--server <url>', 'the sitedrop server (or SITEDROP_URL)', process.env.SITEDROP_URL ?? 'http://localhost:8080')
    .option('--token <token>', 'your token, or a deploy key to deploy (or SITEDROP_TOKEN; for admin commands SITEDROP_ADMIN_TOKEN)')
    .exitOverride()
    .showHelpAfterError();

  cli
    .command('deploy <folder-or-tarball>')
    .description('deploy a folder (its contents become the site root; only files the server lacks are sent) or a .tar.gz')
    .requiredOption('--project <name>', 'the project to deploy to')
    .option('--preview <name>', 'deploy a preview of this name (e.g. pr-42) at its own address; the live site does not change')
    .option('--full', 'send the whole folder as one archive, even to a server that could take only what changed')
    .addHelpText('after', '\nA folder\'s manifest goes relative to the last release deployed from this machine, kept in SITEDROP_CACHE_DIR\n(default $XDG_CACHE_HOME/sitedrop or ~/.cache/sitedrop); keep that directory between CI runs to send less.')
    .option('--json', "print the server's response, with what was sent and skipped")
    .action((path: string, options: DeployOptions, command: Command) => deploy(client(command, 'SITEDROP_TOKEN'), path, options));

  cli
    .command('projects')
    .description('list your projects')
    .option('--json', "print the server's response")
    .action(async (options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('GET', '/api/v1/projects');
      print(options.json, result, () =>
        (result.projects as Json[]).map((p) => `${String(p.name)}  live ${String(p.live ?? '-')}  ${String(p.releases)} releases  ${String(p.url)}`),
      );
    });

  cli
    .command('releases <project>')
    .description("list a project's releases, newest first")
    .option('--json', "print the server's response")
    .action(async (project: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('GET', `/api/v1/projects/${encodeURIComponent(project)}/releases`);
      print(options.json, result, () =>
        (result.releases as Json[]).map(
          (r) =>
            `${String(r.id)}${r.live ? '  live' : '      '}  ${r.files === null ? '-' : `${String(r.files)} files`}  ${r.bytes === null ? '-' : megabytes(Number(r.bytes))}` +
            (r.preview === undefined ? '' : `  preview ${String(r.preview)}`),
        ),
      );
    });

  cli
    .command('rollback <project> [release]')
    .description('make an older release live (default: the one before the live one)')
    .option('--json', "print the server's response")
    .action(async (project: string, release: string | undefined, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('POST', `/api/v1/projects/${encodeURIComponent(project)}/rollback`, release ? { release } : undefined);
      print(options.json, result, () => [`${project} is live on ${String(result.release)} (was ${String(result.previous ?? '-')})`]);
    });

  cli
    .command('previews <project>')
    .description("list a project's previews")
    .option('--json', "print the server's response")
    .action(async (project: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('GET', `/api/v1/projects/${encodeURIComponent(project)}/previews`);
      print(options.json, result, () =>
        (result.previews as Json[]).map((p) => `${String(p.name)}  ${String(p.release)}  expires ${String(p.expiresAt)}  ${String(p.url)}`),
      );
    });

  cli
    .command('promote <project> <preview>')
    .description("make a preview's release live")
    .option('--json', "print the server's response")
    .action(async (project: string, preview: string, options: { json?: boolean }, command: Command) => {
      const path = `/api/v1/projects/${encodeURIComponent(project)}/previews/${encodeURIComponent(preview)}/promote`;
      const result = await client(command, 'SITEDROP_TOKEN').call('POST', path);
      print(options.json, result, () => [`${project} is live on ${String(result.release)} (was ${String(result.previous ?? '-')})`]);
    });

  cli
    .command('delete-preview <project> <preview>')
    .description('remove a preview; its release is then pruned like any other')
    .action(async (project: string, preview: string, _options: unknown, command: Command) => {
      await client(command, 'SITEDROP_TOKEN').call('DELETE', `/api/v1/projects/${encodeURIComponent(project)}/previews/${encodeURIComponent(preview)}`);
      out(`deleted preview ${preview} of ${project}`);
    });

  cli
    .command('delete-project <project>')
    .description('remove a project: its live site and all its releases')
    .action(async (project: string, _options: unknown, command: Command) => {
      await client(command, 'SITEDROP_TOKEN').call('DELETE', `/api/v1/projects/${encodeURIComponent(project)}`);
      out(`deleted ${project}`);
    });

  const keys = cli.command('keys').description("a project's deploy keys: CI secrets that deploy it and nothing else");
  keys
    .command('create <project>')
    .description("make a deploy key and print its token (shown this once; use it as a pipeline's SITEDROP_TOKEN)")
    .requiredOption('--name <name>', 'what the key is for, e.g. "GitHub Actions"')
    .requiredOption('--scope <scope>', "'deploy' (live deploys and previews) or 'preview' (previews only)")
    .option('--expires-in-days <days>', 'days until the key stops working (default: never)')
    .option('--json', "print the server's response")
    .action(async (project: string, options: { name: string; scope: string; expiresInDays?: string; json?: boolean }, command: Command) => {
      const days = options.expiresInDays === undefined ? undefined : Number(options.expiresInDays);
      if (days !== undefined && !Number.isInteger(days)) throw new UsageError(`--expires-in-days must be a whole number, not ${options.expiresInDays}`);
      const body = { name: options.name, scope: options.scope, ...(days === undefined ? {} : { expiresInDays: days }) };
      const result = await client(command, 'SITEDROP_TOKEN').call('POST', `/api/v1/projects/${encodeURIComponent(project)}/keys`, body);
      if (options.json) out(JSON.stringify(result));
      else {
        out(String(result.token));
        err(`key ${String(result.id)} can deploy ${project} (${options.scope}); its token is shown this once`);
      }
    });
  keys
    .command('list <project>')
    .description("list a project's deploy keys (never their tokens)")
    .option('--json', "print the server's response")
    .action(async (project: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('GET', `/api/v1/projects/${encodeURIComponent(project)}/keys`);
      print(options.json, result, () =>
        (result.keys as Json[]).map(
          (k) => `${String(k.id)}  ${String(k.scope).padEnd(7)}  expires ${String(k.expiresAt ?? 'never')}  last used ${String(k.lastUsedAt ?? 'never')}  ${String(k.name)}`,
        ),
      );
    });
  keys
    .command('revoke <project> <id>')
    .description('revoke a deploy key at once')
    .action(async (project: string, id: string, _options: unknown, command: Command) => {
      await client(command, 'SITEDROP_TOKEN').call('DELETE', `/api/v1/projects/${encodeURIComponent(project)}/keys/${encodeURIComponent(id)}`);
      out(`revoked ${id}`);
    });

  domainsCommand(cli, client);

  const admin = cli.command('admin').description('administer users (admin token)');
  admin
    .command('create-user <name>')
    .description("create a user and print its token (shown this once)")
    .action(async (name: string, _options: unknown, command: Command) => {
      out(String((await client(command, 'SITEDROP_ADMIN_TOKEN').call('POST', '/api/v1/auth', { username: name })).token));
    });
  admin
    .command('reroll <name>')
    .description('issue a new token for a user; the old one stops working')
    .action(async (name: string, _options: unknown, command: Command) => {
      out(String((await client(command, 'SITEDROP_ADMIN_TOKEN').call('POST', '/api/v1/auth', { username: name })).token));
    });
  admin
    .command('delete-user <name>')
    .description('delete a user (its sites stay unless --delete-files)')
    .option('--delete-files', "also remove the user's live sites and releases")
    .action(async (name: string, options: { deleteFiles?: boolean }, command: Command) => {
      await client(command, 'SITEDROP_ADMIN_TOKEN').call('DELETE', '/api/v1/auth', { username: name, files: options.deleteFiles ? 'delete' : 'persist' });
      out(`deleted ${name}${options.deleteFiles ? ' and its files' : ' (its files are kept)'}`);
    });
  admin
    .command('users')
    .description('list users and their project counts')
    .option('--json', "print the server's response")
    .action(async (options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_ADMIN_TOKEN').call('GET', '/api/v1/users');
      print(options.json, result, () => (result.users as Json[]).map((u) => `${String(u.username)}  ${String(u.projects)} projects`));
    });
  return cli;
}

async function run(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.help' || error.code === 'commander.version' ? 0 : 2;
    }
    if (error instanceof UsageError) {
      err(`sitedrop: ${error.message}`);
      return 2;
    }
    if (error instanceof Interrupted) {
      err('sitedrop: interrupted; nothing was published');
      return 130;
    }
    if (error instanceof ServerError) {
      err(`sitedrop: ${error.message}`);
      return 1;
    }
    err(`sitedrop: ${(error as Error).message}`);
    return 1;
  }
}

// The one-file bundle is also the script of its hash threads (hash-threads.ts), which must not run the CLI.
if (!isHashThread) process.exitCode = await run(process.argv);
