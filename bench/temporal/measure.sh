#!/bin/bash
# Runs per second on Temporal with 1, 2 and 3 worker processes: the
# Temporal dev server (the tests' CLI and dynamic config), a PostgreSQL
# database of its own on 127.0.0.1:5432 (dropped after) and each
# `coorflow worker` (built with -tags temporal) run as processes of their
# own; the driver (this folder's main.go) submits RUNS runs of a 3-step
# chain of model nodes on the demo model, PARALLEL at a time, and prints
# runs/s and the latency of a run (one-task steps as local activities, the
# default). LOCAL=1 also measures each count with every step an activity
# (temporalrun.Config.ActivitySteps).
#
#	bench/temporal/measure.sh            # RUNS=300 PARALLEL=32 WORKERS="1 2 3"
#	RUNS=600 LOCAL=1 bench/temporal/measure.sh
#
# It needs psql, the Temporal CLI (COORFLOW_TEMPORAL_CLI, or the one .ci/run
# builds) and ports 18930-18931 on loopback.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUNS=${RUNS:-300}; PARALLEL=${PARALLEL:-32}; WORKERS=${WORKERS:-"1 2 3"}; LOCAL=${LOCAL:-}
TEMPORAL=${COORFLOW_TEMPORAL_CLI:-${XDG_CACHE_HOME:-$HOME/.cache}/coorflow/temporal-cli/v1.5.1/temporal}
D=$(mktemp -d)
BIN=$D/coorflow; DRIVER=$D/driver
(cd "$ROOT" && go build -tags temporal -o "$BIN" ./cmd/coorflow && go build -o "$DRIVER" ./bench/temporal) || exit 1
NAME=temporal_measure_$$
psql -q -h 127.0.0.1 -U postgres -d test -c "CREATE DATABASE $NAME" || exit 1
DB=postgres://postgres@127.0.0.1:5432/$NAME
ADDR=127.0.0.1:18930
DYN=()
for kv in history.transferProcessorMaxPollRPS=10000 history.timerProcessorMaxPollRPS=10000 \
  matching.numTaskqueueReadPartitions=1 matching.numTaskqueueWritePartitions=1 system.enableActivityEagerExecution=true; do
  DYN+=(--dynamic-config-value "$kv")
done
TEMPORAL_VERSION_CHECK_DISABLED=1 "$TEMPORAL" server start-dev --headless --ip 127.0.0.1 --port 18930 --http-port 18931 \
  --log-level error "${DYN[@]}" > "$D/temporal.log" 2>&1 & SERVER=$!
cleanup() {
  kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null
  psql -q -h 127.0.0.1 -U postgres -d test -c "DROP DATABASE IF EXISTS $NAME WITH (FORCE)"
  rm -rf "$D"
}
trap cleanup EXIT
until (exec 3<>/dev/tcp/127.0.0.1/18930) 2>/dev/null; do sleep 0.2; done
TICK=$(getconf CLK_TCK)
# cpu prints the CPU time (user and system, in ticks) process $1 has used.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); runs=$RUNS parallel=$PARALLEL"
for n in $WORKERS; do
  QUEUE=measure-$n-$$
  PIDS=()
  for i in $(seq 1 "$n"); do
    HOME=$D "$BIN" worker --temporal $ADDR --db "$DB" --queue "$QUEUE" --demo "$HERE/chain.yaml" > "$D/worker-$n-$i.log" 2>&1 & PIDS+=($!)
  done
  for i in $(seq 1 "$n"); do
    until grep -q "^worker for" "$D/worker-$n-$i.log"; do
      kill -0 "${PIDS[$((i-1))]}" 2>/dev/null || { cat "$D/worker-$n-$i.log"; exit 1; }
      sleep 0.2
    done
  done
  for mode in "" ${LOCAL:+--local-steps=false}; do
    S0=$(cpu $SERVER); W0=0; for p in "${PIDS[@]}"; do W0=$((W0 + $(cpu $p))); done
    "$DRIVER" -temporal $ADDR -db "$DB" -queue "$QUEUE" -file "$HERE/chain.yaml" -runs "$RUNS" -parallel "$PARALLEL" \
      -label "workers=$n" $mode || exit 1
    W1=0; for p in "${PIDS[@]}"; do W1=$((W1 + $(cpu $p))); done
    awk -v s=$(( $(cpu $SERVER) - S0 )) -v w=$((W1 - W0)) -v t="$TICK" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" \
      'BEGIN { printf "  CPU seconds: dev server %.1f, workers %.1f; load %s\n", s / t, w / t, l }'
  done
  for p in "${PIDS[@]}"; do kill "$p"; done; wait "${PIDS[@]}" 2>/dev/null
done
