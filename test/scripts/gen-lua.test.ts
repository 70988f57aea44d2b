/**
 * Every Lua script is typed, and no call site casts a script's reply. Each script's header names its arguments and
 * its reply (`@args`, `@reply`), which scripts/gen-lua.ts turns into its `ScriptDef<Args, Reply>`; `Core.run` and
 * `runScript` then check the arguments and type the reply. A cast at a call site would put a second, unchecked
 * opinion of the reply next to the header's, free to drift from the script.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { scripts } from '../../src/lua/scripts.gen.js';
import { ROOT } from '../support/cli.js';

const LUA = join(ROOT, 'src', 'lua');

function walk(dir: string, keep: (path: string) => boolean, skip: (dir: string) => boolean = () => false): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return skip(path) ? [] : walk(path, keep, skip);
      return keep(path) ? [path] : [];
    });
}

/** The scripts (not the shared snippets of includes/). */
function luaScripts(): string[] {
  return walk(LUA, (p) => p.endsWith('.lua'), (d) => d === join(LUA, 'includes'));
}

describe('scripts/gen-lua.ts', () => {
  it('every script has an @args and an @reply line in its header, and is typed by them', () => {
    const files = luaScripts();
    assert.equal(files.length, Object.keys(scripts).length);
    const untyped = files.filter((path) => {
      const header = /^--\[\[([\s\S]*?)\]\]/.exec(readFileSync(path, 'utf8'))?.[1] ?? '';
      return !/^\s*@args \[.*\]$/m.test(header) || !/^\s*@reply \S.*$/m.test(header);
    });
    assert.deepEqual(untyped.map((p) => relative(ROOT, p)), [], 'scripts without @args / @reply');
    const generated = readFileSync(join(LUA, 'scripts.gen.ts'), 'utf8');
    assert.equal(generated.match(/^ {2}\} as ScriptDef<.+>,$/gm)?.length, files.length, 'every entry of scripts.gen.ts is a typed ScriptDef');
  });

  it('refuses a script without @args or @reply, naming its file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-gen-lua-'));
    try {
      mkdirSync(join(dir, 'scripts'));
      cpSync(join(ROOT, 'scripts', 'gen-lua.ts'), join(dir, 'scripts', 'gen-lua.ts'));
      cpSync(LUA, join(dir, 'src', 'lua'), { recursive: true });
      const path = join(dir, 'src', 'lua', 'latch', 'delete-1.lua');
      writeFileSync(path, readFileSync(path, 'utf8').replace(/^\s*@reply .*\n/m, ''));
      const run = spawnSync(process.execPath, ['--import', 'tsx', join(dir, 'scripts', 'gen-lua.ts')], { cwd: ROOT, encoding: 'utf8' });
      assert.notEqual(run.status, 0, 'the generator fails');
      assert.match(run.stderr, /src\/lua\/latch\/delete-1\.lua: its header has no @reply line/);
      assert.equal(
        readFileSync(join(dir, 'src', 'lua', 'scripts.gen.ts'), 'utf8'),
        readFileSync(join(LUA, 'scripts.gen.ts'), 'utf8'),
        'nothing is generated',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The expression under parentheses, `await` and `!`. */
function unwrap(node: ts.Expression): ts.Expression {
  let e = node;
  while (ts.isParenthesizedExpression(e) || ts.isAwaitExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
  return e;
}

/**
 * A call that runs a script: `<x>.run(script, …)` (`Core.run`) or `runScript(transport, script, …)`, where `script` is
 * `scripts[…]` (or an expression that picks one, such as `a ? scripts['x'] : scripts['y']`) or a variable named `script`.
 */
function runsScript(node: ts.Expression, source: ts.SourceFile): boolean {
  const call = unwrap(node);
  if (!ts.isCallExpression(call)) return false;
  const callee = call.expression;
  const index = ts.isPropertyAccessExpression(callee) && callee.name.text === 'run' ? 0 : ts.isIdentifier(callee) && callee.text === 'runScript' ? 1 : -1;
  const script = index < 0 ? undefined : call.arguments[index];
  if (!script) return false;
  return /\bscripts\[/.test(script.getText(source)) || (ts.isIdentifier(script) && script.text === 'script');
}

/** `file:line  text` of each cast applied to the reply of a script run in `path`. */
function castsOfReplies(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && runsScript(node.expression, source)) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${relative(ROOT, path)}:${line}  ${node.getText(source).replace(/\s+/g, ' ').slice(0, 120)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('script call sites', () => {
  it('no call site in src/ casts the reply of a script', () => {
    const files = walk(join(ROOT, 'src'), (p) => p.endsWith('.ts') && !p.endsWith('.gen.ts'));
    assert.ok(files.length > 50);
    assert.deepEqual(files.flatMap(castsOfReplies), []);
  });

  it('the check finds such a cast (as it would be written)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'holdfast-casts-'));
    try {
      const path = join(dir, 'site.ts');
      writeFileSync(
        path,
        [
          "const a = (await core.run(scripts['sem/drain'], [key], [])) as number;",
          "const b = core.run(scripts['lock/waiters'], [key], [100]) as Promise<number[]>;",
          "const c = (await runScript(node, scripts['qsem/inspect'], keys, [], 100)) as number;",
          'const d = (await this.core.run(script, keys, [owner, leaseMs])) as number;',
          "const ok = (await core.run(scripts['sem/drain'], [key], [])) === 1;",
          'const e = (await scheduler.run(name, tick, fn)) as number;',
        ].join('\n'),
      );
      assert.deepEqual(
        castsOfReplies(path).map((hit) => Number(/:(\d+) /.exec(hit)?.[1])),
        [1, 2, 3, 4],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
