/** A configuration value that cannot be used; the message is the whole story, for one log line. */
export class ConfigError extends Error {
  constructor(readonly variable: string, expected: string, got: string) {
    super(`${variable} must be ${expected} (got ${JSON.stringify(got)})`);
  }
}
