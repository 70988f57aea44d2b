/**
 * The public API, pinned: every name each entry point (entries.json, all of them) exports and, for each exported class and interface, its public
 * members (what the published `.d.ts` shows: no `private`/`protected`/`#` member, nothing tagged `@internal`). The
 * list is read by the TypeScript checker from the sources and compared with test/types/public-api.txt, so the API
 * cannot grow (or lose a name) by accident. After a deliberate change: `HOLDFAST_UPDATE_API=1 node
 * scripts/run-tests.mjs test/types/public-api.test.ts`, and review the diff of public-api.txt.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { it } from 'node:test';
import ts from 'typescript';
import { ENTRIES as ENTRY_LIST } from '../../scripts/entries.mjs';

/** The package's entry points (entries.json), by import specifier. */
const ENTRIES: Record<string, string> = Object.fromEntries(ENTRY_LIST.map((entry) => [entry.specifier, entry.source]));
const LIST = new URL('./public-api.txt', import.meta.url);

function isInternal(declaration: ts.Declaration): boolean {
  return ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === 'internal');
}

function isHidden(declaration: ts.Declaration): boolean {
  if (isInternal(declaration)) return true;
  const name = ts.getNameOfDeclaration(declaration);
  if (name && ts.isPrivateIdentifier(name)) return true;
  const flags = ts.getCombinedModifierFlags(declaration);
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

/** A member's name as the declaration shows it: a well-known symbol as `[Symbol.asyncDispose]`, not the checker's numbered id. */
function memberName(member: ts.Symbol): string {
  return member.name.replace(/^__@(\w+)@\d+$/, '[Symbol.$1]');
}

/** `entry: Name` for every export, and `entry: Name.member` for the public members of its classes and interfaces. */
function publicApi(): string[] {
  const program = ts.createProgram(Object.values(ENTRIES), { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(file);
    assert.ok(source, file);
    const module = checker.getSymbolAtLocation(source);
    assert.ok(module, file);
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const kind = symbol.flags & ts.SymbolFlags.Class ? 'class' : symbol.flags & ts.SymbolFlags.Interface ? 'interface' : symbol.flags & ts.SymbolFlags.Function ? 'function' : symbol.flags & ts.SymbolFlags.TypeAlias ? 'type' : 'value';
      lines.push(`${entry}: ${kind} ${exported.name}`);
      if (kind !== 'class' && kind !== 'interface') continue;
      const declared = checker.getDeclaredTypeOfSymbol(symbol);
      const members = new Set<string>();
      for (const member of checker.getPropertiesOfType(declared)) {
        const declarations = member.declarations ?? [];
        if (declarations.length === 0 || declarations.every(isHidden)) continue;
        members.add(memberName(member));
      }
      if (kind === 'class') {
        const statics = checker.getTypeOfSymbol(symbol);
        for (const member of checker.getPropertiesOfType(statics)) {
          if (member.name === 'prototype' || (member.declarations ?? []).every(isHidden)) continue;
          members.add(`static ${memberName(member)}`);
        }
      }
      for (const member of [...members].sort()) lines.push(`${entry}: ${kind} ${exported.name}.${member}`);
    }
  }
  return lines.sort();
}

void it('the public API of every entry point is the one in test/types/public-api.txt', () => {
  const actual = publicApi();
  if (process.env.HOLDFAST_UPDATE_API === '1') writeFileSync(LIST, actual.join('\n') + '\n');
  const expected = readFileSync(LIST, 'utf8').split('\n').filter(Boolean);
  const added = actual.filter((line) => !expected.includes(line));
  const removed = expected.filter((line) => !actual.includes(line));
  assert.deepEqual({ added, removed }, { added: [], removed: [] }, 'the public API changed: update test/types/public-api.txt if that is meant');
});
