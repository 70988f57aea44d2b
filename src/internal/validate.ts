/**
 * Argument checks at the API edge. Each throws `TypeError` (wrong type) or `RangeError` (right type, bad value)
 * naming the argument, before anything reaches Redis.
 */

/** Longest lock name accepted, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 1024;

/** Longest duration accepted: about 24.8 days, the largest delay a Node timer can hold. */
export const MAX_DURATION_MS = 2_147_483_647;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return `string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value;
}

/**
 * A non-empty, well-formed Unicode string of at most {@link MAX_NAME_BYTES} UTF-8 bytes that does not start with `}`.
 * A lone UTF-16 surrogate would be sent as U+FFFD, so two different names would be one lock; a leading `}` would
 * leave the Redis Cluster hash tag `{}` empty, scattering the name's keys over several slots.
 */
export function checkName(value: unknown, what = 'name'): string {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string, got ${describe(value)}`);
  if (value.length === 0) throw new RangeError(`${what} must not be empty`);
  if (!value.isWellFormed()) {
    const at = lonelySurrogate(value);
    throw new RangeError(
      `${what} must be well-formed Unicode: it has a lone surrogate U+${value.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0')} at index ${at}`,
    );
  }
  if (value.startsWith('}')) throw new RangeError(`${what} must not start with "}" (it would end the Redis Cluster hash tag before it starts)`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_NAME_BYTES) throw new RangeError(`${what} must be at most ${MAX_NAME_BYTES} bytes, got ${bytes}`);
  return value;
}

/**
 * The key prefix: a string of at most 256 characters, well-formed, whose first `{` (if any) is not closed right
 * away (`{}` is an empty Redis Cluster hash tag: the keys of one name would land in different slots).
 */
export function checkPrefix(value: unknown, what = 'options.prefix'): string {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string, got ${describe(value)}`);
  if (value.length > 256) throw new RangeError(`${what} must be at most 256 characters`);
  if (!value.isWellFormed()) throw new RangeError(`${what} must be well-formed Unicode (it has a lone surrogate at index ${lonelySurrogate(value)})`);
  const open = value.indexOf('{');
  if (open >= 0 && value[open + 1] === '}') throw new RangeError(`${what} must not contain an empty hash tag "{}"`);
  return value;
}

function lonelySurrogate(value: string): number {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** An integer number of milliseconds in `[min, MAX_DURATION_MS]`. */
export function checkDuration(value: unknown, what: string, min = 1): number {
  if (typeof value !== 'number') throw new TypeError(`${what} must be a number of milliseconds, got ${describe(value)}`);
  if (!Number.isInteger(value)) throw new RangeError(`${what} must be a whole number of milliseconds, got ${String(value)}`);
  if (value < min || value > MAX_DURATION_MS) {
    throw new RangeError(`${what} must be between ${min} and ${MAX_DURATION_MS} ms, got ${value}`);
  }
  return value;
}

/** Like {@link checkDuration}, but `undefined` passes through. */
export function optDuration(value: unknown, what: string, min = 1): number | undefined {
  return value === undefined ? undefined : checkDuration(value, what, min);
}

/** A safe integer in `[min, max]`. */
export function checkInt(value: unknown, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw new TypeError(`${what} must be a number, got ${describe(value)}`);
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a whole number, got ${String(value)}`);
  if (value < min || value > max) throw new RangeError(`${what} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** `undefined` or an `AbortSignal`. */
export function optSignal(value: unknown, what = 'signal'): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) throw new TypeError(`${what} must be an AbortSignal, got ${describe(value)}`);
  return value;
}

/** `undefined` or a boolean. */
export function optBoolean(value: unknown, what: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new TypeError(`${what} must be a boolean, got ${describe(value)}`);
  return value;
}

/** `undefined` or a function. */
export function optFunction<F>(value: unknown, what: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new TypeError(`${what} must be a function, got ${describe(value)}`);
  return value as F;
}

/** `undefined` or a plain object; anything else is a `TypeError`. */
export function checkOptions<T extends object>(value: unknown, what = 'options'): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${what} must be an object, got ${Array.isArray(value) ? 'array' : describe(value)}`);
  }
  return value;
}

/**
 * Rejects keys not in `known` (a typo such as `leaseMs` would otherwise be silently ignored), and `null` for any
 * option: leave an option out (or `undefined`) for its default.
 */
export function checkKnownKeys(options: object, known: readonly string[], what = 'options'): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${what}.${key} is not a known option (known: ${known.join(', ')})`);
    if ((options as Record<string, unknown>)[key] === null) {
      throw new TypeError(`${what}.${key} must not be null: leave it out (or pass undefined) for the default`);
    }
  }
}
