import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { displayWidth, durationOption, table } from '../../src/cli/common.js';

describe('CLI helpers', () => {
  it('pads table columns by terminal width: a CJK character takes two columns', () => {
    assert.equal(displayWidth('订单:42'), 7);
    assert.equal(displayWidth('café'), 4);
    assert.equal(displayWidth('e\u0301'), 1);
    const lines = table(['NAME', 'OWNER'], [['订单:42', 'a'], ['orders:42', 'b']]).split('\n');
    assert.deepEqual(
      lines.map((l) => displayWidth(l.slice(0, l.lastIndexOf(' ') + 1))),
      [11, 11, 11],
      lines.join('\n'),
    );
  });

  it('reads durations with units; a bare number is milliseconds, or seconds where asked', () => {
    assert.equal(durationOption('250', 'wait', 'exec'), 250);
    assert.equal(durationOption('500ms', 'wait', 'exec'), 500);
    assert.equal(durationOption('10s', 'wait', 'exec'), 10_000);
    assert.equal(durationOption('1.5s', 'wait', 'exec'), 1500);
    assert.equal(durationOption('2m', 'wait', 'exec'), 120_000);
    assert.equal(durationOption('1h', 'wait', 'exec'), 3_600_000);
    assert.equal(durationOption(undefined, 'wait', 'exec'), undefined);
    for (const bad of ['-1', '1.5', '10 s', 's', '1d', '0.0001s']) assert.throws(() => durationOption(bad, 'wait', 'exec'), /--wait must be a duration/, bad);
    assert.throws(() => durationOption('50ms', 'lease', 'exec', 100), /--lease must be between 100 ms/);
    // exec --wait: a bare number is seconds (flock -w); with a unit it keeps its unit
    assert.equal(durationOption('10', 'wait', 'exec', 0, 's'), 10_000);
    assert.equal(durationOption('0.5', 'wait', 'exec', 0, 's'), 500);
    assert.equal(durationOption('250ms', 'wait', 'exec', 0, 's'), 250);
    assert.equal(durationOption('2m', 'wait', 'exec', 0, 's'), 120_000);
    assert.throws(() => durationOption('0.0001', 'wait', 'exec', 0, 's'), /a bare number is seconds/);
  });
});
