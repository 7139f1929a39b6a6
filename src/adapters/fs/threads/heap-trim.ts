import { loadAddon } from '../layout/native-addon.js';

type Binding = { trim(): Promise<boolean> };

const binding = loadAddon<Binding>('heap_trim');

/**
 * Hands memory the process's threads have freed back to the system (glibc's
 * malloc_trim, on the thread pool); true if there was some. glibc keeps it in its arenas
 * otherwise, and the next deploy's peak stacks on it (docs/performance.md). Without the addon, or on another C library, it does nothing.
 */
export const trimHeap: () => Promise<boolean> = binding ? () => binding.trim() : () => Promise.resolve(false);
