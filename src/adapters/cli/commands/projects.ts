import type { Command } from 'commander';
import { JSON_HELP, print, userClient, type JsonOption } from './command-kit.js';

export function projectsCommand(cli: Command): void {
  cli
    .command('projects')
    .description('list your projects')
    .option('--json', JSON_HELP)
    .action(async (options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).projects();
      print(options, answer, () => answer.projects.map((p) => `${p.name}  live ${p.live ?? '-'}  ${p.releases} releases  ${p.url}`));
    });
}
