# Shared by the VM stages (run.sh: Soft-RoCE; pool.sh: guests sharing one pool, a CXL device):
# Debian's packages, the guest kernel (downloaded and unpacked into the cache, never installed on
# the host) and one initramfs for every stage (busybox, the modules any stage loads, guest-init.sh).
# Sourced, with ROOT and CACHE set; vm_kernel sets KVER and KDIR, vm_initramfs sets INITRD.

vm_say() { echo "[vm $(date +%T)] $*"; }

# vm_packages PKG...: installs the missing ones from the Debian archive.
vm_packages() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  vm_say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The guest kernel: KPKG, or what linux-image-amd64 depends on.
vm_kernel() {
  KPKG=${KPKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
  [ -n "$KPKG" ] || { echo "vm: cannot resolve the kernel package (apt-get update?)" >&2; return 1; }
  KVER=${KPKG#linux-image-}
  KDIR=$CACHE/kernel-$KVER
  if [ ! -f "$KDIR/boot/vmlinuz-$KVER" ]; then
    vm_say "fetching $KPKG"
    mkdir -p "$CACHE/debs"
    (cd "$CACHE/debs" && apt-get download "$KPKG" >/dev/null)
    rm -rf "$KDIR.tmp" && mkdir -p "$KDIR.tmp"
    dpkg -x "$CACHE"/debs/"${KPKG}"_*.deb "$KDIR.tmp"
    depmod -b "$KDIR.tmp" "$KVER"
    rm -rf "$KDIR" && mv "$KDIR.tmp" "$KDIR"
  fi
}

# The modules a guest may load (guest-init.sh loads those its stage names): 9p over virtio for the
# host's files; Soft-RoCE; the CXL stack, NVDIMM and device-dax, and kmem, which onlines a dax
# device as a CPU-less NUMA node.
VM_MODULES=(virtio_pci 9pnet_virtio 9p
            dummy crc32_generic crc32-pclmul ib_core ib_uverbs rdma_rxe
            cxl_acpi cxl_pci cxl_mem cxl_pmem cxl_port nfit libnvdimm nd_pmem dax_pmem device_dax kmem)

# Builds $CACHE/initramfs.cpio.gz, again only when this file, guest-init.sh or the kernel changed.
vm_initramfs() {
  local stamp R
  stamp="$KVER $(cat "$ROOT/tests/vm/lib.sh" "$ROOT/tests/vm/guest-init.sh" | sha1sum | cut -c1-12)"
  INITRD=$CACHE/initramfs.cpio.gz
  if [ -f "$INITRD" ] && [ "$(cat "$CACHE/initramfs.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  vm_say "building the initramfs"
  R=$CACHE/root
  rm -rf "$R" && mkdir -p "$R"/{bin,sbin,proc,sys,dev,tmp,etc,usr/bin,usr/sbin,usr/lib}
  ln -s usr/lib "$R/lib"
  mkdir -p "$R/usr/lib64" && ln -s usr/lib64 "$R/lib64"
  cp /bin/busybox "$R/bin/"
  for a in $(/bin/busybox --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
  ln -sf ../bin/busybox "$R/sbin/modprobe"
  # iproute2's ip and rdma, which set up Soft-RoCE before the host's userland is mounted.
  rm -f "$R/bin/ip"
  cp /usr/sbin/ip /usr/bin/rdma "$R/usr/bin/" 2>/dev/null || cp /sbin/ip /bin/rdma "$R/usr/bin/"
  for b in "$R/usr/bin/ip" "$R/usr/bin/rdma"; do
    ldd "$b" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
  done | sort -u | while read -r lib; do
    dst=$R/usr${lib#/usr}; mkdir -p "$(dirname "$dst")"; cp -L "$lib" "$dst"
  done
  for m in "${VM_MODULES[@]}"; do
    modprobe -C /dev/null -d "$KDIR" -S "$KVER" --show-depends "$m" | awk '/^insmod/{print $2}'
  done | sort -u | while read -r ko; do
    rel=${ko#"$KDIR"/}; mkdir -p "$R/usr/$(dirname "$rel")"; cp "$ko" "$R/usr/$rel"
  done
  cp "$KDIR/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$R/usr/lib/modules/$KVER/"
  depmod -b "$R/usr" "$KVER"
  cp "$ROOT/tests/vm/guest-init.sh" "$R/init" && chmod +x "$R/init"
  (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$INITRD.tmp") && mv "$INITRD.tmp" "$INITRD"
  echo "$stamp" > "$CACHE/initramfs.stamp"
}

# vm_script_cmds CMD...: the guest-script lines that run each command between @@BEGIN and
# @@RESULT markers, timed; vm_report reads them back.
vm_script_cmds() {
  local i=0 c
  for c in "$@"; do
    i=$((i + 1))
    printf 'echo "@@BEGIN %d %s"\n' "$i" "$(echo "$c" | sed 's/"/\\"/g')"
    # Through a pipe: the serial console is a terminal, and dmrt-bench's --progress auto would
    # print its progress line there.
    printf 'S=$(date +%%s); ( %s ) 2>&1 | cat; rc=${PIPESTATUS[0]}\n' "$c"
    printf 'echo "@@RESULT %d rc=$rc seconds=$(( $(date +%%s) - S ))"\n' "$i"
  done
}

# vm_report LOG CMD...: each command's output and verdict from a console log; adds to PASS, FAIL.
vm_report() {
  local log=$1 i=0 c r
  shift
  for c in "$@"; do
    i=$((i + 1))
    echo "----- test $i: $c"
    sed -n "/^@@BEGIN $i /,/^@@RESULT $i /p" "$log" | sed '1d;$d' | tail -n 60
    r=$(grep -E "^@@RESULT $i " "$log" || true)
    if [ -n "$r" ] && echo "$r" | grep -q 'rc=0 '; then
      PASS=$((PASS + 1)); echo "PASS test $i (${r##*seconds=}s)"
    else
      FAIL=$((FAIL + 1)); echo "FAIL test $i: ${r:-no result (crash, timeout or boot failure; see $log)}"
    fi
  done
}
