/** ENOENT: what was looked for is gone, which a removal or a race with another replica makes normal. Imports nothing, so any thread may use it. */
export const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT';
