import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateToken } from '../crypto/random-token-generator.js';

export interface AdminToken {
  readonly token: string;
  /** Set when this start generated the token: main prints it this once. */
  readonly generatedAt?: string;
}

/**
 * ADMIN_TOKEN wins; otherwise the token kept in DATA_DIR/admin-token (mode 0600),
 * generated on the first start so a fresh install is never left open.
 */
export function resolveAdminToken(configured: string | undefined, dataDir: string): AdminToken {
  if (configured !== undefined) return { token: configured };
  const file = join(dataDir, 'admin-token');
  try {
    const stored = readFileSync(file, 'utf8').trim();
    if (stored.length >= 32) return { token: stored };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const token = generateToken();
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'w' });
  return { token, generatedAt: file };
}
