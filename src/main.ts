import { resolveAdminToken } from './adapters/config/admin-token.js';
import { ConfigError, loadConfig } from './adapters/config/config.js';
import { redactUrl } from './adapters/db/redact-url.js';
import { syncfsMethod } from './adapters/fs/layout/durability.js';
import { PinoLogger } from './adapters/log/logger.js';
import { startService } from './service.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`sitedrop: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = new PinoLogger({ level: config.logLevel, format: config.logFormat });
  const admin = resolveAdminToken(config.adminToken, config.dataDir);
  if (admin.generatedAt) {
    // Printed this once, on purpose: it is the only way a new operator learns it.
    process.stdout.write(`sitedrop: generated an admin token (kept in ${admin.generatedAt}): ${admin.token}\n`);
  }
  const service = await startService(config, admin.token, logger);
  // Handlers first: whoever reads the "listening" line may signal at once.
  const shutdown = (signal: string): void => {
    logger.info('shutting down', { signal });
    service.stop().then(
      () => {
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('shutdown failed', { error: (error as Error).message });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  logger.info('listening', {
    url: service.url,
    docsRoot: config.docsRoot,
    deploysRoot: config.deploysRoot,
    database: redactUrl(config.databaseUrl),
    syncfs: syncfsMethod,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`sitedrop: failed to start: ${(error as Error).message ?? String(error)}\n`);
  process.exit(1);
});
