// Deterministic site fixtures: the same seed writes the same bytes, so figures are comparable.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** mulberry32: small, fast, seeded. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function lognormal(random, mean, sigma) {
  const mu = Math.log(mean) - (sigma * sigma) / 2;
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.max(64, Math.round(Math.exp(mu + sigma * z)));
}

const WORDS = ('static site release deploy atomic symlink nginx archive project docs guide api reference install configure ' +
  'server client token upload gzip tar page section example returns value option default build output folder index').split(' ');

function textPage(random, bytes) {
  let out = '<!doctype html><html><head><meta charset="utf-8"><title>Page</title></head><body><main>\n';
  while (out.length < bytes) {
    let sentence = '<p>';
    const n = 8 + Math.floor(random() * 16);
    for (let i = 0; i < n; i += 1) sentence += `${WORDS[Math.floor(random() * WORDS.length)]} `;
    out += `${sentence.trim()}.</p>\n`;
  }
  return Buffer.from(`${out.slice(0, bytes - 22)}</main></body></html>\n`);
}

function binary(random, bytes) {
  const buf = Buffer.allocUnsafe(bytes);
  for (let i = 0; i + 4 <= bytes; i += 4) buf.writeUInt32LE((random() * 4294967296) >>> 0, i);
  for (let i = bytes - (bytes % 4); i < bytes; i += 1) buf[i] = (random() * 256) | 0;
  return buf;
}

/**
 * The shapes a deploy must be fast at. `standard` is the reference site:
 * 5,000 files, about 56 MB unpacked and 29 MB gzip, half text pages, half images.
 */
export const SHAPES = {
  small: { files: 500, textShare: 0.5, textMean: 13_000, imageMean: 9_500, sigma: 1.0 },
  standard: { files: 5000, textShare: 0.5, textMean: 13_000, imageMean: 9_500, sigma: 1.0 },
  docs: { files: 40_000, textShare: 1, textMean: 1_600, imageMean: 0, sigma: 0.6 },
  media: { files: 5, textShare: 0, textMean: 0, imageMean: 16_000_000, sigma: 0.2 },
  tiny: { files: 20, textShare: 0.5, textMean: 2_000, imageMean: 2_000, sigma: 0.5 },
};

/** Writes the site under `root/site` and packs it as `tar -czf site.tgz -C site .`; returns sizes. */
export function makeSite(root, shape, seed = 42) {
  const random = rng(seed);
  const site = join(root, 'site');
  let bytes = 0;
  const madeDirs = new Set();
  for (let i = 0; i < shape.files; i += 1) {
    const isText = random() < shape.textShare;
    const size = lognormal(random, isText ? shape.textMean : shape.imageMean, shape.sigma);
    const dir = isText ? join(site, 'docs', `section-${i % 40}`, `part-${i % 7}`) : join(site, 'assets', 'img', `g${i % 25}`);
    if (!madeDirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      madeDirs.add(dir);
    }
    const body = isText ? textPage(random, size) : binary(random, size);
    writeFileSync(join(dir, isText ? `page-${i}.html` : `image-${i}.jpg`), body);
    bytes += body.length;
  }
  writeFileSync(join(site, 'index.html'), textPage(random, 4000));
  const archive = join(root, 'site.tgz');
  execFileSync('tar', ['-czf', archive, '-C', site, '.']);
  return { site, archive, files: shape.files + 1, bytes };
}

/** One incompressible file in a tarball of about `bytes`: the memory test's upload. */
export function makeLargeUpload(root, bytes, seed = 7) {
  const random = rng(seed);
  const site = join(root, 'large');
  mkdirSync(site, { recursive: true });
  const chunk = 8 * 1024 * 1024;
  for (let i = 0, left = bytes; left > 0; i += 1, left -= chunk) writeFileSync(join(site, `blob-${i}.bin`), binary(random, Math.min(chunk, left)));
  const archive = join(root, 'large.tgz');
  execFileSync('tar', ['-czf', archive, '-C', site, '.']);
  return archive;
}

/** Every file under `root` as an incremental deploy's manifest entry, in the order a walk finds them. */
export function manifestOf(root) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const bytes = readFileSync(path);
        files.push({ path: relative(root, path), size: bytes.length, digest: createHash('sha256').update(bytes).digest('hex') });
      }
    }
  };
  walk(root);
  return files;
}
