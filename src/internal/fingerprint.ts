/** The owner fingerprint that inspections report instead of an owner id (whoever knows an id can release its hold). */
import { createHash } from 'node:crypto';
import { checkName } from './validate.js';

/** The fingerprint `readers()` reports for `owner`: the first 12 hex digits of the SHA-1 of the id. */
export function ownerFingerprint(owner: string): string {
  return createHash('sha1').update(checkName(owner, 'owner')).digest('hex').slice(0, 12);
}
