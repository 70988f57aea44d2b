#!/usr/bin/env bash
# The README's quick start, as a new user meets it: `npm pack` this package, install the tarball and ioredis into a
# fresh app in a temp dir, paste the quick start's ES-module and CommonJS forms (the first two blocks under
# "## Quick start"), and run each against a throwaway redis-server. Each must exit 0 by itself within 20 s. Then
# each again with Redis down (nothing listening on the port): it must exit non-zero within 15 s, its stderr one line
# that names the cause (the refused connection).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
server=${HOLDFAST_REDIS_SERVER:-redis-server}
app=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-quickstart.XXXXXX")
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$app"
}
trap cleanup EXIT

tarball=$(npm pack --silent --pack-destination "$app" | tail -1)
# the blocks, as a reader would copy them
node -e '
  const text = require("fs").readFileSync(process.argv[1], "utf8");
  const section = text.slice(text.indexOf("## Quick start"));
  const blocks = [...section.matchAll(/```js\n([\s\S]*?)```/g)].slice(0, 2).map((m) => m[1]);
  if (blocks.length !== 2) throw new Error("expected the ES-module and the CommonJS quick start blocks");
  require("fs").writeFileSync(process.argv[2] + "/app.mjs", blocks[0]);
  require("fs").writeFileSync(process.argv[2] + "/app.cjs", blocks[1]);
' README.md "$app"

cd "$app"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "./$tarball" ioredis >/dev/null
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$app" >/dev/null &
redis_pid=$!
for _ in $(seq 50); do node -e 'require("net").connect(+process.argv[1],"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))' "$port" && break; sleep 0.1; done

for file in app.mjs app.cjs; do
  echo "quick start ($file), node $(node --version):"
  REDIS_URL="redis://127.0.0.1:$port" timeout 20 node "$file"
done
echo "quick start: both forms ran and exited 0 on their own"

kill "$redis_pid" 2>/dev/null || true
wait "$redis_pid" 2>/dev/null || true
redis_pid=
for file in app.mjs app.cjs; do
  started=$(date +%s%N)
  code=0
  REDIS_URL="redis://127.0.0.1:$port" timeout 15 node "$file" >/dev/null 2>"$app/stderr" || code=$?
  took=$(( ($(date +%s%N) - started) / 1000000 ))
  lines=$(wc -l <"$app/stderr")
  echo "quick start ($file), Redis down: exit $code after $took ms: $(cat "$app/stderr")"
  if [ "$code" = 0 ] || [ "$code" = 124 ]; then echo "expected a non-zero exit within 15 s" >&2; exit 1; fi
  if [ "$lines" != 1 ] || ! grep -q ECONNREFUSED "$app/stderr"; then echo "expected one line on stderr naming the refused connection" >&2; exit 1; fi
done
echo "quick start: with Redis down both forms exited non-zero with a one-line cause"
