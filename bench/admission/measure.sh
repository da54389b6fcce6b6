#!/bin/bash
# Parallel admission from outside: fires N runs at once (default 100), as one
# owner whose quota of active runs is the default 16, at `coorflow serve` on
# SQLite (sqlite), or at one or three replicas on one PostgreSQL database
# (pg1, pg3: a database of its own on 127.0.0.1:5432, dropped after), the
# i-th to replica i%3; each run is held by a model call that answers after a
# minute. It prints how many runs were accepted (202) and refused (429).
#
#	bench/admission/measure.sh pg3 100
#	BIN=/path/to/coorflow bench/admission/measure.sh sqlite
#
# It uses ports 18900-18902 and 18990 on loopback, curl, psql and python3.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BACKEND=${1:-sqlite}; N=${2:-100}
D=$(mktemp -d)
BIN=${BIN:-}
if [ -z "$BIN" ]; then
  BIN=$D/coorflow
  (cd "$HERE/../.." && go build -o "$BIN" ./cmd/coorflow) || exit 1
fi
cd $D
python3 "$HERE/slowmodel.py" 18990 60 & MODEL=$!
cat > hold.yaml <<Y
apiVersion: coorflow/v1
name: hold
input: topic
output: a
state:
  topic: {type: string}
  a: {type: string}
models:
  basic: {provider: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:18990/v1"}
nodes:
  one: {type: llm, prompt: "one {{ state.topic }}", output: a}
edges:
  - {from: start, to: one}
  - {from: one, to: end}
Y
echo "tok=alice" > tokens; chmod 600 tokens
PIDS=()
case $BACKEND in
  sqlite) DB=$D/threads.db; REPS=1 ;;
  pg1|pg3) NAME=admit_measure_$$; psql -q -h 127.0.0.1 -U postgres -d test -c "CREATE DATABASE $NAME"; DB=postgres://postgres@127.0.0.1:5432/$NAME; REPS=${BACKEND#pg} ;;
esac
for i in $(seq 0 $((REPS-1))); do
  EXTRA=(); [ "$BACKEND" != sqlite ] && EXTRA=(--replica r$i)
  HOME=$D OPENAI_API_KEY=sk-test $BIN serve --addr 127.0.0.1:$((18900+i)) --db $DB --token-file tokens "${EXTRA[@]}" hold.yaml > serve$i.log 2>&1 & PIDS+=($!)
done
for i in $(seq 0 $((REPS-1))); do
  until curl -s -o /dev/null http://127.0.0.1:$((18900+i))/healthz; do sleep 0.2; done
done
for t in $(seq 1 $N); do
  curl -s -o /dev/null -H "Authorization: Bearer tok" -H 'Content-Type: application/json' -d "{\"workflow\":\"hold\",\"thread_id\":\"t$t\"}" http://127.0.0.1:18900/v1/threads
done
seq 1 $N | xargs -P $N -I{} sh -c 'curl -s -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer tok" -H "Content-Type: application/json" -d "{\"input\":{\"topic\":\"x\"}}" http://127.0.0.1:$((18900 + {} % '$REPS'))/v1/threads/t{}/runs' > codes
echo "$BACKEND $(basename $BIN): $(grep -c '^202$' codes) of $N accepted (quota 16); answers: $(sort codes | uniq -c | tr '\n' ' ')"
for p in "${PIDS[@]}"; do kill $p; done; wait "${PIDS[@]}" 2>/dev/null
kill $MODEL; wait $MODEL 2>/dev/null
[ "$BACKEND" != sqlite ] && psql -q -h 127.0.0.1 -U postgres -d test -c "DROP DATABASE IF EXISTS $NAME WITH (FORCE)"
rm -rf $D
