export const TOKEN_LENGTH = 32;
export const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export type Token = string & { readonly __brand: 'Token' };

const TOKEN_PATTERN = /^[A-Za-z0-9]{32}$/;

export const Token = {
  /** Undefined for anything that cannot be a token, so callers reject it without a lookup. */
  fromString(value: string): Token | undefined {
    return TOKEN_PATTERN.test(value) ? (value as Token) : undefined;
  },
};
