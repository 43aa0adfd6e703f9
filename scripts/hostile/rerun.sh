#!/usr/bin/env bash
# The hostile re-run of issue #17: each fault a hostile run of the CLI found,
# reproduced as a plain CLI run against bin/toolrl, a private redis-server on a
# loopback port and the default policy. Each check asserts the exit status,
# that the output names the fault, and that no output holds a panic trace or a
# password given in a URL. Prints one table row per check; exits 1 if any fails.
#
#   make hostile          (builds bin/toolrl first)
#   scripts/hostile/rerun.sh [CHECK-NAME-SUBSTRING]
set -uo pipefail
cd "$(dirname "$0")/../.."
TOOLRL=${TOOLRL:-bin/toolrl}
MODEL=${MODEL:-models/calc}
PROMPTS=${PROMPTS:-data/calc/prompts.jsonl}
ONLY=${1:-}
SECRET="hostile-S3cret-pw"
WORK=$(mktemp -d /tmp/toolrl-hostile.XXXXXX)
PORT=$(( 20000 + RANDOM % 20000 ))
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

start_redis() { # port [password]
	local args=(--port "$1" --bind 127.0.0.1 --save '' --appendonly yes --dir "$WORK" --appendfilename "aof-$1")
	[[ -n "${2:-}" ]] && args+=(--requirepass "$2")
	redis-server "${args[@]}" >"$WORK/redis-$1.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 50); do redis-cli -p "$1" ${2:+-a "$2"} --no-auth-warning ping >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "hostile: redis-server on port $1 did not start" >&2; exit 2
}

pass=0 fail=0
printf '| check | exit | result | first line of the error |\n|---|---|---|---|\n'
# check NAME WANT PATTERN -- CMD...: WANT is 0 or fail; PATTERN an extended
# regexp the output must match ("" for none).
check() {
	local name=$1 want=$2 pattern=$3; shift 4
	[[ -n "$ONLY" && "$name" != *"$ONLY"* ]] && return 0
	local out="$WORK/out.txt" rc why=""
	timeout 180 "$@" >"$out" 2>&1; rc=$?
	if (( rc == 124 )); then why="hung (killed after 180 s)"
	elif grep -qE 'panic:|goroutine [0-9]+ \[' "$out"; then why="panic trace in the output"
	elif grep -qF "$SECRET" "$out"; then why="the password is in the output"
	elif grep -qF "pool.go:" "$out"; then why="go-redis's pool log lines ahead of the error"
	elif [[ $want == 0 && $rc != 0 ]]; then why="exit $rc, want 0"
	elif [[ $want == fail && $rc == 0 ]]; then why="exit 0, want an error"
	elif [[ -n "$pattern" ]] && ! grep -qE "$pattern" "$out"; then why="output lacks /$pattern/"
	fi
	local line; line=$(grep -m1 -iE 'error|refus|warn' "$out" | cut -c1-150 | tr '|' '/')
	[[ -z "$line" ]] && line=$(tail -n1 "$out" | cut -c1-150 | tr '|' '/')
	if [[ -z "$why" ]]; then pass=$((pass+1)); printf '| %s | %s | ok | %s |\n' "$name" "$rc" "$line"
	else fail=$((fail+1)); printf '| %s | %s | **FAIL: %s** | %s |\n' "$name" "$rc" "$why" "$line"; sed 's/^/    /' "$out" | tail -n 20 >&2; fi
}
# same_bytes FILE SHA: the check that an input survived.
sha() { sha256sum "$1" | cut -d' ' -f1; }

start_redis "$PORT" "$SECRET"
R="redis://:$SECRET@127.0.0.1:$PORT/0"
head -n 4 "$PROMPTS" >"$WORK/p4.jsonl"
ROLL=("$TOOLRL" rollout --model "$MODEL" --group-size 2 --max-new-tokens 48 --seed 1)

# 1. A Redis sink that fails to open: the real error, no panic.
check "1 sink, wrong password" fail 'WRONGPASS|invalid password' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "redis://:WRONG-$SECRET@127.0.0.1:$PORT/0"
check "1 sink, server down" fail '^toolrl: out redis://:xxxxx@127.0.0.1:1/0: .*refused' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "redis://:$SECRET@127.0.0.1:1/0"
check "1 sink, no password" fail 'NOAUTH|auth' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "redis://127.0.0.1:$PORT/0"
check "1 sink, bad db" fail 'db|DB' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "redis://:$SECRET@127.0.0.1:$PORT/99"
# 2. No password in any output.
check "2 rollout to redis, summary redacted" 0 'output' -- "${ROLL[@]}" --job h2 --prompts "$WORK/p4.jsonl" --out "$R"
check "2 advantage serve, user-only URL" fail 'redis://xxxxx@127.0.0.1:1/0' -- "$TOOLRL" advantage serve --redis "redis://$SECRET@127.0.0.1:1/0" --job h2
# 6. An output that is an input's file is refused; the input survives.
"${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/t.jsonl" >/dev/null 2>&1
before=$(sha "$WORK/t.jsonl")
check "6 advantage --in X --out X" fail 'same file' -- "$TOOLRL" advantage --in "$WORK/t.jsonl" --out "$WORK/t.jsonl"
check "6 ... X unchanged" 0 '' -- test "$(sha "$WORK/t.jsonl")" = "$before"
cp "$WORK/p4.jsonl" "$WORK/pcopy.jsonl"; before=$(sha "$WORK/pcopy.jsonl")
check "6 rollout --prompts X --out X" fail 'same file' -- "${ROLL[@]}" --prompts "$WORK/pcopy.jsonl" --out "$WORK/pcopy.jsonl" --resume=false
check "6 ... prompts unchanged" 0 '' -- test "$(sha "$WORK/pcopy.jsonl")" = "$before"
ln -f "$WORK/pcopy.jsonl" "$WORK/hardlink.jsonl"
check "6 hard link to the prompts" fail 'same file' -- "${ROLL[@]}" --prompts "$WORK/pcopy.jsonl" --out "$WORK/hardlink.jsonl" --resume=false
# 7. Zero and negative values: refused with the flag's name, or T=0 greedy.
check "7 --group-size 0" fail 'group-size' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/g0.jsonl" --group-size 0
check "7 --max-new-tokens 0" fail 'max-new-tokens' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/m0.jsonl" --max-new-tokens 0
check "7 --batch 0" fail 'batch' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/b0.jsonl" --batch 0
check "7 --threads -4" fail 'threads' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/th.jsonl" --threads -4
check "7 --temperature 0 is greedy" 0 '' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/t0.jsonl" --temperature 0
check "7 ... recorded temperature 0" 0 '' -- grep -q '"temperature":0[,}]' "$WORK/t0.jsonl"
# 8. Resume with other settings is refused, naming the keys.
"${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/r.jsonl" --limit 2 >/dev/null 2>&1
check "8 resume with another seed" fail 'seed' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/r.jsonl" --seed 2
check "8 resume with another --limit" 0 '' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/r.jsonl" --limit 4
# 3. One over-long prompt is refused alone; the job finishes.
long=$(python3 -c 'print("What is 1 plus 1? " * 400)')
{ head -n 2 "$PROMPTS"; printf '{"id":"too-long","prompt":"%s","answer":"2"}\n' "$long"; sed -n 3,4p "$PROMPTS"; } >"$WORK/long.jsonl"
check "3 over-long prompt refused alone" 0 'too-long' -- "${ROLL[@]}" --prompts "$WORK/long.jsonl" --out "$WORK/long-out.jsonl"
check "3 ... the 4 good groups written" 0 '' -- test "$(grep -c . "$WORK/long-out.jsonl")" -eq 8
check "3 ... resume does not abort" 0 '' -- "${ROLL[@]}" --prompts "$WORK/long.jsonl" --out "$WORK/long-out.jsonl"
# 3 and 14, distributed: the over-long prompt is dead-lettered alone, and the
# worker's summary says what it did.
check "3 enqueue for workers" 0 '' -- "$TOOLRL" rollout --redis "$R" --job hw --prompts "$WORK/long.jsonl"
check "3 worker refuses the over-long prompt alone" 0 'worker +5 prompt entries claimed.*4 done.*1 refused' -- "${ROLL[@]}" --worker --redis "$R" --job hw
check "3 ... 4 good groups in the stream" 0 '' -- test "$(redis-cli -p "$PORT" -a "$SECRET" --no-auth-warning xlen 'toolrl:{hw}:groups')" -eq 4
# 10. Parquet: stale temp files from a killed run are removed.
touch "$WORK/.pq.parquet.partial.parquet.tmp-12345"
check "10 parquet run" 0 '' -- "${ROLL[@]}" --prompts "$WORK/p4.jsonl" --out "$WORK/pq.parquet"
check "10 ... stale temp removed" 0 '' -- test ! -e "$WORK/.pq.parquet.partial.parquet.tmp-12345"
# 11. Inconsistent advantage input: the group is named.
python3 - "$WORK/t.jsonl" "$WORK/bad-total.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows[0]["reward"]["total"] += 5
open(sys.argv[2], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
check "11 total disagrees with its parts" fail 'total' -- "$TOOLRL" advantage --in "$WORK/bad-total.jsonl" --out "$WORK/adv.jsonl"
cat "$WORK/t.jsonl" "$WORK/t.jsonl" >"$WORK/dup.jsonl"
check "11 duplicated group deduped" 0 '' -- "$TOOLRL" advantage --in "$WORK/dup.jsonl" --out "$WORK/adv-dup.jsonl"
check "11 ... one record per trajectory" 0 '' -- test "$(grep -c . "$WORK/adv-dup.jsonl")" -eq "$(grep -c . "$WORK/t.jsonl")"
# 12. config.json contradicting the ONNX graph.
cp -r "$MODEL" "$WORK/badmodel"
python3 - "$WORK/badmodel/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["vocab_size"] = c["vocab_size"] + 7
json.dump(c, open(sys.argv[1], "w"))
PY
check "12 config.json vocab vs graph" fail 'vocab' -- "$TOOLRL" rollout --model "$WORK/badmodel" --prompts "$WORK/p4.jsonl" --out "$WORK/bm.jsonl"
# 14. Empty prompts file, '/' in a prompt id.
: >"$WORK/empty.jsonl"
check "14 empty prompts file" fail 'empty|no prompts' -- "${ROLL[@]}" --prompts "$WORK/empty.jsonl" --out "$WORK/e.jsonl"
printf '{"id":"a/b","prompt":"What is 2 plus 2?","answer":"4"}\n' >"$WORK/slash.jsonl"
check "14 '/' in a prompt id" fail 'a/b' -- "${ROLL[@]}" --prompts "$WORK/slash.jsonl" --out "$WORK/s.jsonl"
# 5. An MCP server that never answers initialize: a timeout naming the command.
cat >"$WORK/mcp.yaml" <<YAML
tools:
  - type: mcp
    settings:
      command: [sleep, "600"]
      start_timeout: 2s
YAML
check "5 mcp server that never answers" fail 'sleep' -- "$TOOLRL" tools list --tools "$WORK/mcp.yaml"
# 4. The python sandbox: a private /proc, no user namespaces, no leftovers.
printf 'tools:\n  - type: python\n    timeout: 3s\n' >"$WORK/py.yaml"
check "4 python sees only its own processes" 0 '^[1-3]$' -- "$TOOLRL" tools call --tools "$WORK/py.yaml" python \
	'{"code": "import os\nprint(len([p for p in os.listdir(\"/proc\") if p.isdigit()]))"}'
check "4 python cannot unshare(CLONE_NEWUSER)" 0 'denied' -- "$TOOLRL" tools call --tools "$WORK/py.yaml" python \
	'{"code": "import ctypes\nr = ctypes.CDLL(None, use_errno=True).unshare(0x10000000)\nprint(\"allowed\" if r == 0 else \"denied\")"}'
export TMPDIR="$WORK/tmp"; mkdir -p "$TMPDIR"
check "4 python timed-out call" fail 'timeout' -- "$TOOLRL" tools call --tools "$WORK/py.yaml" python '{"code": "while True: pass"}'
check "4 python ... no temporary folder left" 0 '' -- test -z "$(ls -A "$TMPDIR")"
unset TMPDIR
# 14. The HTTP tool strips terminal control sequences from a response.
HPORT=$((PORT + 1))
python3 - "$HPORT" <<'PY' >/dev/null 2>&1 &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"\x1b]0;owned-title\x07\x1b[31mred\x1b[0m 42"
        self.send_response(200); self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=($!)
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$HPORT") 2>/dev/null && break; sleep 0.1; done
cat >"$WORK/http.yaml" <<YAML
tools:
  - type: http
    function:
      name: echo
      description: returns text with escape sequences
      parameters: {type: object, properties: {}}
    settings:
      url: http://127.0.0.1:$HPORT/
YAML
check "14 http tool strips control sequences" 0 '^red 42$' -- "$TOOLRL" tools call --tools "$WORK/http.yaml" echo '{}'
# 9. A 4-second redis-server restart during a rollout to Redis.
(sleep 3; redis-cli -p "$PORT" -a "$SECRET" --no-auth-warning shutdown >/dev/null 2>&1; sleep 4; start_redis "$PORT" "$SECRET") &
RESTARTER=$!
check "9 sink survives a 4 s redis restart" 0 '' -- "${ROLL[@]}" --job h9 --prompts "$PROMPTS" --limit 48 --out "$R"
wait "$RESTARTER"
printf '\n%d passed, %d failed\n' "$pass" "$fail"
(( fail == 0 ))
