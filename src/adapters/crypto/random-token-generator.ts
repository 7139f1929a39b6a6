import { randomInt } from 'node:crypto';
import { injectable } from 'inversify';
import type { TokenGenerator } from '../../application/ports/token-generator.js';
import { TOKEN_ALPHABET, TOKEN_LENGTH, type Token } from '../../domain/token.js';

/** randomInt draws each character uniformly (no modulo bias) from the CSPRNG. */
export function generateToken(): Token {
  let token = '';
  for (let i = 0; i < TOKEN_LENGTH; i += 1) token += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)];
  return token as Token;
}

@injectable()
export class RandomTokenGenerator implements TokenGenerator {
  generate(): Token {
    return generateToken();
  }
}
