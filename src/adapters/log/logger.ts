import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import { createRequire } from 'node:module';
import type pretty from 'pino-pretty';
import type { ServiceIdentifier } from 'inversify';

/** Structured log lines. Callers never pass tokens or Authorization headers. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** For adapters that log their own work (the staging's phases); use cases return data instead. */
export const LOGGER = Symbol.for('sitedrop.Logger') as ServiceIdentifier<Logger>;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** pino-pretty (1 MiB of heap) is loaded only when LOG_FORMAT=pretty asks for it; CommonJS, so synchronously. */
const requirePretty = (): typeof pretty => createRequire(import.meta.url)('pino-pretty') as typeof pretty;

/** pino: JSON lines on stdout, or readable lines with LOG_FORMAT=pretty. */
export class PinoLogger implements Logger {
  private readonly log: Pino;

  constructor(options: { level: LogLevel; format: 'json' | 'pretty'; destination?: DestinationStream }) {
    const destination = options.destination ?? (options.format === 'pretty' ? requirePretty()({ sync: true, colorize: false }) : pino.destination({ dest: 1, sync: false }));
    this.log = pino(
      {
        level: options.level,
        base: undefined,
        timestamp: pino.stdTimeFunctions.isoTime,
        // A second line of defence: whatever a caller passes, these never reach a log.
        redact: { paths: ['token', 'authorization', 'headers.authorization', '*.token', '*.authorization'], censor: '[redacted]' },
      },
      destination,
    );
  }

  info(message: string, fields: Record<string, unknown> = {}): void {
    this.log.info(fields, message);
  }

  warn(message: string, fields: Record<string, unknown> = {}): void {
    this.log.warn(fields, message);
  }

  error(message: string, fields: Record<string, unknown> = {}): void {
    this.log.error(fields, message);
  }

  flush(): void {
    this.log.flush();
  }
}

export class SilentLogger implements Logger {
  info(): void {}
  warn(): void {}
  error(): void {}
}
