import { lstat, mkdtemp, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PreviewLinks } from '../../src/application/ports/preview-links.js';
import { NodePreviewLinks } from '../../src/adapters/fs/publish/node-preview-links.js';
import type { PreviewName } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryPreviewLinks } from '../support/fakes.js';

const ann = 'ann' as Username;
const site = 'site' as ProjectName;
const pr = (n: string) => n as PreviewName;
const r = (s: number) => `2026120${s}T120000` as ReleaseId;

/** What every PreviewLinks must do, whatever keeps the links. */
function previewLinksContract(name: string, open: () => Promise<{ links: PreviewLinks; close(): Promise<void> }>): void {
  describe(`PreviewLinks contract: ${name}`, () => {
    const withLinks = (test: (links: PreviewLinks) => Promise<void>) => async () => {
      const { links, close } = await open();
      try {
        await test(links);
      } finally {
        await close();
      }
    };

    it('links a preview, lists it by name with its release and when it was linked', withLinks(async (links) => {
      const before = Date.now();
      await links.link(ann, site, pr('pr-2'), r(1));
      await links.link(ann, site, pr('pr-1'), r(2));
      const listed = await links.list(ann, site);
      expect(listed.map((p) => [p.name, p.release])).toEqual([['pr-1', r(2)], ['pr-2', r(1)]]);
      for (const p of listed) expect(Math.abs(p.linkedAt.getTime() - before)).toBeLessThan(5000);
      expect(await links.list(ann, 'other' as ProjectName)).toEqual([]);
    }));

    it('swaps an existing preview to another release', withLinks(async (links) => {
      await links.link(ann, site, pr('pr-1'), r(1));
      await links.link(ann, site, pr('pr-1'), r(2));
      expect((await links.list(ann, site)).map((p) => p.release)).toEqual([r(2)]);
    }));

    it('unlinks one preview, reporting whether there was one', withLinks(async (links) => {
      await links.link(ann, site, pr('pr-1'), r(1));
      await links.link(ann, site, pr('pr-2'), r(1));
      expect(await links.unlink(ann, site, pr('pr-1'))).toBe(true);
      expect(await links.unlink(ann, site, pr('pr-1'))).toBe(false);
      expect((await links.list(ann, site)).map((p) => p.name)).toEqual(['pr-2']);
    }));

    it("removes a project's previews, and a user's, leaving everyone else's; lists the projects that have some", withLinks(async (links) => {
      await links.link(ann, site, pr('pr-1'), r(1));
      await links.link(ann, 'blog' as ProjectName, pr('pr-1'), r(1));
      await links.link('bob' as Username, site, pr('pr-1'), r(1));
      expect(await links.projectsWithPreviews()).toEqual([
        { user: 'ann', project: 'blog' },
        { user: 'ann', project: 'site' },
        { user: 'bob', project: 'site' },
      ]);
      await links.removeProject(ann, site);
      expect(await links.list(ann, site)).toEqual([]);
      expect(await links.list(ann, 'blog' as ProjectName)).toHaveLength(1);
      await links.removeUser(ann);
      expect(await links.projectsWithPreviews()).toEqual([{ user: 'bob', project: 'site' }]);
    }));
  });
}

previewLinksContract('in-memory fake', async () => ({ links: new InMemoryPreviewLinks(), close: async () => undefined }));

async function realLinks() {
  const root = await mkdtemp(join(tmpdir(), 'sitedrop-previews-'));
  const roots = { previewsRoot: join(root, 'previews'), deploysRoot: join(root, 'deploys'), replica: 'test-a' };
  return { root, roots, links: new NodePreviewLinks(roots), close: () => rm(root, { recursive: true, force: true }) };
}

previewLinksContract('real directories', async () => {
  const { links, close } = await realLinks();
  return { links, close };
});

describe('preview links on disk', () => {
  it('are absolute symlinks into the release tree, swapped by rename with no temporary left', async () => {
    const { roots, links, close } = await realLinks();
    try {
      await links.link(ann, site, pr('pr-1'), r(1));
      await links.link(ann, site, pr('pr-1'), r(2));
      const path = join(roots.previewsRoot, 'ann/site/pr-1');
      expect((await lstat(path)).isSymbolicLink()).toBe(true);
      expect(await readlink(path)).toBe(`${join(roots.deploysRoot, 'ann/site', r(2))}/`);
      expect(await readdir(join(roots.previewsRoot, 'ann/site'))).toEqual(['pr-1']);
    } finally {
      await close();
    }
  });

  it("removes only this replica's temporary links at start-up", async () => {
    const { roots, links, close } = await realLinks();
    try {
      await links.link(ann, site, pr('pr-1'), r(1));
      const dir = join(roots.previewsRoot, 'ann/site');
      await symlink('/nowhere', join(dir, '.pr-2.tmp+test-a+00ff'));
      await symlink('/nowhere', join(dir, '.pr-2.tmp+test-b+00ff'));
      expect(await links.removeLeftovers()).toEqual([join(dir, '.pr-2.tmp+test-a+00ff')]);
      expect((await readdir(dir)).sort()).toEqual(['.pr-2.tmp+test-b+00ff', 'pr-1']);
    } finally {
      await close();
    }
  });
});
