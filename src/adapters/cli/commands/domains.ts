import type { Command } from 'commander';
import type { DomainVerification } from '../api-answers.js';
import { err, out } from '../output.js';
import { JSON_HELP, print, userClient, type JsonOption } from './command-kit.js';

/** What to publish to prove a claim, as a zone file would have it. */
const record = (v: DomainVerification): string => `${v.name}. TXT "${v.value}"`;

/** `sitedrop domains add|list|verify|remove <project> [domain]`: a project's custom domains. */
export function domainsCommand(cli: Command): void {
  const domains = cli.command('domains').description("a project's custom domains, each proven by a DNS TXT record");
  domains
    .command('add <project> <domain>')
    .description('claim a domain for a project and print the TXT record that proves it')
    .option('--json', JSON_HELP)
    .action(async (project: string, domain: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).addDomain(project, domain);
      print(options, answer, () => [record(answer.verification)]);
      // Beside the record, not in it: stdout stays the record alone, for a script.
      if (!options.json) err(answer.verified ? `${answer.domain} is verified` : `publish this record, then: sitedrop domains verify ${project} ${answer.domain}`);
    });
  domains
    .command('list <project>')
    .description("list a project's domains")
    .option('--json', JSON_HELP)
    .action(async (project: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).domains(project);
      print(options, answer, () => answer.domains.map((d) => `${d.domain}  ${d.verified ? `verified ${String(d.verifiedAt)}` : `unverified  ${record(d.verification)}`}`));
    });
  domains
    .command('verify <project> <domain>')
    .description('look up the TXT record and, when it holds the value, serve the site at the domain')
    .option('--json', JSON_HELP)
    .action(async (project: string, domain: string, options: JsonOption, command: Command) => {
      const answer = await (await userClient(command)).verifyDomain(project, domain);
      print(options, answer, () => [`verified ${answer.domain}`]);
    });
  domains
    .command('remove <project> <domain>')
    .description('stop serving the site at a domain and give up the claim')
    .action(async (project: string, domain: string, _options: unknown, command: Command) => {
      await (await userClient(command)).removeDomain(project, domain);
      out(`removed ${domain}`);
    });
}
