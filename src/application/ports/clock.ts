import type { ServiceIdentifier } from 'inversify';

export interface Clock {
  now(): Date;
}

export const CLOCK = Symbol.for('sitedrop.Clock') as ServiceIdentifier<Clock>;
