/** Structured log lines on stdout. Callers never pass tokens or Authorization headers. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export class JsonLogger implements Logger {
  constructor(private readonly write: (line: string) => void = (line) => process.stdout.write(line)) {}

  info(message: string, fields: Record<string, unknown> = {}): void {
    this.line('info', message, fields);
  }

  warn(message: string, fields: Record<string, unknown> = {}): void {
    this.line('warn', message, fields);
  }

  error(message: string, fields: Record<string, unknown> = {}): void {
    this.line('error', message, fields);
  }

  private line(level: string, msg: string, fields: Record<string, unknown>): void {
    this.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  }
}

export class SilentLogger implements Logger {
  info(): void {}
  warn(): void {}
  error(): void {}
}
