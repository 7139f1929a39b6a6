import type { Command } from 'commander';
import type { ApiClient, Json } from './api-client.js';
import { err, out } from './output.js';

type ClientOf = (command: Command, tokenVariable: 'SITEDROP_TOKEN') => ApiClient;

const path = (project: string, domain?: string, tail = ''): string =>
  `/api/v1/projects/${encodeURIComponent(project)}/domains${domain === undefined ? '' : `/${encodeURIComponent(domain)}`}${tail}`;

/** What to publish to prove a claim, as a zone file would have it. */
const record = (answer: Json): string => {
  const v = answer.verification as Json;
  return `${String(v.name)}. TXT "${String(v.value)}"`;
};

/** `sitedrop domains add|list|verify|remove <project> [domain]`: a project's custom domains. */
export function domainsCommand(cli: Command, client: ClientOf): void {
  const domains = cli.command('domains').description("a project's custom domains, each proven by a DNS TXT record");
  domains
    .command('add <project> <domain>')
    .description('claim a domain for a project and print the TXT record that proves it')
    .option('--json', "print the server's response")
    .action(async (project: string, domain: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('POST', path(project), { domain });
      if (options.json) return out(JSON.stringify(result));
      out(record(result));
      err(result.verified ? `${String(result.domain)} is verified` : `publish this record, then: sitedrop domains verify ${project} ${String(result.domain)}`);
    });
  domains
    .command('list <project>')
    .description("list a project's domains")
    .option('--json', "print the server's response")
    .action(async (project: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('GET', path(project));
      if (options.json) return out(JSON.stringify(result));
      for (const d of result.domains as Json[]) out(`${String(d.domain)}  ${d.verified ? `verified ${String(d.verifiedAt)}` : `unverified  ${record(d)}`}`);
    });
  domains
    .command('verify <project> <domain>')
    .description('look up the TXT record and, when it holds the value, serve the site at the domain')
    .option('--json', "print the server's response")
    .action(async (project: string, domain: string, options: { json?: boolean }, command: Command) => {
      const result = await client(command, 'SITEDROP_TOKEN').call('POST', path(project, domain, '/verify'));
      if (options.json) return out(JSON.stringify(result));
      out(`verified ${String(result.domain)}`);
    });
  domains
    .command('remove <project> <domain>')
    .description('stop serving the site at a domain and give up the claim')
    .action(async (project: string, domain: string, _options: unknown, command: Command) => {
      await client(command, 'SITEDROP_TOKEN').call('DELETE', path(project, domain));
      out(`removed ${domain}`);
    });
}
