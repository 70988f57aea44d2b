/**
 * Docs that cannot rot: every code block of README.md and docs/ marked runnable is run against a real Redis, and the
 * TypeScript ones (and the JavaScript ones, read as TypeScript) are type-checked with strict settings.
 *
 * The marker is an HTML comment on the line before the fence (invisible on GitHub and npm):
 *
 *     <!-- run -->
 *     ```ts
 *
 * A `ts` block runs as an ES module with tsx; a `js` block runs with plain node, as CommonJS when it calls
 * `require(`, else as an ES module. `<!-- run with holdfast -->` marks a short example that uses the quick start's
 * `redis` and `holdfast`: the test wraps it in the quick start's opening and closing lines. Blocks import `holdfast` as a user would: the package's own name resolves to the
 * build (`dist/`), so they test the published entry points. Each block gets `REDIS_URL` (its own database of a
 * redis-server started here) and must exit 0 by itself within 30 s: a block that leaves a connection open fails.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureBuilt, ROOT } from '../support/cli.js';
import { RedisServer } from '../support/redis-server.js';
import { randomBytes } from 'node:crypto';
import { openPool, POSTGRES_URL } from '../support/postgres.js';

const MARKER = /^<!--\s*run(\s+with holdfast)?\s*-->\s*$/;

/** What `<!-- run with holdfast -->` puts around a block: the quick start's setup and shutdown. */
export const PRELUDE = [
  "import { Redis } from 'ioredis';",
  "import { Holdfast } from 'holdfast';",
  "const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');",
  'const holdfast = new Holdfast({ redis });',
];
const EPILOGUE = ['await holdfast.close();', 'await redis.quit();'];

export interface DocBlock {
  /** `README.md:42` */
  where: string;
  lang: 'ts' | 'js';
  code: string;
  /** true for a js block that uses require() */
  commonjs: boolean;
  /** lines added before the block (`run with holdfast`), for mapping type errors back to the markdown */
  offset: number;
}

/** Every markdown file the docs test reads: README.md and docs/ (not the generated API reference). */
export function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((entry) => {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) return entry === 'api' ? [] : walk(path);
        return entry.endsWith('.md') ? [path] : [];
      });
  return [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'))];
}

/** The blocks marked runnable in one markdown file. */
export function extractBlocks(file: string): DocBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i]!);
    if (!marker) continue;
    const fence = /^```(\w+)\s*$/.exec(lines[i + 1] ?? '');
    const where = `${relative(ROOT, file)}:${i + 1}`;
    if (!fence || (fence[1] !== 'ts' && fence[1] !== 'js')) throw new Error(`${where}: <!-- run --> must stand right before a \`\`\`ts or \`\`\`js fence`);
    const end = lines.findIndex((l, k) => k > i + 1 && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`${where}: unclosed code block`);
    const body = lines.slice(i + 2, end);
    const wrapped = marker[1] !== undefined;
    const code = (wrapped ? [...PRELUDE, ...body, ...EPILOGUE] : body).join('\n') + '\n';
    blocks.push({ where, lang: fence[1], code, commonjs: fence[1] === 'js' && /\brequire\(/.test(code), offset: wrapped ? PRELUDE.length : 0 });
    i = end;
  }
  return blocks;
}

const blocks = docFiles().flatMap(extractBlocks);
// inside the package, so that `import 'holdfast'` resolves to the build by the package's own name
const DIR = join(ROOT, '.test-tmp', 'docs');
// The file the type-check reads: .mts for TypeScript and ES-module JavaScript (read as TypeScript, so that pasting it
// into a .ts file is clean too); the .cjs itself for CommonJS (checkJs: types flow through require() in JavaScript).
const checkedName = (b: DocBlock, i: number) => `block-${String(i).padStart(2, '0')}.${b.commonjs ? 'cjs' : 'mts'}`;
const runName = (b: DocBlock, i: number) => `block-${String(i).padStart(2, '0')}.${b.lang === 'ts' ? 'mts' : b.commonjs ? 'cjs' : 'mjs'}`;

function runFile(args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; output: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: DIR, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\n[killed: still running after ${timeoutMs} ms — does the example close its clients?]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: performance.now() - started });
    });
  });
}

describe('documentation code blocks', { concurrency: 4, timeout: 300_000 }, () => {
  let server: RedisServer;
  // the PostgreSQL examples get DATABASE_URL: a database made for this run on the machine's PostgreSQL, dropped after
  // it (the examples create holdfast's default schema in it, as they would in a user's database)
  const database = `hf_docs_${randomBytes(5).toString('hex')}`;
  const databaseUrl = ((): string => {
    const u = new URL(POSTGRES_URL);
    u.pathname = `/${database}`;
    return u.toString();
  })();

  before(async () => {
    await ensureBuilt();
    server = await RedisServer.start();
    const admin = openPool(POSTGRES_URL, 1);
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    rmSync(DIR, { recursive: true, force: true });
    mkdirSync(DIR, { recursive: true });
    blocks.forEach((b, i) => {
      const header = `// ${b.where}\n`;
      writeFileSync(join(DIR, runName(b, i)), header + b.code);
      writeFileSync(join(DIR, checkedName(b, i)), header + b.code);
    });
    writeFileSync(
      join(DIR, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'ESNext.Disposable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          noImplicitReturns: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          noEmit: true,
          allowJs: true,
          checkJs: true,
        },
        include: ['*.mts', '*.cjs'],
      }),
    );
  });
  after(async () => {
    await server?.stop();
    const admin = openPool(POSTGRES_URL, 1);
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('finds runnable blocks in the README and in docs/', () => {
    assert.ok(blocks.some((b) => b.where.startsWith('README.md')), 'the README has runnable blocks');
    assert.ok(blocks.some((b) => b.where.startsWith('docs/')), 'docs/ has runnable blocks');
    assert.ok(blocks.some((b) => b.commonjs), 'a CommonJS form is among them');
  });

  it('type-checks every block with strict settings', { timeout: 120_000 }, async () => {
    const r = await runFile([join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(DIR, 'tsconfig.json')], {}, 110_000);
    // point at the markdown line, not the temp file
    const output = r.output.replace(/block-(\d+)\.(?:mts|cjs)\((\d+),(\d+)\)/g, (_m, i: string, line: string, col: string) => {
      const b = blocks[Number(i)]!;
      const [file, start] = b.where.split(':');
      // +1 for the header comment line, + the marker and fence lines, - the prelude
      return `${file}:${Number(start) + Number(line) - b.offset}:${col}`;
    });
    assert.equal(r.code, 0, output);
  });

  blocks.forEach((b, i) => {
    it(`${b.where} (${b.lang === 'ts' ? 'TypeScript' : b.commonjs ? 'CommonJS' : 'ES module'}) runs and exits by itself`, async () => {
      const file = runName(b, i);
      const args = b.lang === 'ts' ? ['--import', 'tsx', file] : [file];
      const r = await runFile(args, { REDIS_URL: `${server.url}/${i % 16}`, DATABASE_URL: databaseUrl }, 30_000);
      assert.equal(r.code, 0, `${b.where} exited ${r.code}:\n${r.output}`);
    });
  });
});
