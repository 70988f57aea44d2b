/**
 * A client's label (the `label` client option, e.g. host and pid): how inspections name a holder without its owner
 * id. In this process, the diagnostics payloads look it up by the client id inside an owner id; other processes
 * (`holdfast inspect`, `jobs`, the dashboard) read it from the store, where the client keeps one small record per client
 * (`Keys.clientLabel`, by the fingerprint of its client id) with a 60 s TTL, refreshed every 20 s on an unref'd timer
 * and deleted by `close()`. The key is written off the acquire path: no acquisition waits for it or sends it.
 */
import type { Core } from '../core.js';
import { scripts } from '../lua/scripts.gen.js';
import { fingerprint } from './fingerprint.js';

/** The label key's TTL, in ms: a client gone for this long has no label any more. */
export const LABEL_TTL_MS = 60_000;
/** How often a live client refreshes its label key, in ms (and how soon it tries again after a failure: 2 s). */
const REFRESH_MS = 20_000;
const RETRY_MS = 2_000;
/** Longest label, in characters. */
export const MAX_LABEL_LENGTH = 200;

/** client id → label, for the clients of this process that have one. */
const local = new Map<string, string>();

/** The client id inside an owner id minted by a client (`<client id>:<n>` or `<client id>.<n>`), else `undefined`. */
export function clientIdOf(owner: string): string | undefined {
  const match = /^([A-Za-z0-9_-]{22})[:.]\d+$/.exec(owner);
  return match?.[1];
}

/** The label of the client of this process that minted `owner`, if it has one (cheap when no client has a label). */
export function localLabelOf(owner: unknown): string | undefined {
  if (local.size === 0 || typeof owner !== 'string') return undefined;
  const client = clientIdOf(owner);
  return client === undefined ? undefined : local.get(client);
}

/** Checks the `label` option: a non-empty printable string of at most {@link MAX_LABEL_LENGTH} characters. */
export function checkLabel(value: unknown, what = 'options.label'): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string, got ${typeof value}`);
  if (value.length === 0 || value.length > MAX_LABEL_LENGTH) throw new RangeError(`${what} must be 1 to ${MAX_LABEL_LENGTH} characters, got ${value.length}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new RangeError(`${what} must not contain control characters (newlines, tabs…)`);
  return value;
}

/** Keeps one client's label key alive in Redis while the client is open. */
export class LabelAnnouncer {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #key: string;

  constructor(
    private readonly core: Core,
    readonly label: string,
  ) {
    this.#key = core.keys.clientLabel(fingerprint(core.clientId));
    local.set(core.clientId, label);
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#write(), ms);
    this.#timer.unref();
  }

  async #write(): Promise<void> {
    let ok = false;
    try {
      await this.core.run(scripts['label/set'], [this.#key], [this.label, LABEL_TTL_MS]);
      ok = true;
    } catch {
      // Redis unreachable (or not connected yet): try again soon; a label is a courtesy, never an error
    }
    this.#schedule(ok ? REFRESH_MS : RETRY_MS);
  }

  /** Stops refreshing and deletes the key, without waiting for it (best effort: it expires anyway). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    local.delete(this.core.clientId);
    this.core.run(scripts['label/delete'], [this.#key], []).catch(() => {});
  }
}
