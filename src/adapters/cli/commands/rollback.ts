import type { Command } from 'commander';
import { JSON_HELP, liveLine, print, userClient, type JsonOption } from './command-kit.js';

export function rollbackCommand(cli: Command): void {
  cli
    .command('rollback <project> [release]')
    .description('make an older release live (default: the one before the live one)')
    .option('--json', JSON_HELP)
    .action(async (project: string, release: string | undefined, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).rollback(project, release);
      print(options, answer, () => [liveLine(project, answer)]);
    });
}
