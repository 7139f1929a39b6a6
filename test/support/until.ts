/**
 * Waits for `condition` to hold, as a background task or another process makes it so,
 * looking again every 20 ms; a look that throws counts as not yet (a directory listed
 * while it is renamed). Fails after `timeoutMs`, naming `what`.
 */
export async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await Promise.resolve().then(condition).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
