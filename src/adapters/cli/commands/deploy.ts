import type { Command } from 'commander';
import type { DeployOptions } from '../deploy-command.js';
import { userClient } from './command-kit.js';

export function deployCommand(cli: Command): void {
  cli
    .command('deploy <folder-or-tarball>')
    .description('deploy a folder (its contents become the site root; only files the server lacks are sent) or a .tar.gz')
    .requiredOption('--project <name>', 'the project to deploy to')
    .option('--preview <name>', 'deploy a preview of this name (e.g. pr-42) at its own address; the live site does not change')
    .option('--full', 'send the whole folder as one archive, even to a server that could take only what changed')
    .addHelpText('after', '\nA folder\'s manifest goes relative to the last release deployed from this machine, kept in SITEDROP_CACHE_DIR\n(default $XDG_CACHE_HOME/sitedrop or ~/.cache/sitedrop); keep that directory between CI runs to send less.')
    .option('--json', "print the server's response, with what was sent and skipped")
    .option('--retries <n>', 'times to try again when the server turns the deploy away for now (503: busy, restarting), after the wait it asks for (at most 60 s; default 3)')
    .action(async (path: string, options: DeployOptions, command: Command) => {
      // The deploy path (hashing, node-tar, the progress bars) loads only when a deploy runs.
      const api = await userClient(command);
      const { deploy } = await import('../deploy-command.js');
      await deploy(api, path, options);
    });
}
