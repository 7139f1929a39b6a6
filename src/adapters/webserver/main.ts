import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../config/config.js';
import { writeWebServerConfig, type WebServerKind } from './webserver-config.js';

// `npm run webserver-config -- nginx|caddy --out DIR`: the web server's side of sitedrop, from
// the service's own environment, so the two always agree on roots and addresses.
const program = new Command('webserver-config')
  .description("writes the web server's configuration for sitedrop's sites")
  .addArgument(new Command().createArgument('<server>', 'the web server').choices(['nginx', 'caddy']))
  .requiredOption('--out <dir>', 'the directory to write into')
  .exitOverride()
  .action((server: WebServerKind, options: { out: string }) => {
    const written = writeWebServerConfig(server, loadConfig(process.env), options.out);
    for (const file of written) process.stdout.write(`${file}\n`);
  });

try {
  program.parse();
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  if (error instanceof ConfigError) {
    process.stderr.write(`webserver-config: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
