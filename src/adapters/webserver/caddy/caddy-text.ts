/**
 * Writing site-supplied text into a Caddyfile. Three layers read it, in this order:
 * Caddy replaces `{$NAME}` anywhere in the file's bytes with an environment variable
 * (before anything else, quotes and comments included); the lexer splits tokens (a
 * backtick-quoted token is taken as it is); at request time the replacer reads `{...}`
 * as a placeholder unless the brace is escaped `\{`.
 */

/**
 * A token taken as it is: backtick-quoted, or double-quoted when it holds a backtick (the
 * lexer then reads only `\"`, so a backslash before a quote or at the end cannot be written).
 */
export function token(text: string): string {
  const refuse = (why: string) => new Error(`cannot write ${JSON.stringify(text)} into a Caddyfile: ${why}`);
  if (text.includes('{$')) throw refuse("it holds '{$'");
  if (!text.includes('`')) return `\`${text}\``;
  if (/\\("|$)/.test(text)) throw refuse('it holds a backtick and a backslash before a quote');
  return `"${text.replace(/"/g, '\\"')}"`;
}

/** The variable that holds a '$' for `literal`: set in every route that uses one (see DOLLAR_VARIABLE_LINE). */
const DOLLAR = '{vars.sd_dollar}';
export const DOLLAR_VARIABLE_LINE = 'vars sd_dollar "$"';

/**
 * Text a handler passes through the replacer (a header value, a variable) read back
 * literally: braces escaped, and a '$' after a brace taken from a variable, since
 * `{$` in the file's bytes would be read as an environment variable.
 */
export function literal(text: string): { text: string; needsDollar: boolean } {
  let out = '';
  let needsDollar = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '$' && text[i - 1] === '{') {
      out += DOLLAR;
      needsDollar = true;
    } else if (char === '{' || char === '}') out += `\\${char}`;
    else out += char;
  }
  return { text: out, needsDollar };
}

/**
 * A rule's target as a URI for `redir` or `rewrite`, its `:name`s read from the regex's
 * groups (`{re.<name>.N}`). Braces in the written target become %7B/%7D: the same URL,
 * and no brace left for Caddy's replacer or its environment variables.
 */
export function targetUri(to: string, params: readonly string[], matcher: string): string {
  const braced = to.replace(/[{}]/g, (brace) => (brace === '{' ? '%7B' : '%7D'));
  return braced.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => {
    const at = params.indexOf(name);
    return at === -1 ? whole : `{re.${matcher}.${at + 1}}`;
  });
}
