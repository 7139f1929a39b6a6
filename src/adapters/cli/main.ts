#!/usr/bin/env node
/**
 * `sitedrop`: deploy a folder or a .tar.gz in one command, see releases, roll back, and
 * administer users. A driving adapter like the HTTP one, except that it speaks HTTP to
 * the server rather than calling use cases: it works against any sitedrop anywhere.
 * Exit codes: 0 success, 1 the server refused (its message printed), 2 a usage error,
 * 130 interrupted (Ctrl-C) during a deploy.
 */
import { Command, CommanderError } from 'commander';
import { adminCommand } from './commands/admin.js';
import { deleteProjectCommand } from './commands/delete-project.js';
import { deployCommand } from './commands/deploy.js';
import { domainsCommand } from './commands/domains.js';
import { keysCommand } from './commands/keys.js';
import { previewsCommands } from './commands/previews.js';
import { projectsCommand } from './commands/projects.js';
import { releasesCommand } from './commands/releases.js';
import { rollbackCommand } from './commands/rollback.js';
import { err } from './output.js';
import { UsageError } from './usage-error.js';

/** The commands, in the order `--help` lists them: each module adds its own. */
const COMMANDS = [deployCommand, projectsCommand, releasesCommand, rollbackCommand, previewsCommands, deleteProjectCommand, keysCommand, domainsCommand, adminCommand];

export function program(): Command {
  const cli = new Command('sitedrop')
    .description('Publish static sites to a sitedrop server.')
    .option('--server <url>', 'the sitedrop server (or SITEDROP_URL)', process.env.SITEDROP_URL ?? 'http://localhost:8080')
    .option('--token <token>', 'your token, or a deploy key to deploy (or SITEDROP_TOKEN; for admin commands SITEDROP_ADMIN_TOKEN)')
    .exitOverride()
    .showHelpAfterError();
  for (const add of COMMANDS) add(cli);
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
    // Loaded already by the command that threw one; imported here, they stay out of --help's load.
    // The server's refusals first: any command's, they need not load the deploy path.
    const { ServerError } = await import('./api-client.js');
    if (error instanceof ServerError) {
      err(`sitedrop: ${error.message}`);
      return 1;
    }
    const { Interrupted } = await import('./deploy-command.js');
    if (error instanceof Interrupted) {
      err('sitedrop: interrupted; nothing was published');
      return 130;
    }
    err(`sitedrop: ${(error as Error).message}`);
    return 1;
  }
}

process.exitCode = await run(process.argv);
