import { describe, expect, it } from 'vitest';
import { InvalidPreviewName } from '../../src/domain/errors.js';
import { isPreviewExpired, mayAddPreview, PreviewName, previewExpiry, previewUrl, type Preview } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';

const preview: Preview = { name: 'pr-1' as PreviewName, release: '20261201T120000' as ReleaseId, linkedAt: new Date('2026-12-01T12:00:00.000Z') };

describe('previews', () => {
  it('are named with the username pattern', () => {
    expect(PreviewName.parse('pr-42')).toBe('pr-42');
    for (const bad of ['', 'PR-1', '_previews', '-x', 'a/b', 'x'.repeat(65)]) expect(() => PreviewName.parse(bad)).toThrow(InvalidPreviewName);
  });

  it('expire PREVIEW_TTL_SECONDS after their last deploy, from that instant on', () => {
    expect(previewExpiry(preview, 3600)).toEqual(new Date('2026-12-01T13:00:00.000Z'));
    expect(isPreviewExpired(preview, 3600, new Date('2026-12-01T12:59:59.999Z'))).toBe(false);
    expect(isPreviewExpired(preview, 3600, new Date('2026-12-01T13:00:00.000Z'))).toBe(true);
  });

  it('are at most PREVIEWS_MAX per project, a deploy to an existing one always allowed', () => {
    const names = ['a', 'b'] as PreviewName[];
    expect(mayAddPreview(names, 'c' as PreviewName, 3)).toBe(true);
    expect(mayAddPreview(names, 'c' as PreviewName, 2)).toBe(false);
    expect(mayAddPreview(names, 'a' as PreviewName, 2)).toBe(true);
  });

  it('have their own address, with one slash however the base ends', () => {
    expect(previewUrl('https://x.test/_previews/', 'ann' as Username, 'site' as ProjectName, 'pr-1' as PreviewName)).toBe('https://x.test/_previews/ann/site/pr-1/');
  });
});
