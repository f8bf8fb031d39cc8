#!/usr/bin/env bash
# The Spark engine of `kvsim sweep` on a real multi-JVM standalone cluster, started on this machine
# from the Maven-resolved Spark jars (no Spark install needed): one master and up to two workers of
# one core each, every one its own JVM, executors launched by the workers as Spark launches them.
# It checks, on a grid whose cells take long enough to measure:
#   1. with one worker, the table (sweep.csv, sweep.json) equals the local engine's byte for byte;
#   2. with two workers, the same, both workers' executors ran cells (their logs), the two executors
#      ran cells at the same time (their tasks' summed time over the cells' span, at least
#      KVSIM_CLUSTER_MIN_PARALLELISM), and the cells' wall time (the first task's start to the last
#      task's end, from the executors' logs) is below one worker's, by at least KVSIM_CLUSTER_MIN_SPEEDUP
#      where set; both ratios and the whole run's are printed (Notes [Whole run against cells] and
#      [Overlap, not speed, is gated] below);
#   3. one worker's executor JVM killed mid-run: Spark runs its cells again elsewhere, and the table
#      still equals the local engine's.
# Every process it starts is ended by its pid when it exits, also on failure. Called by .ci/run.
# Environment: KVSIM_SPARK_JAR (a built kvsim-spark.jar; else `mvn -Pspark package` builds it),
# MVN_FLAGS (extra flags for mvn, e.g. -o), KVSIM_CLUSTER_GRID (a grid file instead of the default),
# KVSIM_CLUSTER_MIN_PARALLELISM (default 1.4), KVSIM_CLUSTER_MIN_SPEEDUP (default: only below 1 fails),
# KVSIM_CLUSTER_WORK (work folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${KVSIM_CLUSTER_WORK:-$root/target/spark-cluster}
min_speedup=${KVSIM_CLUSTER_MIN_SPEEDUP:-}
min_parallelism=${KVSIM_CLUSTER_MIN_PARALLELISM:-1.4}
mvn_flags=${MVN_FLAGS:-}

pids=()
cleanup() {
  local rc=$? p c
  trap - EXIT
  for p in "${pids[@]}"; do
    # A worker's executors are its children: end them by pid too, in case the worker cannot.
    for c in $(ps -o pid= --ppid "$p" 2>/dev/null || true); do kill "$c" 2>/dev/null || true; done
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    echo "spark-cluster: FAILED (exit $rc); logs in $work" >&2
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 20 "$f" >&2; }; done
  fi
  exit "$rc"
}
trap cleanup EXIT
fail() { echo "spark-cluster: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/spark-home/jars"

# kvsim with the Spark engine, and Spark's own jars from Maven.
jar=${KVSIM_SPARK_JAR:-}
if [ -z "$jar" ]; then
  (cd simulator && mvn -B -q $mvn_flags -Pspark package -DskipTests)
  jar=$root/simulator/target/kvsim-spark.jar
fi
jar=$(readlink -f "$jar")
(cd simulator && mvn -B -q $mvn_flags -Pspark dependency:build-classpath -Dmdep.includeScope=provided \
  -Dmdep.outputFile="$work/spark-classpath.txt")
spark_cp=$(cat "$work/spark-classpath.txt")
# A Spark home as the worker's executor launcher expects one: a RELEASE file and jars/.
: > "$work/spark-home/RELEASE"
tr ':' '\n' < "$work/spark-classpath.txt" | while read -r j; do ln -sf "$j" "$work/spark-home/jars/"; done
export SPARK_HOME=$work/spark-home SPARK_SCALA_VERSION=2.13 SPARK_LOCAL_IP=127.0.0.1
# What Spark's launcher opens on Java 17 (its JavaModuleOptions), as in the spark profile's tests.
opens=(-XX:+IgnoreUnrecognizedVMOptions --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.lang.invoke=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/sun.nio.cs=ALL-UNNAMED --add-opens=java.base/sun.security.action=ALL-UNNAMED
  --add-opens=java.base/sun.util.calendar=ALL-UNNAMED -Djdk.reflect.useDirectMethodHandle=false
  -Dio.netty.tryReflectionSetAccessible=true)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for FILE PATTERN SECONDS
  for _ in $(seq 1 $(($3 * 5))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
  fail "no '$2' in $1 after $3 s"
}
port=$(free_port)
master=spark://127.0.0.1:$port
java "${opens[@]}" -Xmx512m -cp "$spark_cp" org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$port" --webui-port "$(free_port)" > "$work/master.log" 2>&1 &
pids+=($!)
wait_for "$work/master.log" "I have been elected leader" 60
start_worker() { # start_worker N
  mkdir -p "$work/worker$1"
  java "${opens[@]}" -Xmx512m -cp "$spark_cp" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 \
    --cores 1 --memory 1g --webui-port "$(free_port)" --work-dir "$work/worker$1" "$master" > "$work/worker$1.log" 2>&1 &
  pids+=($!)
  eval "worker$1_pid=$!"
  wait_for "$work/worker$1.log" "Successfully registered with master" 60
}

# The grid: 16 cells of about 4-5 s each on an idle core (churn at 10,000,000 operations of up to 8 MiB),
# long enough that an executor's JIT warm-up is a small part of its cells (Note [Whole run against cells]).
if [ -n "${KVSIM_CLUSTER_GRID:-}" ]; then
  cp "$KVSIM_CLUSTER_GRID" "$work/grid.yaml"
else
  printf '# The CI cluster test grid: 2 allocators x 8 seeds of churn at 10,000,000 operations.\nworkloads: ["churn:ops=10000000,max-size-mib=8"]\nallocators: [first-fit, buddy]\nseeds: 1..8\n' > "$work/grid.yaml"
fi
cd "$work"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; } # secs START END
sweep_spark() { # sweep_spark OUT: the driver in client mode, as spark-submit would start it
  java "${opens[@]}" -Xmx1g -Dspark.jars="$jar" -cp "$jar:$spark_cp" kvsim.cli.KvSim \
    sweep grid.yaml --engine spark --master "$master" -q -o "$1" > "$1.log" 2>&1
}
same_table() { # same_table OUT
  for f in sweep.csv sweep.json; do
    cmp "local/$f" "$1/$f" || fail "$1/$f differs from the local engine's"
  done
}
# Note [Whole run against cells]: on a 2-core machine the driver, the master, two workers and two
# executors share the cores, and starting an executor's JVM (class loading, JIT, fetching the jar)
# takes several seconds of both cores; two executors starting at once take longer than one. The
# whole run's wall time therefore includes a start-up that grows with the executors, and on this
# grid of short cells it hid the scaling (40 cells of 200,000 operations, quiet 2-core machine: 20.6 s
# with one worker, 23.9 s with two). On this grid: whole run 64.1 s and 46.1 s (1.39x), cells 54 s
# and 33 s (1.64x). The cells' span is what adding an executor divides; it is what is measured.
#
# Note [Overlap, not speed, is gated]: how much a second executor divides the span depends on the
# machine: two one-core workers on two idle cores gave 1.64x here (cells) and 1.39x (whole run),
# while one CI run gained only 1.14x on the whole run (56.1 s and 49.1 s), its cores shared or
# slower to scale, and failed a 1.3x gate on the cells. What the engine controls is that both executors run cells at the same
# time; a run that serialises its cells (one job per partition, as before) has a parallelism of at
# most 1 whatever the machine. So the check is the parallelism: the executors' task seconds summed,
# over the cells' span (2 when both are busy throughout). The span must also be below one worker's;
# a stricter speed-up is KVSIM_CLUSTER_MIN_SPEEDUP, for a quiet machine. The README's table is
# measured on a quiet machine, not here.
cells_span() { # cells_span: seconds from the first task started to the last finished, all executors
  { cat worker1/app-*/*/stderr worker2/app-*/*/stderr 2>/dev/null || true; } \
    | awk '/Executor: (Running|Finished) task/ { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3];
        if ($0 ~ /Running task/ && (first == "" || s < first)) first = s;
        if ($0 ~ /Finished task/ && s > last) last = s }
      END { if (first == "" || last == "") print 0; else print last - first + 1 }'
}
task_seconds() { # task_seconds: every executor's tasks' seconds (start to end, from their logs), summed
  local f
  for f in worker1/app-*/*/stderr worker2/app-*/*/stderr; do
    [ -f "$f" ] || continue
    awk '/Executor: (Running|Finished) task/ { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3];
        match($0, /\(TID [0-9]+\)/); id = substr($0, RSTART, RLENGTH);
        if ($0 ~ /Running task/) start[id] = s; else if (id in start) { sum += s - start[id]; delete start[id] } }
      END { print sum + 0 }' "$f"
  done | awk '{ sum += $1 } END { print sum + 0 }'
}
finished_tasks() { # finished_tasks WORKER_DIR: tasks its executors finished, per their logs
  cat "$1"/app-*/*/stderr 2>/dev/null | grep -c "Finished task" || true
}

t0=$(now)
java -Xmx1g -jar "$jar" sweep grid.yaml --engine local --threads 2 -q -o local > local.log 2>&1 || fail "local engine: $(tail -n 3 local.log)"
echo "spark-cluster: local engine, 2 threads: $(secs "$t0" "$(now)") s"

start_worker 1
t0=$(now)
sweep_spark one || fail "one worker: $(tail -n 5 one.log)"
t_one=$(secs "$t0" "$(now)")
c_one=$(cells_span)
same_table one
echo "spark-cluster: 1 worker: ${t_one} s (cells ${c_one} s), table equals the local engine's"

start_worker 2
for _ in $(seq 1 50); do [ "$(grep -c "Registering worker" master.log)" -ge 2 ] && break; sleep 0.2; done
rm -rf worker1/app-* worker2/app-*
t0=$(now)
sweep_spark two || fail "two workers: $(tail -n 5 two.log)"
t_two=$(secs "$t0" "$(now)")
c_two=$(cells_span)
busy_two=$(task_seconds)
same_table two
n1=$(finished_tasks worker1)
n2=$(finished_tasks worker2)
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || fail "not both executors ran cells (worker 1: $n1 tasks, worker 2: $n2)"
whole=$(awk -v a="$t_one" -v b="$t_two" 'BEGIN { printf "%.2f", a / b }')
speedup=$(awk -v a="$c_one" -v b="$c_two" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
parallelism=$(awk -v a="$busy_two" -v b="$c_two" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
echo "spark-cluster: 2 workers: ${t_two} s (cells ${c_two} s), table equals the local engine's; tasks per executor: $n1, $n2; parallelism ${parallelism} (${busy_two} task seconds over ${c_two} s)"
echo "spark-cluster: 1 -> 2 workers: cells ${speedup}x, whole run ${whole}x"
slow= # checked last, so that the killed executor is tried too
awk -v p="$parallelism" -v m="$min_parallelism" 'BEGIN { exit !(p >= m) }' \
  || slow="the 2 executors' cells overlapped too little: parallelism ${parallelism} (want >= $min_parallelism)"
awk -v s="$speedup" 'BEGIN { exit !(s > 1) }' || slow="${slow:+$slow; }2 workers' cells took no less time than 1's (${speedup}x)"
if [ -n "$min_speedup" ]; then
  awk -v s="$speedup" -v m="$min_speedup" 'BEGIN { exit !(s >= m) }' \
    || slow="${slow:+$slow; }2 workers' cells only ${speedup}x faster than 1's (want >= $min_speedup)"
fi

# An executor killed mid-run: once a few cells are done, worker 2's executor JVM gets SIGKILL.
rm -rf worker1/app-* worker2/app-*
sweep_spark killed & driver=$!
pids+=($driver)
victim=
for _ in $(seq 1 3000); do
  if [ "$(finished_tasks worker2)" -ge 2 ]; then
    victim=$(ps -o pid= --ppid "$worker2_pid" | head -n 1 | tr -d ' ')
    break
  fi
  kill -0 "$driver" 2>/dev/null || break
  sleep 0.2
done
[ -n "$victim" ] || fail "the run ended before an executor could be killed"
kill -9 "$victim"
echo "spark-cluster: killed worker 2's executor (pid $victim) after $(finished_tasks worker2) of its tasks"
rc=0; wait "$driver" || rc=$?
unset 'pids[-1]' # the driver, ended
[ "$rc" -eq 0 ] || fail "after a killed executor: $(tail -n 5 killed.log)"
grep -q "Lost executor" killed.log || fail "the driver did not see the executor lost"
same_table killed
echo "spark-cluster: after the killed executor, its cells ran again ($(grep -c "Lost task" killed.log) tasks lost); the table equals the local engine's"
[ -z "$slow" ] || fail "$slow"
echo "spark-cluster: ok"
