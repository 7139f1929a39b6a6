import { createRequire } from 'node:module';

/**
 * One of the addons `npm ci` builds (binding.gyp, fs/native/*.c), or undefined if it was
 * not built (`npm ci --ignore-scripts`): each has a slower or a do-nothing fallback.
 */
export function loadAddon<T>(name: string): T | undefined {
  try {
    // src/adapters/fs/layout and dist/adapters/fs/layout are both four levels below the project root.
    return createRequire(import.meta.url)(`../../../../build/Release/${name}.node`) as T;
  } catch {
    return undefined;
  }
}
