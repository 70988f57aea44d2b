/** A dependency-free SVG chart: hand-offs/s per library and contention level, horizontal bars on a log scale. */

interface ChartRow {
  subject: string;
  contenders: number;
  handoffsPerSec: number;
}

const COLORS = ['#8ecae6', '#219ebc', '#023047', '#ffb703'];

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function chart(rows: ChartRow[], levels: number[], title: string): string {
  const subjects = [...new Set(rows.map((r) => r.subject))];
  const left = 230;
  const width = 900;
  const plot = width - left - 30;
  const bar = 9;
  const group = levels.length * bar + 10;
  const top = 60;
  const height = top + subjects.length * group + 50;
  const max = Math.max(10, ...rows.map((r) => r.handoffsPerSec));
  const decades = Math.ceil(Math.log10(max));
  const x = (v: number): number => (v <= 1 ? 0 : (Math.log10(v) / decades) * plot);
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="100%" height="100%" fill="white"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
  levels.forEach((n, i) => {
    const lx = left + i * 130;
    parts.push(`<rect x="${lx}" y="34" width="12" height="12" fill="${COLORS[i % COLORS.length] ?? '#999'}"/>`);
    parts.push(`<text x="${lx + 16}" y="45">${n} contenders</text>`);
  });
  for (let d = 0; d <= decades; d++) {
    const gx = left + (d / decades) * plot;
    parts.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${height - 40}" stroke="#ddd"/>`);
    parts.push(`<text x="${gx}" y="${height - 26}" text-anchor="middle">${(10 ** d).toLocaleString('en-US')}</text>`);
  }
  parts.push(`<text x="${left + plot / 2}" y="${height - 8}" text-anchor="middle">hand-offs per second (holder changes), log scale</text>`);
  subjects.forEach((subject, s) => {
    const gy = top + s * group;
    const bold = subject.startsWith('holdfast') ? ' font-weight="bold"' : '';
    parts.push(`<text x="${left - 8}" y="${gy + (levels.length * bar) / 2 + 4}" text-anchor="end"${bold}>${esc(subject)}</text>`);
    levels.forEach((n, i) => {
      const r = rows.find((row) => row.subject === subject && row.contenders === n);
      if (!r) return;
      const w = Math.max(1, x(r.handoffsPerSec));
      parts.push(`<rect x="${left}" y="${gy + i * bar}" width="${w.toFixed(1)}" height="${bar - 1}" fill="${COLORS[i % COLORS.length] ?? '#999'}"/>`);
      parts.push(`<text x="${left + w + 4}" y="${gy + i * bar + bar - 1}" font-size="9">${Math.round(r.handoffsPerSec).toLocaleString('en-US')}</text>`);
    });
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
