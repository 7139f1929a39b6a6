import { chmod, lstat, mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { ReleaseRules, RuleFiles, RulesOf } from '../../../application/ports/release-rules.js';
import { PUBLISHED_DIRECTORY_MODE, PUBLISHED_FILE_MODE } from '../../../domain/archive-policy.js';
import { SiteRulesRejected } from '../../../domain/errors.js';
import { compileSiteRules, type SiteRules } from '../../../domain/site-rules.js';
import { HEAD_FILE, REDIRECTS_FILE, RULES_DIRECTORY, rulesFiles, rulesFromFiles } from '../../webserver/compiled-rules.js';
import { DeploysTree } from '../layout/deploys-tree.js';
import { fsyncDirectory } from '../layout/durability.js';
import { isMissing } from '../threads/fs-errors.js';

const RULE_FILES = { redirects: '_redirects', headers: '_headers' } as const;

/** A release's rule files and compiled rules, in its directory (staged or committed). */
@injectable()
export class ReleaseRulesFiles implements ReleaseRules {
  constructor(@inject(DeploysTree) private readonly tree: DeploysTree) {}

  async files(of: RulesOf, maxBytes: number): Promise<RuleFiles> {
    const dir = this.dirOf(of);
    const redirects = await readRuleFile(join(dir, RULE_FILES.redirects), RULE_FILES.redirects, maxBytes);
    const headers = await readRuleFile(join(dir, RULE_FILES.headers), RULE_FILES.headers, maxBytes);
    return { ...(redirects === undefined ? {} : { redirects }), ...(headers === undefined ? {} : { headers }) };
  }

  async isCompiled(of: RulesOf): Promise<boolean> {
    try {
      await lstat(join(this.dirOf(of), RULES_DIRECTORY, HEAD_FILE));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async write(of: RulesOf, rules: SiteRules): Promise<void> {
    const files = rulesFiles(rules);
    if (files.length === 0) return;
    const release = this.dirOf(of);
    const dir = join(release, RULES_DIRECTORY);
    await mkdir(dir, { mode: PUBLISHED_DIRECTORY_MODE }).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
    // The web server's workers read them as another user; the umask must not narrow that.
    await chmod(dir, PUBLISHED_DIRECTORY_MODE);
    for (const { name, text } of files) await writeDurably(join(dir, name), text);
    await fsyncDirectory(dir);
    await fsyncDirectory(release);
  }

  async compiled(of: RulesOf): Promise<SiteRules> {
    const dir = join(this.dirOf(of), RULES_DIRECTORY);
    try {
      return rulesFromFiles(await readFile(join(dir, HEAD_FILE), 'utf8'), await readFile(join(dir, REDIRECTS_FILE), 'utf8'));
    } catch (error) {
      if (isMissing(error)) return compileSiteRules({});
      throw error;
    }
  }

  private dirOf(of: RulesOf): string {
    return 'staged' in of ? of.staged.handle : join(this.tree.projectDir(of.user, of.project), of.release);
  }
}

async function readRuleFile(path: string, name: '_redirects' | '_headers', maxBytes: number): Promise<string | undefined> {
  let found;
  try {
    found = await lstat(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
  if (!found.isFile()) throw new SiteRulesRejected(name, undefined, 'not a regular file');
  if (found.size > maxBytes) throw new SiteRulesRejected(name, undefined, `larger than ${maxBytes} bytes`);
  return readFile(path, 'utf8');
}

async function writeDurably(path: string, text: string): Promise<void> {
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, 'w', PUBLISHED_FILE_MODE);
  try {
    await handle.writeFile(text);
    await handle.chmod(PUBLISHED_FILE_MODE);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
