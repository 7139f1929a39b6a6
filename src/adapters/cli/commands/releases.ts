import type { Command } from 'commander';
import { megabytes } from '../output.js';
import { JSON_HELP, print, userClient, type JsonOption } from './command-kit.js';

export function releasesCommand(cli: Command): void {
  cli
    .command('releases <project>')
    .description("list a project's releases, newest first")
    .option('--json', JSON_HELP)
    .action(async (project: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).releases(project);
      print(options, answer, () =>
        answer.releases.map(
          (r) =>
            `${r.id}${r.live ? '  live' : '      '}  ${r.files === null ? '-' : `${r.files} files`}  ${r.bytes === null ? '-' : megabytes(r.bytes)}` +
            (r.preview === undefined ? '' : `  preview ${r.preview}`),
        ),
      );
    });
}
