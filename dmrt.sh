#!/usr/bin/env bash
# dmrt.sh: install what is missing, build, then run the benchmark (bench) or the test suite (test).
#   ./dmrt.sh bench [dmrt-bench flags...]   main benchmark on the default (shm) transport
#   ./dmrt.sh test                          release tests, ASan/UBSan and TSan runs, then qemu
#                                           guests: Soft-RoCE, NUMA, a shared pool, CXL (tests/vm)
#   ./dmrt.sh repro [FIGURE...] [--fresh]   the papers' figures on sim (bench/repro/README.md;
#                  [--scale paper]          at the papers' data sizes where a spec gives them;
#                  [--series NAME,...]      only those series, into the cache, no table)
#   ./dmrt.sh cxl-study [PART...] [--fresh] the CXL porting study's tables and plots
#                                           (docs/cxl-porting.md, bench/cxl/specs)
# Each configuration is built once into build/, build-asan/, build-tsan/ and reused.
set -euo pipefail
cd "$(dirname "$0")"

packages=(meson ninja-build g++ pkg-config libboost-fiber-dev libboost-context-dev libnuma-dev
          libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev libfmt-dev libxxhash-dev
          libtomlplusplus-dev libtbb-dev libabsl-dev libibverbs-dev ibverbs-providers
          libsodium-dev)
# Only for `test`: mpirun and Slurm's srun start the multi-process experiments
# (tests/bench/cluster_run.sh, cluster_srun.sh: a private one-host Slurm); cmake builds the
# installed examples with find_package(dmrt) (tests/install/install.sh).
test_packages=(openmpi-bin slurmctld slurmd slurm-client munge cmake)
# Only for `repro`: the figures' plots.
repro_packages=(python3 python3-matplotlib)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "dmrt: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

jobs=$(nproc 2>/dev/null || echo 2)

# configure DIR [meson options...]: set up once, then build (only $targets when set, e.g. the
# benchmark alone); the log is shown on failure.
targets=()
configure() {
  local dir=$1; shift
  local log
  log=$(mktemp)
  local t0=$SECONDS
  if { if [ -f "$dir/build.ninja" ]; then meson configure "$dir" "$@"; else meson setup "$dir" "$@"; fi; } >"$log" 2>&1 &&
     ninja -C "$dir" -j"$jobs" "${targets[@]}" >>"$log" 2>&1; then
    rm -f "$log"
    echo "dmrt: built $dir in $((SECONDS - t0)) s" >&2
    return 0
  fi
  tail -n 60 "$log" >&2
  rm -f "$log"
  echo "dmrt: building $dir failed" >&2
  return 1
}

# The build outputs the tests of the given suites need (their executables and what they name in
# "depends"), relative to build dir $1, so that a sanitizer stage builds only what it runs.
suite_targets() {
  local dir=$1; shift
  python3 - "$dir" "$@" <<'PY'
import json, os, subprocess, sys
d, suites = sys.argv[1], {"dmrt:" + s for s in sys.argv[2:]}
intro = lambda what: json.loads(subprocess.check_output(["meson", "introspect", d, what]))
files = {t["id"]: t["filename"] for t in intro("--targets")}
out = set()
for t in intro("--tests"):
    if suites & set(t["suite"]):
        for i in t["depends"]:
            out.update(files.get(i, []))
        if isinstance(t["cmd"][0], str) and os.path.abspath(t["cmd"][0]).startswith(os.path.abspath(d) + "/"):
            out.add(t["cmd"][0])
for f in sorted(out):
    print(os.path.relpath(f, d))
PY
}

# Configures build dir $1 (meson options after it) and builds the tests of suites $SUITES only.
configure_for_suites() {
  local dir=$1; shift
  local log
  log=$(mktemp)
  if { if [ -f "$dir/build.ninja" ]; then meson configure "$dir" "$@"; else meson setup "$dir" "$@"; fi; } >"$log" 2>&1; then
    mapfile -t targets < <(suite_targets "$dir" "${SUITES[@]}")
    rm -f "$log"
    [ ${#targets[@]} -gt 0 ] && configure "$dir" && { targets=(); return 0; }
  else
    tail -n 60 "$log" >&2
    rm -f "$log"
  fi
  targets=()
  echo "dmrt: building $dir failed" >&2
  return 1
}

passed=0
failed=0
# run_suites DIR LABEL [meson test args...]: runs tests, adds meson's per-test results to the totals.
run_suites() {
  local dir=$1 label=$2; shift 2
  echo "== $label" >&2
  local rc=0 t0=$SECONDS
  (cd "$dir" && meson test --no-rebuild --print-errorlogs "$@") || rc=$?
  local log="$dir/meson-logs/testlog.json"
  if [ -f "$log" ]; then
    local p f
    p=$(grep -c '"result": "OK"' "$log" || true)
    f=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
    passed=$((passed + p))
    failed=$((failed + f))
    echo "$label: $p passed, $f failed in $((SECONDS - t0)) s" >&2
  fi
  if [ "$rc" -ne 0 ] && [ ! -f "$log" ]; then failed=$((failed + 1)); fi
}

# vm_stage LABEL COMMAND...: a qemu stage (tests/vm/); adds its closing "N passed, M failed" line to
# the totals, or one failure when it printed none.
vm_stage() {
  local label=$1; shift
  echo "== $label in qemu" >&2
  local vm_log t0=$SECONDS vm_line
  vm_log=$(mktemp)
  "$@" 2>&1 | tee "$vm_log" >&2 || true
  echo "dmrt: the VM stage ($label) took $((SECONDS - t0)) s" >&2
  vm_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$vm_log" | tail -n 1 || true)
  if [ -n "$vm_line" ]; then
    passed=$((passed + $(echo "$vm_line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$vm_line" | cut -d' ' -f3)))
  else
    echo "dmrt: the VM stage ($label) did not report results" >&2
    failed=$((failed + 1))
  fi
  rm -f "$vm_log"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  bench)
    install_missing
    # Only what the benchmark needs: libdmrt and dmrt-bench, not the test programs.
    targets=(bench/dmrt-bench)
    configure build -Dtransports=shm,sim,verbs
    targets=()
    if [ $# -eq 0 ]; then
      set -- --index race --workload a --keys 100000 --ops 1000000 --threads 2 --fibers 8
    fi
    exec ./build/bench/dmrt-bench "$@"
    ;;
  test)
    packages+=("${test_packages[@]}")
    install_missing
    start=$(date +%s)
    if configure build -Dtransports=shm,sim,verbs; then
      # Two at a time: most programs are single-threaded; those that use both cores or time
      # themselves are marked is_parallel : false and still run alone.
      run_suites build "release: all suites" --num-processes 2
    else
      failed=$((failed + 1))
    fi
    # Sanitizers run the suites that exercise concurrency and memory handling. ASan+UBSan builds at
    # -O1, as the sanitizers' own docs advise: it reports the same errors, and the index
    # instantiations compile in 0.6x the time of -O2 (DMTree's: 59 s against 102 s). Five of UBSan's
    # checks are left out; together they doubled this build's compile time (the harness tests'
    # largest unit: 170 s with them, 86 s without, 93 s for ASan alone) and add little here: ASan
    # reports null and out-of-object accesses itself, the runtime rejects a misaligned atomic verb
    # on every transport (dmrt/runtime/verbs.h), a wrapped pointer is reported by ASan once it is
    # used, and vptr checks downcasts, which this code never makes. Its 41 tests run two at a time
    # (each under 30 s alone; those marked is_parallel : false still run alone).
    SUITES=(unit concurrency process)
    if configure_for_suites build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false \
        -Doptimization=1 "-Dcpp_args=['-fno-sanitize=null,alignment,object-size,pointer-overflow,vptr']"; then
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        run_suites build-asan "asan+ubsan" --suite unit --suite concurrency --suite process \
          --num-processes 2 --timeout-multiplier 3
    else
      failed=$((failed + 1))
    fi
    # TSan looks for data races in the concurrency suite, at -O1 like ASan (the TSan docs ask for
    # -O1 or more). The fault proofs (RaceFaults) depend on interleavings that TSan's slowdown
    # changes; they run in the release and ASan stages.
    SUITES=(concurrency)
    if configure_for_suites build-tsan -Db_sanitize=thread -Dbench=false -Doptimization=1; then
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        run_suites build-tsan "tsan" --suite concurrency --num-processes 1 --timeout-multiplier 4 \
          --test-args=--gtest_filter=-RaceFaults.*
    else
      failed=$((failed + 1))
    fi
    # The verbs transport for real: Soft-RoCE inside a qemu VM, running the release build's binaries.
    # A build with the verbs transport has tests/verbs/; its tests must then run (a renamed or
    # missing program is a failure, never a silent skip).
    if [ -d build/tests/verbs ] && [ ! -x build/tests/verbs/verbs_tests ]; then
      echo "dmrt: build/tests/verbs/verbs_tests is missing: the VM stage cannot run" >&2
      failed=$((failed + 1))
    elif [ -x build/tests/verbs/verbs_tests ]; then
      # Two boots: the verbs suite (one NUMA node), then NUMA placement across processes (two).
      vm_stage verbs tests/vm/run.sh --build build
      vm_stage numa tests/vm/run.sh --build build --numa-stage
    fi
    # Several hosts on one pool that is only memory: two qemu guests on one ivshmem pool with
    # dmrt-node on this host, and one guest's CXL Type-3 device through the kernel's CXL stack.
    if [ -x build/bench/dmrt-bench ] && [ -x build/tools/dmrt-node/dmrt-node ]; then
      vm_stage "shared pool" tests/vm/pool.sh --build build
    else
      echo "dmrt: build has no dmrt-bench or dmrt-node: the shared-pool VM stage cannot run" >&2
      failed=$((failed + 1))
    fi
    echo "dmrt: tests took $(( $(date +%s) - start )) s" >&2
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
  repro|cxl-study)
    packages+=("${repro_packages[@]}")
    install_missing
    targets=(bench/dmrt-bench)
    configure build -Dtransports=shm,sim,verbs
    targets=()
    # Debian's interpreter, which has python3-matplotlib (not whatever python3 is first on PATH).
    if [ "$cmd" = cxl-study ]; then
      /usr/bin/python3 bench/repro/run.py --bench build/bench/dmrt-bench \
        --specs-dir bench/cxl/specs --out docs/cxl --results-md docs/cxl-porting.md --raw build/cxl-study \
        --regenerate cxl-study "$@"
      # The two media side by side, per workload (needs both sim parts).
      exec /usr/bin/python3 bench/cxl/media.py
    fi
    exec /usr/bin/python3 bench/repro/run.py --bench build/bench/dmrt-bench "$@"
    ;;
  *)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
