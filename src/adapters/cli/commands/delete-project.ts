import type { Command } from 'commander';
import { out } from '../output.js';
import { userClient } from './command-kit.js';

export function deleteProjectCommand(cli: Command): void {
  cli
    .command('delete-project <project>')
    .description('remove a project: its live site and all its releases')
    .action(async (project: string, _options: unknown, command: Command) => {
      await (await userClient(command)).deleteProject(project);
      out(`deleted ${project}`);
    });
}
