import type { ServiceIdentifier } from 'inversify';
import type { Token } from '../../domain/token.js';

export interface TokenGenerator {
  generate(): Token;
}

export const TOKEN_GENERATOR = Symbol.for('sitedrop.TokenGenerator') as ServiceIdentifier<TokenGenerator>;
