/**
 * test/support/pgbouncer.ts against the real server: a transaction-mode PgBouncer passes parameterised queries and
 * transactions, lets one server connection serve two clients, and does not deliver NOTIFY to a LISTEN made through
 * it. Skipped when no PostgreSQL answers at POSTGRES_URL or pgbouncer is not installed (scripts/ensure-servers.sh
 * installs both).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { hasBinary } from '../support/binaries.js';
import { PGBOUNCER, PgBouncer } from '../support/pgbouncer.js';
import { POSTGRES_URL, openPool, postgresAvailable } from '../support/postgres.js';

const skip = !(await postgresAvailable())
  ? `no PostgreSQL at ${POSTGRES_URL}`
  : !hasBinary(PGBOUNCER)
    ? `${PGBOUNCER} is not installed`
    : false;

async function client(url: string): Promise<pg.Client & { errors: Error[] }> {
  const c = Object.assign(new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 }), { errors: [] as Error[] });
  c.on('error', (e) => c.errors.push(e));
  await c.connect();
  return c;
}

const pid = async (c: pg.Client | pg.Pool): Promise<number> => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

async function until(what: string, condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('PgBouncer in transaction mode', { skip }, () => {
  describe('a pool of 4 server connections', () => {
    let bouncer: PgBouncer;
    before(async () => {
      bouncer = await PgBouncer.start({ poolMode: 'transaction', defaultPoolSize: 4, maxClientConn: 50 });
    });
    after(() => bouncer?.stop());

    it('listens on 127.0.0.1 only, on its own port, not as root', () => {
      assert.equal(bouncer.url, `postgres://postgres@127.0.0.1:${bouncer.port}/postgres`);
      assert.match(bouncer.log, new RegExp(`listening on 127\\.0\\.0\\.1:${bouncer.port}\\b`));
      assert.doesNotMatch(bouncer.log, /listening on unix:/);
      if (process.getuid?.() === 0) {
        const status = readFileSync(`/proc/${bouncer.pid}/status`, 'utf8');
        assert.doesNotMatch(status, /^Uid:\s+0\b/m, 'pgbouncer does not run as root');
      }
    });

    it('passes parameterised queries from a pg.Pool, 40 at once over 10 client connections', async () => {
      const pool = openPool(bouncer.url, 10);
      try {
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => pool.query<{ n: number; s: string }>('SELECT $1::int + 1 AS n, $2::text AS s', [i, `v${i}`])),
        );
        results.forEach((r, i) => assert.deepEqual(r.rows, [{ n: i + 1, s: `v${i}` }]));
        assert.deepEqual(pool.errors, []);
      } finally {
        await pool.end();
      }
    });

    it('runs a transaction on one server connection from BEGIN to COMMIT', async () => {
      const pool = openPool(bouncer.url, 2);
      try {
        const c = await pool.connect();
        try {
          await c.query('BEGIN');
          const first = await pid(c);
          await c.query('SELECT pg_sleep(0.05)');
          assert.equal(await pid(c), first);
          const { rows } = await c.query<{ t: string }>(`SELECT current_setting('transaction_isolation') AS t`);
          assert.equal(rows[0]!.t, 'read committed');
          await c.query('COMMIT');
        } finally {
          c.release();
        }
      } finally {
        await pool.end();
      }
    });
  });

  it('serves two connected clients with one server connection (default_pool_size = 1): the same pg_backend_pid()', async () => {
    const bouncer = await PgBouncer.start({ poolMode: 'transaction', defaultPoolSize: 1 });
    const clients: pg.Client[] = [];
    try {
      const a = await client(bouncer.url);
      clients.push(a);
      const b = await client(bouncer.url);
      clients.push(b);
      const [pa, pb] = [await pid(a), await pid(b)];
      assert.equal(pa, pb);
      // and a session setting made by one is seen by the other: the session belongs to the server connection
      await a.query(`SET application_name = 'hf-set-by-a'`);
      assert.equal((await b.query<{ n: string }>(`SELECT current_setting('application_name') AS n`)).rows[0]!.n, 'hf-set-by-a');
    } finally {
      await Promise.allSettled(clients.map((c) => c.end()));
      await bouncer.stop();
    }
  });

  it('session mode for comparison: two connected clients, two server connections', async () => {
    const bouncer = await PgBouncer.start({ poolMode: 'session', defaultPoolSize: 2 });
    const clients: pg.Client[] = [];
    try {
      const a = await client(bouncer.url);
      clients.push(a);
      const b = await client(bouncer.url);
      clients.push(b);
      assert.notEqual(await pid(a), await pid(b));
    } finally {
      await Promise.allSettled(clients.map((c) => c.end()));
      await bouncer.stop();
    }
  });

  it('does not deliver NOTIFY to a LISTEN made through it, sent directly or through the bouncer', async () => {
    const bouncer = await PgBouncer.start({ poolMode: 'transaction', defaultPoolSize: 1 });
    const channel = `hf_chan_${process.pid}_${Date.now()}`;
    const clients: pg.Client[] = [];
    try {
      const listener = await client(bouncer.url);
      clients.push(listener);
      const other = await client(bouncer.url);
      clients.push(other);
      const direct = await client(POSTGRES_URL);
      clients.push(direct);
      const got: string[] = [];
      listener.on('notification', (n) => got.push(`listener:${n.payload}`));
      other.on('notification', (n) => got.push(`other:${n.payload}`));

      await listener.query(`LISTEN ${channel}`);
      const listening = await pid(listener); // the server connection the LISTEN ran on (the pool's only one)
      // that server connection is idle, back in the pool (the LISTEN stays in effect there: see the NOTIFYs below)
      const { rows } = await direct.query<{ state: string }>('SELECT state FROM pg_stat_activity WHERE pid = $1', [listening]);
      assert.deepEqual(rows, [{ state: 'idle' }]);

      // sent directly: it reaches the idle server connection; PgBouncer has no client to give it to, and drops it
      await direct.query(`NOTIFY ${channel}, 'direct'`);
      await until('pgbouncer saw the notification', () => /got packet 'A' from server when not linked/.test(bouncer.log));
      // sent through the bouncer by another client: it runs on the listening server connection, so the sender gets it
      await other.query(`NOTIFY ${channel}, 'through-bouncer'`);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(got, ['other:through-bouncer']);
      // the server connection was kept: the listener's next statement runs there again
      assert.equal(await pid(listener), listening);
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(!got.some((g) => g.startsWith('listener:')), got.join(', '));
    } finally {
      await Promise.allSettled(clients.map((c) => c.end()));
      await bouncer.stop();
    }
  });

  it('stop() ends the process and removes its files', async () => {
    const bouncer = await PgBouncer.start({ poolMode: 'transaction' });
    const c = await client(bouncer.url);
    assert.equal((await c.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
    await bouncer.stop();
    assert.equal(bouncer.running, false);
    assert.equal(existsSync(bouncer.dir), false);
    await assert.rejects(c.query('SELECT 1'));
    await c.end().catch(() => {});
  });
});
