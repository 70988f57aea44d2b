/**
 * The demo's timeline picture: one panel per scheme and fault, one lane per worker, a bar for every critical
 * section (grant → write), a light bar for the release, hatching for a pause, and in red the time two workers
 * were in their critical section at once. A plain SVG string: no dependency.
 *
 * @module
 */
import { verdict, type RunResult } from './analyze.js';
import { FAULT_IDS, SCHEME_IDS, SCHEMES } from './schemes.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const n = (x: number) => (Math.round(x * 10) / 10).toString();

/** Renders the results (any subset of schemes × faults) as an SVG document. */
export function timelineSvg(results: readonly RunResult[], opts: { leaseMs: number }): string {
  const schemes = SCHEME_IDS.filter((s) => results.some((r) => r.scheme === s));
  const faults = FAULT_IDS.filter((f) => results.some((r) => r.fault === f));
  const workers = Math.max(2, ...results.map((r) => r.workers));
  const labelW = 200;
  const panelW = 360;
  const gap = 16;
  const laneH = 11;
  const panelH = 22 + workers * laneH + 30;
  const top = 102;
  const width = labelW + faults.length * (panelW + gap);
  const height = top + schemes.length * (panelH + gap) + 10;
  // a paused or slow worker may finish after the run's end: show it
  const duration = Math.max(...results.map((r) => Math.max(r.endAt, ...r.spans.map((s) => s.end), ...r.marks.map((m) => m.t)) - r.startAt));
  const runMs = Math.max(...results.map((r) => r.endAt - r.startAt));
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">`,
    `<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="2" height="4" fill="#888"/></pattern></defs>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="600">holdfast demo: who held the lock when (five Redis lock schemes and holdfast, ${workers} workers, lease ${opts.leaseMs} ms, runs of ${(runMs / 1000).toFixed(1)} s)</text>`,
  );
  // legend
  const legend: [string, string][] = [
    ['<rect width="18" height="8" fill="#4a78b5"/>', 'critical section (grant → write)'],
    ['<rect width="18" height="8" fill="#b9cde8"/>', 'release'],
    ['<rect width="18" height="8" fill="url(#hatch)"/>', 'paused (stop-the-world)'],
    ['<rect width="18" height="8" fill="#e0312b"/>', 'two holders at once'],
    ['<rect width="18" height="8" fill="#c9c9c9"/>', "dead worker's lock left behind"],
    ['<path d="M3 0 L15 8 M15 0 L3 8" stroke="#000" stroke-width="2"/>', 'crash'],
    ['<path d="M3 0 L15 8 M15 0 L3 8" stroke="#f28c00" stroke-width="2.5"/>', 'stale write refused (fencing)'],
    ['<path d="M3 0 L15 0 L9 8 Z" fill="#e0312b"/>', "deleted another's lock"],
    ['<path d="M9 0 L9 9" stroke="#777" stroke-dasharray="2 2"/>', `end of the run (${(runMs / 1000).toFixed(1)} s; later bars: paused or slow workers finishing)`],
  ];
  // the legend wraps onto a second row rather than running past the picture's edge
  let lx = 10;
  let ly = 34;
  for (const [icon, label] of legend) {
    const w = 30 + label.length * 5.6;
    if (lx + w > width && lx > 10) {
      lx = 10;
      ly += 16;
    }
    parts.push(`<g transform="translate(${lx},${ly})">${icon}<text x="23" y="8">${esc(label)}</text></g>`);
    lx += w;
  }
  faults.forEach((f, j) => {
    const x = labelW + j * (panelW + gap);
    parts.push(`<text x="${x}" y="${top - 14}" font-size="13" font-weight="600">fault: ${esc(f)}</text>`);
  });
  schemes.forEach((s, i) => {
    const y = top + i * (panelH + gap);
    parts.push(`<text x="10" y="${y + 20}" font-size="13" font-weight="600">${esc(s)}</text>`);
    parts.push(`<text x="10" y="${y + 36}" fill="#555">${esc(SCHEMES[s].what)}</text>`);
    faults.forEach((f, j) => {
      const r = results.find((x) => x.scheme === s && x.fault === f);
      const x0 = labelW + j * (panelW + gap);
      if (r) parts.push(panel(r, x0, y, panelW, laneH, workers, duration));
    });
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

function panel(r: RunResult, x0: number, y0: number, w: number, laneH: number, workers: number, duration: number): string {
  const plotY = y0 + 22;
  const tx = (t: number) => x0 + (Math.min(Math.max(t - r.startAt, 0), duration) / duration) * w;
  const lane = (id: string) => Number(id.replace(/\D/g, '')) || 0;
  const ly = (id: string) => plotY + lane(id) * laneH;
  const v = verdict(r);
  const bad = !v.startsWith('ok');
  const out: string[] = [];
  out.push(`<rect x="${x0}" y="${plotY - 2}" width="${w}" height="${workers * laneH + 4}" fill="#f7f7f7" stroke="#ddd"/>`);
  out.push(`<text x="${x0}" y="${y0 + 14}" fill="${bad ? '#c0201a' : '#1d7a3a'}" font-weight="600">${esc(v)}</text>`);
  for (let k = 0; k < workers; k++) out.push(`<text x="${x0 - 16}" y="${plotY + k * laneH + 8}" fill="#999" font-size="9">w${k}</text>`);
  // the dead worker's lock, from the crash until someone got the lock again (or the end)
  if (r.crashedAt !== null) {
    const crashed = r.marks.find((m) => m.kind === 'crash');
    const end = r.recoveredAfterMs === null ? r.endAt : r.crashedAt + r.recoveredAfterMs;
    if (crashed) out.push(`<rect x="${n(tx(r.crashedAt))}" y="${ly(crashed.w) + 1}" width="${n(Math.max(1, tx(end) - tx(r.crashedAt)))}" height="${laneH - 3}" fill="#c9c9c9"/>`);
  }
  const bar = (s: { w: string; start: number; end: number }, fill: string) =>
    out.push(`<rect x="${n(tx(s.start))}" y="${ly(s.w) + 1}" width="${n(Math.max(0.8, tx(s.end) - tx(s.start)))}" height="${laneH - 3}" fill="${fill}"/>`);
  for (const s of r.spans) if (s.kind !== 'pause') bar(s, s.kind === 'cs' ? '#4a78b5' : '#b9cde8');
  // red where a critical section overlaps another's
  for (const s of r.spans) {
    if (s.kind !== 'cs') continue;
    for (const o of r.overlapSpans) {
      const a = Math.max(s.start, o.start);
      const b = Math.min(s.end, o.end);
      if (b > a) bar({ w: s.w, start: a, end: b }, '#e0312b');
    }
  }
  for (const s of r.spans) if (s.kind === 'pause') bar(s, 'url(#hatch)');
  for (const m of r.marks) {
    const x = tx(m.t);
    const y = ly(m.w);
    if (m.kind === 'crash') out.push(`<path d="M${n(x - 4)} ${y} L${n(x + 4)} ${y + 8} M${n(x + 4)} ${y} L${n(x - 4)} ${y + 8}" stroke="#000" stroke-width="2"/>`);
    else if (m.kind === 'stale') out.push(`<path d="M${n(x - 4)} ${y} L${n(x + 4)} ${y + 8} M${n(x + 4)} ${y} L${n(x - 4)} ${y + 8}" stroke="#f28c00" stroke-width="2.5"/>`);
    else if (m.kind === 'deleted-other') out.push(`<path d="M${n(x - 5)} ${y - 1} L${n(x + 5)} ${y - 1} L${n(x)} ${y + 8} Z" fill="#e0312b" stroke="#fff" stroke-width="0.5"/>`);
  }
  // the run's end: bars past it are a paused or slow worker finishing
  const endX = n(tx(r.endAt));
  out.push(`<path d="M${endX} ${plotY - 2} L${endX} ${plotY + workers * laneH + 2}" stroke="#777" stroke-dasharray="2 2"/>`);
  // two short caption lines, so that a caption never runs into the next panel
  const captions = [
    `${r.writes} writes, counter ${r.counter} · lost updates ${r.lostUpdates} · deleted others' ${r.deletedOthers}`,
    `two holders ${r.overlapMs} ms` + (r.scheme === 'holdfast' ? ` · stale writes refused ${r.staleRejected}` : ''),
  ];
  captions.forEach((c, k) => out.push(`<text x="${x0}" y="${plotY + workers * laneH + 13 + k * 12}" fill="#666" font-size="9.5">${esc(c)}</text>`));
  return out.join('\n');
}
