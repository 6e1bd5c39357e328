#!/bin/bash
# dmrt's multi-host pool stage: shm pools that are only memory, in qemu guests (TCG).
#   guests: two guests (1 vCPU each, -smp 1,maxcpus=2, which makes their atomics on shared memory
#     exact) map one ivshmem BAR, a file on this host. Per index, dmrt-node on the host creates the
#     pool in that file and hosts HStore's servers and ROLEX's retrainer (near-memory compute);
#     each guest runs one compute process (YCSB A, 1 thread x 4 fibers) attached by the BAR's path,
#     and the first checks the union of both histories, moved onto the node's clock with the
#     measured bound (dmrt/runtime/clock_messages.h).
#   cxl: one guest with a qemu CXL Type-3 device set up through the kernel's CXL stack: a region,
#     a devdax namespace (a --verify run on /dev/dax0.0), then the same memory onlined as a
#     CPU-less NUMA node (a --verify run on a pool bound to it); each run's provenance is checked
#     against what `cxl list` and sysfs report.
#
#   tests/vm/pool.sh [--build DIR] [--stage guests|cxl] [--index NAME]...
#     --build DIR   meson build dir with dmrt-bench and dmrt-node (default: build)
#     --stage S     one stage (default: both)
#     --index NAME  the guests stage's indexes (default: race chime sherman smart dmtree rolex hstore)
#   env: VM_LIMIT (s per stage, default 900), VM_CACHE (default tests/vm/cache), KPKG, POOL_KEYS
#        (2000), POOL_OPS (6000, both processes together)
# Prints each test's evidence and a last line "N passed, M failed"; exit 0 when all passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
STAGES=(guests cxl)
INDEXES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --stage) STAGES=("$2"); shift 2 ;;
    --index) INDEXES+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "pool.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#INDEXES[@]} -gt 0 ] || INDEXES=(race chime sherman smart dmtree rolex hstore)
CACHE=${VM_CACHE:-$ROOT/tests/vm/cache}
LIMIT=${VM_LIMIT:-900}
KEYS=${POOL_KEYS:-2000}
OPS=${POOL_OPS:-6000}
BENCH=$BUILD/bench/dmrt-bench
NODE=$BUILD/tools/dmrt-node/dmrt-node
[ -x "$BENCH" ] && [ -x "$NODE" ] || { echo "pool.sh: $BUILD needs bench/dmrt-bench and tools/dmrt-node/dmrt-node" >&2; exit 1; }
# The guests write into the work tree (the only host directory they mount read-write).
case "$BUILD/" in "$ROOT"/*) ;; *) echo "pool.sh: --build must lie inside $ROOT" >&2; exit 2 ;; esac
OUT=$BUILD/vm-pool
rm -rf "$OUT" && mkdir -p "$OUT" "$CACHE"
. "$ROOT/tests/vm/lib.sh"
vm_packages qemu-system-x86 busybox-static cpio kmod ndctl daxctl numactl python3
vm_kernel
vm_initramfs
PASS=0
FAIL=0
pass() { PASS=$((PASS + 1)); echo "PASS $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }

# qemu_guest NAME SCRIPT [qemu args...]: boots one guest in the background (pid in QPIDS), its
# console in $OUT/NAME.console.
QPIDS=()
qemu_guest() {
  local name=$1 script=$2 machine=q35 smp=1,maxcpus=2
  shift 2
  # The CXL host bridge is a machine property; one vCPU without maxcpus there (one guest).
  case " $* " in *" pxb-cxl,"*) machine=q35,cxl=on; smp=1 ;; esac
  qemu-system-x86_64 -machine "$machine" -accel tcg,thread=multi -cpu max -smp "$smp" \
    -m 1G,maxmem=2G,slots=2 -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD" \
    -append "console=ttyS0 panic=-1 loglevel=3 rdinit=/init dmrt_rxe=0 dmrt_mods=${GUEST_MODS:-} dmrt_work=$ROOT dmrt_script=$script dmrt_limit=$LIMIT" \
    -nographic -nic none -no-reboot \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$ROOT,mount_tag=work,security_model=none,multidevs=remap" \
    "$@" < /dev/null > "$OUT/$name.console" 2>&1 &
  QPIDS+=($!)
}
stop_guests() { for p in "${QPIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap 'stop_guests; rm -f "${POOL:-}" "${CXLMEM:-}" "${CXLLSA:-}"' EXIT INT TERM
# await_guests: waits for every guest to power off, killing them after LIMIT + 60 s.
await_guests() {
  local t0=$SECONDS p
  for p in "${QPIDS[@]}"; do
    while kill -0 "$p" 2>/dev/null; do
      if [ $((SECONDS - t0)) -gt $((LIMIT + 60)) ]; then vm_say "TIMEOUT: killing qemu $p"; kill "$p"; fi
      sleep 1
    done
    wait "$p" 2>/dev/null || true
  done
  QPIDS=()
}
# The head of every guest script: PATH, the work tree, the cluster secret guest-init.sh made.
guest_head() {
  echo '#!/bin/bash'
  echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp'
  echo 'export DMRT_CLUSTER_SECRET'
  echo "cd '$ROOT'"
}

services() {
  case $1 in
    rolex) echo "--service rolex" ;;
    hstore) echo "--service hstore-hts --service hstore-sls" ;;
  esac
}

stage_guests() {
  echo "== two guests on one ivshmem pool: ${INDEXES[*]}"
  POOL=/dev/shm/dmrt-vm-pool-$$
  rm -f "$POOL" && truncate -s 256M "$POOL"
  local node n script
  for n in 1 2; do
    script=$OUT/guest$n.sh
    {
      guest_head
      # The ivshmem device (1af4:1110): its BAR 2 is the host's file.
      cat <<'EOS'
bar=
for d in /sys/bus/pci/devices/*; do
  [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ] && bar=$d/resource2
done
[ -n "$bar" ] || { echo "@@FATAL no ivshmem device"; exit 1; }
echo "@@GUEST bar $bar, host tag from boot_id $(cat /proc/sys/kernel/random/boot_id)"
EOS
      for index in "${INDEXES[@]}"; do
        local d=$OUT/$index
        # Each run waits for the host's go (the pool of this index created), then attaches.
        printf 'for i in $(seq 600); do [ -e %q ] && break; sleep 0.5; done\n' "$d.go"
        printf 'echo "@@BEGIN %s"\n' "$index"
        printf '%q --transport shm --attach "$bar" --node %d --index %s --workload a --keys %d --ops %d --threads 1 --fibers 4 --seed 7 --verify --history %q --json %q --merged-json %q --stop-nodes --quiet --progress off --peer-timeout-seconds 60 --attach-wait-seconds 60 > %q 2>&1; rc=$?\n' \
          "$BENCH" "$n" "$index" "$KEYS" "$OPS" "$d/h{node}.txt" "$d/r{node}.json" "$d/merged.json" "$d/out$n"
        printf 'echo $rc > %q\n' "$d.rc$n"
        printf 'echo "@@RESULT %s rc=$rc"\n' "$index"
      done
    } > "$script"
    chmod +x "$script"
  done
  local t0=$SECONDS
  for n in 1 2; do
    GUEST_MODS= qemu_guest "guest$n" "$OUT/guest$n.sh" \
      -object "memory-backend-file,id=pool,share=on,mem-path=$POOL,size=256M" \
      -device ivshmem-plain,memdev=pool
  done
  for index in "${INDEXES[@]}"; do
    local d=$OUT/$index s=$SECONDS
    mkdir -p "$d"
    # shellcheck disable=SC2046
    "$NODE" --transport shm --pool "$POOL" --create --memory-mb 96 --compute-nodes 2 \
      $(services "$index") > "$d/node.log" 2>&1 &
    node=$!
    local i
    for i in $(seq 300); do grep -q "ready on shm pool" "$d/node.log" && break; sleep 0.1; done
    touch "$d.go"
    # The first compute process stops the node once both are done (--stop-nodes).
    for i in $(seq $((LIMIT * 2))); do
      kill -0 "$node" 2>/dev/null || break
      [ -e "$d.rc1" ] && [ -e "$d.rc2" ] && [ "$i" -gt 20 ] && break
      sleep 0.5
    done
    kill "$node" 2>/dev/null || true
    wait "$node" 2>/dev/null || true
    for i in $(seq 60); do [ -e "$d.rc1" ] && [ -e "$d.rc2" ] && break; sleep 0.5; done
    check_guests_index "$index" "$d" "$((SECONDS - s))"
  done
  await_guests
  vm_say "the guests stage took $((SECONDS - t0)) s"
  rm -f "$POOL"
  # Two hosts: two kernels (each claim names its host by boot_id), one memory.
  local b1 b2
  b1=$(tr -d '\r' < "$OUT/guest1.console" | sed -n 's/.*host tag from boot_id //p')
  b2=$(tr -d '\r' < "$OUT/guest2.console" | sed -n 's/.*host tag from boot_id //p')
  if [ -n "$b1" ] && [ -n "$b2" ] && [ "$b1" != "$b2" ]; then
    pass "guests are two hosts: boot ids $b1 and $b2"
  else
    fail "guests are two hosts: boot ids '$b1' and '$b2'"
    tail -n 20 "$OUT/guest1.console" "$OUT/guest2.console"
  fi
}

# check_guests_index INDEX DIR SECONDS: both processes passed, the union was checked on the node's
# clock with a stated bound, each part mapped the ivshmem BAR, and the merged JSON adds up.
check_guests_index() {
  local index=$1 d=$2 secs=$3 bad=()
  [ "$(cat "$d.rc1" 2>/dev/null)" = 0 ] || bad+=("guest 1 exited $(cat "$d.rc1" 2>/dev/null || echo '(no status)')")
  [ "$(cat "$d.rc2" 2>/dev/null)" = 0 ] || bad+=("guest 2 exited $(cat "$d.rc2" 2>/dev/null || echo '(no status)')")
  grep -q "^linearizable: yes" "$d/out1" 2>/dev/null || bad+=("the union was not checked linearizable")
  grep -q "^verify: the union of 2 histories" "$d/out1" 2>/dev/null || bad+=("not the union of 2 parts")
  grep -q "closed shm pool" "$d/node.log" 2>/dev/null || bad+=("dmrt-node did not close the pool")
  local py
  py=$(python3 - "$d" "$OPS" <<'EOF' 2>&1
import json, sys
d, ops = sys.argv[1], int(sys.argv[2])
bad, tags = [], set()
for n in (1, 2):
    run = [j for j in map(json.loads, open(f"{d}/r{n}.json")) if j["phase"] == "run"][0]
    src = run["shm"]["pool_source"]
    if src["kind"] != "pci-bar" or "ivshmem" not in src["kernel_path"] or src["waits"] != "polling":
        bad.append(f"part {n} pool: {src['kind']} {src['kernel_path']} waits {src['waits']}")
    bound = [int(l.split()[-1]) for l in open(f"{d}/h{n}.txt") if l.startswith("# clock bound_ns")]
    if not bound or bound[0] <= 0:
        bad.append(f"part {n}: no clock bound (histories of two hosts need one)")
    else:
        tags.add(bound[0])
m = {j["phase"]: j for j in map(json.loads, open(f"{d}/merged.json"))}["run"]
if m["merged"]["processes"] != 2 or m["ops"] != ops:
    bad.append(f"merged: {m['merged']['processes']} processes, {m['ops']} ops")
print("; ".join(bad) if bad else
      f"{m['ops']} ops at {m['throughput_mops'] * 1e3:.1f} Kops, clock bounds "
      f"{', '.join(f'{b / 1e3:.1f} us' for b in sorted(tags))}, pool {src['kernel_path']}")
sys.exit(1 if bad else 0)
EOF
) || bad+=("$py")
  if [ ${#bad[@]} -eq 0 ]; then
    pass "guests $index (${secs} s): $py"
  else
    fail "guests $index (${secs} s): $(IFS=';'; echo "${bad[*]}")"
    for f in out1 out2 node.log; do echo "--- $f"; tail -n 15 "$d/$f" 2>/dev/null; done
  fi
}

stage_cxl() {
  echo "== a CXL Type-3 device through the kernel's CXL stack"
  CXLMEM=/dev/shm/dmrt-vm-cxl-$$ CXLLSA=/dev/shm/dmrt-vm-cxl-lsa-$$
  rm -f "$CXLMEM" "$CXLLSA"
  local script=$OUT/cxl.sh t0=$SECONDS
  # Small regions: the device is emulated as MMIO (memset at 5-8 MB/s), its node has 128 MiB.
  printf '[[node]]\nrole = "memory"\nregion = "32MiB"\n[[node]]\nrole = "compute"\nregion = "8MiB"\n' > "$OUT/cxl-cluster.toml"
  local run="$BENCH --transport shm --cluster $OUT/cxl-cluster.toml --threads 1 --fibers 4 --workload a --keys 500 --ops 2000 --verify --quiet --progress off"
  {
    guest_head
    cat <<EOS
o=$OUT
cxl list -M > \$o/cxl-list-memdevs.json
cxl create-region -m -d decoder0.0 -t pmem -w 1 -g 256 mem0 > \$o/cxl-create-region.json || { echo "@@FATAL cxl create-region"; exit 1; }
cxl list -R > \$o/cxl-list-regions.json
ndctl create-namespace -r region0 -m devdax -M mem -a 2M > \$o/ndctl-namespace.json || { echo "@@FATAL ndctl create-namespace"; exit 1; }
echo "@@BEGIN devdax"
$run --index race --shm-pool /dev/dax0.0 --json \$o/devdax.json > \$o/devdax.out 2>&1; echo "@@RESULT devdax rc=\$?"
daxctl reconfigure-device --mode=system-ram dax0.0 > \$o/daxctl.json 2>&1 || echo "@@FATAL daxctl reconfigure-device"
numactl -H > \$o/numactl.txt 2>&1
cat /sys/devices/system/node/node1/cpulist > \$o/node1-cpulist 2>/dev/null
# A pool file in tmpfs, its pages bound to the CPU-less node (only anonymous and tmpfs memory goes
# there: a program's page cache on that node would be DMA targets virtio cannot reach).
echo "@@BEGIN node"
$run --index sherman --shm-pool /dev/shm/cxl-node.pool --shm-pool-numa-node 1 --json \$o/node.json > \$o/node.out 2>&1; echo "@@RESULT node rc=\$?"
EOS
  } > "$script"
  chmod +x "$script"
  GUEST_MODS=cxl_acpi,cxl_pci,cxl_mem,cxl_pmem,cxl_port,nd_pmem,dax_pmem,device_dax,kmem \
    qemu_guest cxl "$script" \
    -object "memory-backend-file,id=cxl-mem1,share=on,mem-path=$CXLMEM,size=256M" \
    -object "memory-backend-file,id=cxl-lsa1,share=on,mem-path=$CXLLSA,size=1M" \
    -device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1 \
    -device cxl-rp,port=0,bus=cxl.1,id=root_port13,chassis=0,slot=2 \
    -device cxl-rp,port=1,bus=cxl.1,id=root_port14,chassis=0,slot=3 \
    -device cxl-type3,bus=root_port13,memdev=cxl-mem1,lsa=cxl-lsa1,id=cxl-pmem0 \
    -M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G
  await_guests
  vm_say "the cxl stage took $((SECONDS - t0)) s"
  tr -d '\r' < "$OUT/cxl.console" | grep -E '^@@(FATAL|WARN)' || true
  local what py
  for what in devdax node; do
    py=$(python3 - "$OUT" "$what" <<'EOF' 2>&1
import json, os, sys
o, what = sys.argv[1], sys.argv[2]
bad = []
out = open(f"{o}/{what}.out").read() if os.path.exists(f"{o}/{what}.out") else ""
if "linearizable: yes" not in out:
    bad.append("no linearizable history: " + " | ".join(out.strip().splitlines()[-4:]))
    print("; ".join(bad)); sys.exit(1)
run = [j for j in map(json.loads, open(f"{o}/{what}.json")) if j["phase"] == "run"][0]
src = run["shm"]["pool_source"]
regions = json.load(open(f"{o}/cxl-list-regions.json"))
regions = regions if isinstance(regions, list) else [regions]
memdevs = json.load(open(f"{o}/cxl-list-memdevs.json"))
memdevs = memdevs if isinstance(memdevs, list) else [memdevs]
r = regions[0] if regions else {}
said = (f"cxl list: {r.get('region')}, {r.get('size')} bytes, {r.get('interleave_ways')}-way, "
        f"{r.get('decode_state')}; memdev {', '.join(m.get('memdev', '?') for m in memdevs)}")
if what == "devdax":
    if src["kind"] != "devdax" or src["path"] != "/dev/dax0.0":
        bad.append(f"pool on {src['kind']} {src['path']}")
    want = f"CXL {r.get('region')} ({r.get('size')} bytes, {r.get('interleave_ways')}-way interleave at {r.get('interleave_granularity')} B, committed"
    if not r or want not in src["kernel_path"]:
        bad.append(f"kernel path {src['kernel_path']} does not say '{want}' ({said})")
    where = f"{src['kernel_path']}"
else:
    cpus = open(f"{o}/node1-cpulist").read().strip() if os.path.exists(f"{o}/node1-cpulist") else "?"
    pages = src["pages"]["by_numa_node"]
    if cpus != "":
        bad.append(f"node 1 has CPUs '{cpus}' (want a CPU-less node)")
    if src["numa_node"] != 1 or not src["numa_bound"]:
        bad.append(f"pool bound to node {src['numa_node']} ({src['numa_bound']})")
    if set(pages) != {"1"}:
        bad.append(f"pool pages by node {pages}")
    where = f"tmpfs pool bound to CPU-less node 1 (pages by node {pages}, onlined from dax0.0)"
print("; ".join(bad) if bad else f"{run['ops']} ops, {run['throughput_mops'] * 1e3:.2f} Kops; {where}; {said}")
sys.exit(1 if bad else 0)
EOF
) && pass "cxl $what: $py" || { fail "cxl $what: $py"; tail -n 20 "$OUT/cxl.console"; }
  done
  rm -f "$CXLMEM" "$CXLLSA"
}

for s in "${STAGES[@]}"; do
  case "$s" in
    guests) stage_guests ;;
    cxl) stage_cxl ;;
    *) echo "pool.sh: unknown stage $s" >&2; exit 2 ;;
  esac
done
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ] && [ "$PASS" -gt 0 ]
