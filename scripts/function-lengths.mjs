// Lists every function in src/ longer than a limit (default 80 lines), longest first:
// node scripts/function-lengths.mjs [limit]. Exits 1 if there is any.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const limit = Number(process.argv[2] ?? 80);
const files = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
const long = [];
for (const path of files('src')) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      const name = node.name?.getText(source) ?? (ts.isConstructorDeclaration(node) ? 'constructor' : '(anonymous)');
      if (lines > limit) long.push({ lines, at: `${path}:${first + 1}`, name });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
long.sort((a, b) => b.lines - a.lines);
for (const { lines, at, name } of long) console.log(`${lines}\t${at}\t${name}`);
process.exit(long.length > 0 ? 1 : 0);
