/**
 * The history the harness records: one JSON object per line, every timestamp (`ref`, `from`, `to`, `validUntil`,
 * `sendRef`) in reference-clock ms (see clock.ts), so events of all processes sort on one axis.
 *
 * Outcomes follow Jepsen: `ok` and `fail` are definite; `info` is unknown (a timed-out acquire may still have been
 * granted in Redis and held until its lease ran out; the client never counts it as held).
 *
 * @module
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/** Fields every event of a worker carries. */
interface Base {
  /** Worker id. */
  w: string;
  /** Reference time of the event. */
  ref: number;
  /** The grant (one acquisition attempt and, if granted, its hold): `${w}#${n}`. */
  grant: string;
}

export type HistoryEvent =
  | (Base & { type: 'acq.inv'; lock: string })
  | (Base & {
      type: 'acq.ok';
      lock: string;
      token: number;
      /** When the client treats the lease as gone (its loss signal fires then). */
      validUntil: number;
      /** When the request that was granted left the client: the key cannot expire before `sendRef + leaseMs`. */
      sendRef: number;
      leaseMs: number;
    })
  | (Base & { type: 'acq.fail' | 'acq.info'; lock: string; code: string })
  | (Base & { type: 'ext.inv' })
  | (Base & { type: 'ext.ok'; validUntil: number; sendRef: number; leaseMs: number })
  | (Base & { type: 'ext.fail' | 'ext.info'; code: string })
  | (Base & { type: 'use.inv'; token: number })
  | (Base & { type: 'use.ok'; token: number; accepted: boolean })
  | (Base & { type: 'use.fail'; code: string })
  | (Base & { type: 'lost'; reason: string })
  | (Base & { type: 'rel.inv' })
  | (Base & { type: 'rel.ok' })
  | (Base & { type: 'rel.fail' | 'rel.info'; code: string })
  | { type: 'stall'; w: string; from: number; to: number }
  | NemesisEvent;

/** A fault the runner injected (or healed): `to` is the end of the fault, `from` its start. */
export interface NemesisEvent {
  type: 'nemesis';
  kind: 'pause-client' | 'kill-client' | 'pause-server' | 'restart-server' | 'cut' | 'blackhole' | 'delay' | 'kill-server' | 'migrate-slot';
  /** A worker id or a server name. */
  target: string;
  /** The Redis Cluster slot a `migrate-slot` moved. */
  slot?: number;
  from: number;
  to: number;
  /** The lock server lost its data (restart without persistence): lock state and fencing counters are gone. */
  dataLoss?: boolean;
}

/** Appends events to a JSONL file, one synchronous write each, so a kill -9 loses at most the event being written. */
export class HistoryWriter {
  readonly #fd: number;
  constructor(path: string) {
    this.#fd = openSync(path, 'a');
  }
  write(event: HistoryEvent): void {
    writeSync(this.#fd, JSON.stringify(event) + '\n');
  }
  close(): void {
    closeSync(this.#fd);
  }
}

/** Reads a JSONL history, ignoring a torn last line (a process killed mid-write). */
export function readHistory(path: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as HistoryEvent);
    } catch {
      /* torn line */
    }
  }
  return events;
}
