/** One entry point of the package (entries.json), with what scripts/entries.mjs derives from it. */
export interface Entry {
  /** Its key in package.json `exports`: `.` or `./<folder>`. */
  readonly subpath: string;
  /** Its source file, `src/….ts`. */
  readonly source: string;
  /** In the API reference (typedoc). */
  readonly docs: boolean;
  /** The optional peer it cannot load without. */
  readonly peer: string | undefined;
  /** Its declarations need the peer's types too. */
  readonly peerTypes: boolean;
  /** Its built name under dist/, without extension: `zookeeper/index`, `integrations/cron`. */
  readonly out: string;
  /** How it is imported: `holdfast`, `holdfast/zookeeper`. */
  readonly specifier: string;
  /** The folder of its own package.json for old resolvers (none for the root). */
  readonly folder: string | undefined;
  /** Its package.json `exports` condition map. */
  readonly exports: {
    readonly import: { readonly types: string; readonly default: string };
    readonly require: { readonly types: string; readonly default: string };
  };
  /** Its folder's package.json (none for the root). */
  readonly folderPackage: { readonly private: true; readonly main: string; readonly module: string; readonly types: string } | undefined;
}

export declare const ENTRIES: readonly Entry[];
