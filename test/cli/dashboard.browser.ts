/**
 * `holdfast dashboard` in a real headless Chromium (Debian's `chromium`, driven with playwright-core): the page shows
 * a lock the test holds, with its holder's fingerprint; its lease bar shrinks; the search filters; the lock disappears
 * after its release. A screenshot goes to results/tmp/dashboard.png.
 *
 * Not part of `npm test` (a browser start is slow on a small machine): `npm run test:browser`, which `.ci/run` runs.
 * When `/usr/bin/chromium` is missing and the test runs as root, it installs Debian's package first.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { fingerprint, Holdfast } from '../../src/index.js';
import { ensureBuilt, ROOT, sleep } from '../support/cli.js';
import { startDashboard } from '../support/dashboard.js';
import { RedisServer } from '../support/redis-server.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = join(ROOT, 'results', 'tmp', 'dashboard.png');

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

describe('holdfast dashboard in headless Chromium', { timeout: 180_000 }, () => {
  let server: RedisServer;
  let redis: Redis;
  let holdfast: Holdfast;
  let profile: string;
  let context: BrowserContext;

  before(async () => {
    ensureChromium();
    await ensureBuilt();
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    holdfast = new Holdfast({ redis, prefix: 'web:' });
    profile = mkdtempSync(join(tmpdir(), 'holdfast-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      viewport: { width: 1280, height: 860 },
    });
  });
  after(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    await holdfast?.close();
    redis?.disconnect();
    await server?.stop();
  });

  /** The lease bar of a card: ms left (from the data) and the bar's width share (from the layout). */
  async function leaseOf(page: Page, selector: string): Promise<{ remaining: number; share: number }> {
    return page.$eval(selector, (card) => {
      const lease = card.querySelector(':scope > .lease') as HTMLElement;
      const fill = lease.querySelector('.fill') as HTMLElement;
      const track = lease.querySelector('.bar') as HTMLElement;
      return { remaining: Number(lease.dataset.remaining), share: fill.getBoundingClientRect().width / track.getBoundingClientRect().width };
    });
  }

  it('shows a held lock, its bar shrinking, finds it by search, and drops it after its release', async () => {
    // some company for the screenshot: a fair lock with a queue, readers, expirable permits, a latch
    const fair = await holdfast.fairLock('payments:eu').acquire({ lease: 60_000 });
    const waiters = [holdfast.fairLock('payments:eu').acquire({ timeout: 60_000 }), holdfast.fairLock('payments:eu').acquire({ timeout: 60_000 })];
    const readers = [await holdfast.readWriteLock('catalog').readLock().acquire({ lease: 45_000 }), await holdfast.readWriteLock('catalog').readLock().acquire({ lease: 20_000 })];
    await holdfast.permitExpirableSemaphore('gpu').trySetPermits(4);
    const permit = await holdfast.permitExpirableSemaphore('gpu').acquire(3, { lease: 40_000 });
    await holdfast.countDownLatch('shards-loaded').trySetCount(8);
    const held = await holdfast.lock('orders:42').acquire({ lease: 12_000 });

    const dash = await startDashboard(['--prefix', 'web:', '--interval', '300'], { REDIS_URL: server.url });
    const page = await context.newPage();
    try {
      await page.goto(dash.url);
      const card = 'section.card[data-kind="lock"][data-name="orders:42"]';
      await page.waitForSelector(card, { timeout: 15_000 });
      assert.equal(await page.$eval(`${card} dd`, (dd) => dd.textContent), fingerprint(held.owner), 'the holder is shown by fingerprint');
      assert.ok(!(await page.content()).includes(held.owner), 'the page never shows the owner id');

      const first = await leaseOf(page, card);
      await sleep(1500);
      const later = await leaseOf(page, card);
      assert.ok(later.remaining < first.remaining - 800, `the remaining lease shrinks: ${first.remaining} → ${later.remaining}`);
      assert.ok(later.share < first.share, `the bar shrinks: ${first.share.toFixed(3)} → ${later.share.toFixed(3)}`);
      assert.ok(later.share > 0 && later.share < 1, String(later.share));

      // the fair lock's queue and the read-write lock's readers are there too
      await page.waitForFunction(() => document.querySelectorAll('section[data-name="payments:eu"] li.waiter').length === 2, undefined, { timeout: 10_000 });
      assert.equal(await page.$$eval('section[data-kind="read-write-lock"] li.holder-lease', (li) => li.length), 2);

      await page.fill('#search', 'orders');
      assert.equal(await page.$$eval('section.card:not([hidden])', (cards) => cards.map((c) => (c as HTMLElement).dataset.name).join()), 'orders:42');
      await page.fill('#search', fingerprint(permit.id));
      assert.equal(await page.$$eval('section.card:not([hidden])', (cards) => cards.map((c) => (c as HTMLElement).dataset.name).join()), 'gpu', 'search by holder fingerprint');
      await page.fill('#search', '');

      mkdirSync(join(ROOT, 'results', 'tmp'), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      assert.ok(existsSync(SCREENSHOT));

      await held.release();
      await page.waitForSelector(card, { state: 'detached', timeout: 10_000 });
      assert.equal(await page.$(card), null, 'the released lock is gone from the page');
    } finally {
      await page.close();
      await dash.stop();
      await held.release();
      await fair.release();
      for (const w of waiters) await (await w).release();
      for (const r of readers) await r.release();
      await permit.release();
      await holdfast.countDownLatch('shards-loaded').delete();
    }
  });
});
