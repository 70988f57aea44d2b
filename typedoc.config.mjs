// The API reference (`npm run docs`): the entry points marked `docs` in entries.json.
import { ENTRIES } from './scripts/entries.mjs';

/** @type {Partial<import('typedoc').TypeDocOptions>} */
const config = {
  $schema: 'https://typedoc.org/schema.json',
  name: 'holdfast',
  entryPoints: ENTRIES.filter((entry) => entry.docs).map((entry) => entry.source),
  out: 'docs/api',
  tsconfig: 'tsconfig.json',
  readme: 'none',
  excludePrivate: true,
  excludeProtected: true,
  excludeInternal: true,
  excludeExternals: true,
  validation: {
    notExported: true,
    invalidLink: true,
    notDocumented: true,
  },
  treatWarningsAsErrors: true,
  includeVersion: true,
  githubPages: false,
  intentionallyNotExported: ['CoreSettings', 'RedlockNodes'],
  disableGit: true,
  sourceLinkTemplate: 'https://github.com/holdfast-js/holdfast/blob/main/{path}#L{line}',
};

export default config;
