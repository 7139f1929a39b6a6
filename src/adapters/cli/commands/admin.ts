import type { Command } from 'commander';
import { out } from '../output.js';
import { adminClient, JSON_HELP, print, type JsonOption } from './command-kit.js';

/** create-user and reroll are one call: the server creates the user or rerolls its token. */
async function issueToken(name: string, _options: unknown, command: Command): Promise<void> {
  out((await (await adminClient(command)).issueToken(name)).token);
}

export function adminCommand(cli: Command): void {
  const admin = cli.command('admin').description('administer users (admin token)');
  admin.command('create-user <name>').description('create a user and print its token (shown this once)').action(issueToken);
  admin.command('reroll <name>').description('issue a new token for a user; the old one stops working').action(issueToken);
  admin
    .command('delete-user <name>')
    .description('delete a user (its sites stay unless --delete-files)')
    .option('--delete-files', "also remove the user's live sites and releases")
    .action(async (name: string, options: { deleteFiles?: boolean }, command: Command) => {
      await (await adminClient(command)).deleteUser(name, options.deleteFiles ? 'delete' : 'persist');
      out(`deleted ${name}${options.deleteFiles ? ' and its files' : ' (its files are kept)'}`);
    });
  admin
    .command('users')
    .description('list users and their project counts')
    .option('--json', JSON_HELP)
    .action(async (options: JsonOption, command: Command) => {
      const answer = await (await adminClient(command)).users();
      print(options, answer, () => answer.users.map((u) => `${u.username}  ${u.projects} projects`));
    });
}
