import type { Command } from 'commander';
import { out } from '../output.js';
import { JSON_HELP, liveLine, print, userClient, type JsonOption } from './command-kit.js';

/** A project's previews: list, promote one, delete one. */
export function previewsCommands(cli: Command): void {
  cli
    .command('previews <project>')
    .description("list a project's previews")
    .option('--json', JSON_HELP)
    .action(async (project: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).previews(project);
      print(options, answer, () => answer.previews.map((p) => `${p.name}  ${p.release}  expires ${p.expiresAt}  ${p.url}`));
    });

  cli
    .command('promote <project> <preview> [release]')
    .description("make a preview's release live (given the release reviewed, refused if the preview was deployed again since)")
    .option('--json', JSON_HELP)
    .action(async (project: string, preview: string, release: string | undefined, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).promote(project, preview, release);
      print(options, answer, () => [liveLine(project, answer)]);
    });

  cli
    .command('delete-preview <project> <preview>')
    .description('remove a preview; its release is then pruned like any other')
    .action(async (project: string, preview: string, _options: unknown, command: Command) => {
      await (await userClient(command)).deletePreview(project, preview);
      out(`deleted preview ${preview} of ${project}`);
    });
}
