// The part of redlock-universal's types the benchmark uses. The package lives in bench/node_modules, installed by
// `npm run bench` (it requires Node >= 22, so it is not among holdfast's devDependencies); this declaration lets
// `npm run typecheck` pass on a clone where it was never installed. With it installed, its own types are used.
declare module 'redlock-universal' {
  export class IoredisAdapter {
    constructor(client: unknown);
  }
  export class NodeRedisAdapter {
    constructor(client: unknown);
  }
  export interface LockHandle {
    readonly key: string;
  }
  export function createLock(options: { adapter: IoredisAdapter | NodeRedisAdapter; key: string; ttl: number; retryAttempts?: number; retryDelay?: number }): {
    acquire(): Promise<LockHandle>;
    release(handle: LockHandle): Promise<boolean>;
  };
}
