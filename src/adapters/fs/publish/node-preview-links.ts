import { lstat, readdir, readlink, rm, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import type { PreviewLinks } from '../../../application/ports/preview-links.js';
import type { Preview, PreviewName } from '../../../domain/preview.js';
import type { ProjectName } from '../../../domain/project-name.js';
import { ReleaseId } from '../../../domain/release-id.js';
import { isResourceName } from '../../../domain/resource-name.js';
import type { Username } from '../../../domain/username.js';
import { fsyncDirectory } from '../layout/durability.js';
import { swapLink, temporaryLinkOf } from './link-swap.js';
import { isMissing } from '../threads/fs-errors.js';

export interface PreviewRoots {
  /** Preview links: <previewsRoot>/<user>/<project>/<preview>. */
  readonly previewsRoot: string;
  /** Releases, which the links point into: <deploysRoot>/<user>/<project>/<release>/. */
  readonly deploysRoot: string;
  /** This replica's name, carried by its temporary links (see ReleaseRoots). */
  readonly replica: string;
}

export const PREVIEW_ROOTS = Symbol.for('sitedrop.PreviewRoots') as ServiceIdentifier<PreviewRoots>;


async function names(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter(isResourceName).sort();
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/**
 * Preview links on a local or shared POSIX filesystem, made and swapped exactly as the
 * live links are: a temporary symlink renamed over the old one. A link's own mtime is
 * when it was made, so it says when the preview was last deployed: no database row has
 * to agree with the filesystem.
 */
@injectable()
export class NodePreviewLinks implements PreviewLinks {
  private readonly tempLink: RegExp;

  constructor(@inject(PREVIEW_ROOTS) private readonly roots: PreviewRoots) {
    this.tempLink = temporaryLinkOf(roots.replica);
  }

  async link(user: Username, project: ProjectName, name: PreviewName, id: ReleaseId): Promise<void> {
    await swapLink(join(this.roots.previewsRoot, user, project), name, `${join(this.roots.deploysRoot, user, project, id)}/`, this.roots.replica);
  }

  async list(user: Username, project: ProjectName): Promise<Preview[]> {
    const dir = join(this.roots.previewsRoot, user, project);
    const previews: Preview[] = [];
    for (const name of await names(dir)) {
      try {
        const path = join(dir, name);
        const [target, info] = await Promise.all([readlink(path), lstat(path)]);
        const release = basename(target);
        if (ReleaseId.isReleaseId(release)) previews.push({ name: name as PreviewName, release, linkedAt: info.mtime });
      } catch (error) {
        // Unlinked by another request between the listing and the read.
        if (!isMissing(error)) throw error;
      }
    }
    return previews;
  }

  async unlink(user: Username, project: ProjectName, name: PreviewName): Promise<boolean> {
    const dir = join(this.roots.previewsRoot, user, project);
    try {
      await unlink(join(dir, name));
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    await fsyncDirectory(dir);
    return true;
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    // Links only: the releases they point to go with the project's own release tree.
    await rm(join(this.roots.previewsRoot, user, project), { recursive: true, force: true });
  }

  async removeUser(user: Username): Promise<void> {
    await rm(join(this.roots.previewsRoot, user), { recursive: true, force: true });
  }

  async projectsWithPreviews(): Promise<{ user: Username; project: ProjectName }[]> {
    const found: { user: Username; project: ProjectName }[] = [];
    for (const user of await names(this.roots.previewsRoot)) {
      for (const project of await names(join(this.roots.previewsRoot, user))) found.push({ user: user as Username, project: project as ProjectName });
    }
    return found;
  }

  async removeLeftovers(): Promise<string[]> {
    const removed: string[] = [];
    for (const { user, project } of await this.projectsWithPreviews()) {
      const dir = join(this.roots.previewsRoot, user, project);
      for (const name of await readdir(dir)) {
        if (!this.tempLink.test(name)) continue;
        await unlink(join(dir, name));
        removed.push(join(dir, name));
      }
    }
    return removed;
  }
}
