/**
 * The page `holdfast dashboard` serves: one HTML document, its script and its style, without a framework or a build
 * step. The script keeps one card per primitive and updates it in place from the server-sent events, so a lease bar
 * shrinks smoothly between two updates; text from Redis is only ever set as `textContent`.
 *
 * @module
 */

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>holdfast dashboard</title>
<link rel="stylesheet" href="app.css">
</head>
<body>
<header>
  <h1>holdfast <span id="prefix"></span></h1>
  <input id="search" type="search" placeholder="Search names, kinds, holders…" autocomplete="off" aria-label="Search">
  <p id="status">connecting…</p>
</header>
<main id="entries" aria-live="polite"></main>
<p id="empty" hidden>Nothing held under this prefix.</p>
<script src="app.js"></script>
</body>
</html>
`;

export const DASHBOARD_CSS = `:root { color-scheme: light dark; --fg: #1d2330; --muted: #6b7385; --card: #fff; --bg: #f3f4f7; --bar: #2f7de1; --low: #e0922f; --line: #dde1e8; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ee; --muted: #9aa2b3; --card: #1c212b; --bg: #12161d; --line: #2b3240; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { position: sticky; top: 0; background: var(--bg); padding: 12px 20px; border-bottom: 1px solid var(--line); display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
h1 { font-size: 18px; margin: 0; }
h1 span { color: var(--muted); font-weight: normal; font-family: ui-monospace, monospace; }
#search { flex: 1; min-width: 200px; max-width: 420px; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; background: var(--card); color: var(--fg); }
#status { margin: 0; color: var(--muted); }
#status.bad { color: #d04545; }
main { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 12px; padding: 16px 20px; }
#empty { padding: 0 20px; color: var(--muted); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card h2 { font-size: 15px; margin: 0 0 6px; display: flex; gap: 8px; align-items: baseline; word-break: break-all; }
.kind { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); border: 1px solid var(--line); border-radius: 4px; padding: 0 5px; white-space: nowrap; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
dt { color: var(--muted); }
dd { margin: 0; font-family: ui-monospace, monospace; }
.bar { height: 8px; background: var(--line); border-radius: 4px; overflow: hidden; margin: 6px 0 2px; }
.fill { height: 100%; background: var(--bar); width: 0; transition: width var(--interval, 1s) linear; }
.fill.low { background: var(--low); }
.left { font-size: 12px; color: var(--muted); }
ol, ul { margin: 4px 0; padding-left: 20px; font-family: ui-monospace, monospace; }
.sub { border-top: 1px dashed var(--line); margin-top: 6px; padding-top: 4px; }
.sub h3 { font-size: 12px; color: var(--muted); margin: 0; font-weight: normal; }
button.unlock { margin-top: 8px; border: 1px solid #d04545; color: #d04545; background: transparent; border-radius: 6px; padding: 3px 10px; cursor: pointer; }
`;

export const DASHBOARD_JS = `'use strict';
(() => {
  const token = new URLSearchParams(location.search).get('token');
  const query = token ? '?token=' + encodeURIComponent(token) : '';
  const main = document.getElementById('entries');
  const search = document.getElementById('search');
  const status = document.getElementById('status');
  const empty = document.getElementById('empty');
  const cards = new Map();
  const longest = new Map();
  let last;

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  };
  const ms = (v) => (v === null || v === undefined ? '-' : v >= 10000 ? Math.round(v / 1000) + ' s' : v >= 1000 ? (v / 1000).toFixed(1) + ' s' : Math.round(v) + ' ms');

  // A lease bar: the share left of the longest lease seen for this holder (a renewal raises it again).
  function bar(key, remaining) {
    const wrap = el('div', 'lease');
    const track = el('div', 'bar');
    const fill = el('div', 'fill');
    track.append(fill);
    const max = Math.max(longest.get(key) || 0, remaining || 0);
    longest.set(key, max);
    const share = max > 0 && remaining ? remaining / max : 0;
    fill.style.width = (100 * share).toFixed(2) + '%';
    if (share < 0.25) fill.classList.add('low');
    wrap.dataset.remaining = String(remaining === null || remaining === undefined ? '' : remaining);
    wrap.append(track, el('div', 'left', remaining === null || remaining === undefined ? 'no expiry' : ms(remaining) + ' left'));
    return wrap;
  }
  // The main bar of a card is kept, so that its width animates from one reading to the next.
  function mainBar(card, key, remaining) {
    let wrap = card.querySelector(':scope > .lease');
    if (!wrap) {
      wrap = bar(key, remaining);
      card.append(wrap);
      return;
    }
    const max = Math.max(longest.get(key) || 0, remaining || 0);
    longest.set(key, max);
    const share = max > 0 && remaining ? remaining / max : 0;
    const fill = wrap.querySelector('.fill');
    fill.style.width = (100 * share).toFixed(2) + '%';
    fill.classList.toggle('low', share < 0.25);
    wrap.dataset.remaining = String(remaining === null || remaining === undefined ? '' : remaining);
    wrap.querySelector('.left').textContent = remaining === null || remaining === undefined ? 'no expiry' : ms(remaining) + ' left';
  }
  function facts(pairs) {
    const dl = el('dl');
    for (const [k, v] of pairs) dl.append(el('dt', '', k), el('dd', '', v));
    return dl;
  }
  function section(title, items) {
    const s = el('div', 'sub');
    s.append(el('h3', '', title));
    if (items) s.append(items);
    return s;
  }
  const who = (h) => (h.label ? h.holder + ' · ' + h.label : h.holder);
  const heldFor = (h) => (h.heldForAtLeast ? '≥ ' : '') + ms(h.heldForMs);
  function leaseList(key, leases, label) {
    const ul = el('ul');
    for (const l of leases) {
      const li = el('li', 'holder-lease');
      li.append(el('span', 'holder', who(l)), document.createTextNode(label(l)), bar(key + '\\u0000' + l.holder, l.remainingTtl));
      ul.append(li);
    }
    return ul;
  }
  function waiterList(queue) {
    const ol = el('ol');
    for (const w of queue) ol.append(el('li', 'waiter', who(w) + (w.waitedMs === undefined ? '' : ' · waiting ' + ms(w.waitedMs))));
    return ol;
  }
  function fill(card, e) {
    const key = e.kind + '\\u0000' + e.name;
    const body = card.querySelector('.body');
    body.replaceChildren();
    let remaining = null;
    let showBar = false;
    if (e.kind === 'lock' || e.kind === 'fair-lock' || e.kind === 'read-write-lock') {
      const rw = e.kind === 'read-write-lock';
      const h = rw ? e.holders.find((x) => x.side === 'write') : e.holders[0];
      remaining = h ? h.remainingTtl : null;
      showBar = !!h;
      const rows = [[rw ? 'writer' : 'holder', h ? h.holder : '-']];
      if (h && h.label) rows.push(['label', h.label]);
      if (h) rows.push(['holds', h.holdCount], ['held for', heldFor(h)]);
      rows.push(['token', e.token], ['last token', e.lastToken], [rw ? 'waiting writers' : 'waiting', e.waiters === null ? '-' : e.waiters]);
      body.append(facts(rows));
      if (rw) {
        const readers = e.holders.filter((x) => x.side === 'read');
        body.append(section('readers: ' + readers.length, readers.length ? leaseList(key, readers, (r) => ' × ' + r.holdCount + ' · held ' + heldFor(r)) : null));
      } else if (e.queue.length || e.waiters) {
        body.append(section((e.kind === 'fair-lock' ? 'queue: ' : 'waiters: ') + e.waiters + ' waiting', e.queue.length ? waiterList(e.queue) : null));
      }
    } else if (e.kind === 'permit-semaphore') {
      body.append(facts([['free', e.available], ['held', e.acquired], ['leases', e.holders.length]]));
      if (e.holders.length) body.append(section('leases', leaseList(key, e.holders, (l) => ' · ' + l.permits + (l.permits === 1 ? ' permit' : ' permits') + ' · held ' + heldFor(l))));
    } else if (e.kind === 'semaphore') {
      body.append(facts([['free permits', e.available]]));
    } else if (e.kind === 'latch') {
      remaining = e.remainingTtl;
      showBar = remaining !== null;
      body.append(facts([['count', e.count]]));
    } else if (e.kind === 'job' && e.job) {
      const j = e.job;
      remaining = e.remainingTtl;
      showBar = j.running;
      const by = (fp, label) => (fp ? who({ holder: fp, label }) : '-');
      const rows = [['now', j.running ? 'running on ' + by(j.runningOn, j.runningOnLabel) + ' for ' + ms(j.runningForMs) : e.remainingTtl ? 'locked ' + ms(e.remainingTtl) : 'idle']];
      if (j.schedule) rows.push(['schedule', j.schedule]);
      rows.push(['last run', j.lastRunTick ? new Date(j.lastRunTick).toLocaleString() : '-'], ['by', by(j.lastRunBy, j.lastRunByLabel)], ['took', ms(j.lastRunMs)]);
      rows.push(['result', j.lastRunTick === null ? '-' : j.lastError === null ? 'ok' : 'failed' + (j.failuresInARow > 1 ? ' ×' + j.failuresInARow : '') + ': ' + j.lastError]);
      body.append(facts(rows));
    } else {
      body.append(facts([['held', e.held ? 'yes' : 'no']]));
    }
    if (showBar) mainBar(card, key, remaining);
    else card.querySelector(':scope > .lease')?.remove();
    if (last && last.allowUnlock && e.held && last.forceable.includes(e.kind)) {
      const button = el('button', 'unlock', 'Force unlock…');
      button.addEventListener('click', () => unlock(e.kind, e.name));
      body.append(button);
    }
    const people = [...e.holders, ...e.queue].flatMap((h) => [h.holder, h.label || '']);
    if (e.job) people.push(e.job.runningOn || '', e.job.runningOnLabel || '', e.job.lastRunBy || '', e.job.lastRunByLabel || '');
    card.dataset.search = [e.name, e.kind, ...people].join(' ').toLowerCase();
  }
  function render(snapshot) {
    last = snapshot;
    document.getElementById('prefix').textContent = snapshot.prefix;
    const seen = new Set();
    for (const e of snapshot.entries) {
      const key = e.kind + '\\u0000' + e.name;
      seen.add(key);
      let card = cards.get(key);
      if (!card) {
        card = el('section', 'card');
        card.dataset.kind = e.kind;
        card.dataset.name = e.name;
        const h = el('h2');
        h.append(el('span', 'name', e.name), el('span', 'kind', e.kind.replace(/-/g, ' ')));
        card.append(h, el('div', 'body'));
        cards.set(key, card);
        main.append(card);
      }
      fill(card, e);
    }
    for (const [key, card] of cards) {
      if (!seen.has(key)) {
        card.remove();
        cards.delete(key);
      }
    }
    filter();
    const time = new Date(snapshot.at).toLocaleTimeString();
    status.className = snapshot.error ? 'bad' : '';
    status.textContent = snapshot.error
      ? snapshot.error + (snapshot.entries.length ? ' (showing the reading of ' + time + ')' : '')
      : snapshot.entries.length + ' shown · ' + snapshot.scanned + ' keys scanned' + (snapshot.truncated ? ' (stopped at the cap: some may be missing)' : '') + ' · ' + time + (snapshot.allowUnlock ? ' · force-unlock on' : ' · read-only');
  }

  function filter() {
    const q = search.value.trim().toLowerCase();
    let visible = 0;
    for (const card of cards.values()) {
      card.hidden = q !== '' && !card.dataset.search.includes(q);
      if (!card.hidden) visible++;
    }
    empty.hidden = visible > 0;
    empty.textContent = cards.size > 0 ? 'Nothing matches "' + search.value + '".' : last && last.error ? 'Cannot tell what is held: ' + last.error : 'Nothing held under this prefix.';
  }

  async function unlock(kind, name) {
    if (!confirm('Force-unlock ' + kind.replace(/-/g, ' ') + ' "' + name + '"? Its holder is not told until its next renewal or the end of its lease.')) return;
    const res = await fetch('/api/unlock' + query, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Holdfast-Dashboard': 'unlock' }, body: JSON.stringify({ kind, name }) });
    if (!res.ok) alert('Force-unlock failed: ' + (await res.text()));
  }

  search.addEventListener('input', filter);
  const events = new EventSource('/events' + query);
  events.onmessage = (m) => render(JSON.parse(m.data));
  events.onerror = () => {
    status.className = 'bad';
    status.textContent = 'disconnected, retrying…';
  };
})();
`;
