/**
 * The one fingerprint of an owner id (or a permit id, or a client's id): what every inspection, diagnostics payload,
 * span, `holdfast inspect`/`jobs` and the dashboard show instead of the id (whoever knows an id can release its hold).
 * The first 12 hex digits of the SHA-1 of the id: the form Lua computes too (`redis.sha1hex`, see rw/readers-3.lua),
 * so a script and the client agree on it.
 */
import crypto from 'node:crypto';
import { checkName } from './validate.js';

// crypto.hash (one call, no Hash object) from Node 20.12 on
const sha1: (text: string) => string =
  typeof crypto.hash === 'function' ? (text) => crypto.hash('sha1', text, 'hex') : (text) => crypto.createHash('sha1').update(text).digest('hex');

/**
 * The fingerprint of an owner id (or a permit id): the first 12 hex digits of its SHA-1. The same id gives the same
 * fingerprint in every process, in Lua and in JavaScript.
 */
export function fingerprint(owner: string): string {
  return sha1(owner).slice(0, 12);
}

/** {@link fingerprint}, checking first that `owner` is a valid owner id (what `ownerFingerprint` always did). */
export function ownerFingerprint(owner: string): string {
  return fingerprint(checkName(owner, 'owner'));
}
