#!/bin/sh
# /init of the dmrt test VMs: Soft-RoCE (rxe0) on a dummy netdev unless dmrt_rxe=0, the modules
# dmrt_mods=a,b,c names (tests/vm/lib.sh), then the host's own userland (read-only over
# virtio-9p) runs the test script chrooted. Markers start with "@@" for run.sh and pool.sh.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc none /proc
mount -t sysfs none /sys
mount -t devtmpfs none /dev
mkdir -p /dev/pts && mount -t devpts none /dev/pts
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
WORK=$(arg dmrt_work)
SCRIPT=$(arg dmrt_script)
LIMIT=$(arg dmrt_limit)
echo "@@GUEST up $(cut -d' ' -f1 /proc/uptime)s"
RXE=$(arg dmrt_rxe)
MODS="virtio_pci 9pnet_virtio 9p $(arg dmrt_mods | tr ',' ' ')"
[ "$RXE" = 0 ] || MODS="dummy crc32_generic crc32-pclmul ib_core ib_uverbs rdma_rxe $MODS"
for m in $MODS; do
  modprobe "$m" 2>/dev/null || echo "@@WARN modprobe $m failed"
done
ip link set lo up
# A host name (the kernel's default is "(none)"), which mpirun needs to launch its ranks.
hostname localhost
if [ "$RXE" != 0 ]; then
  ip link add d0 type dummy
  ip link set d0 mtu 9000 up
  ip addr add 10.77.0.1/24 dev d0
  if ! rdma link add rxe0 type rxe netdev d0; then
    echo "@@FATAL rdma link add rxe0 failed"; poweroff -f
  fi
fi
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host || {
  echo "@@FATAL cannot mount the host root"; poweroff -f; }
mount -t tmpfs none /host/tmp
mount -t tmpfs none /host/run
mkdir -p "/host$WORK" 2>/dev/null  # a work tree under /tmp lives in the tmpfs mounted above
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 work "/host$WORK" || {
  echo "@@FATAL cannot mount the work tree $WORK"; poweroff -f; }
mount -t proc none /host/proc
mount -t sysfs none /host/sys
mount --bind /dev /host/dev
mount --bind /dev/pts /host/dev/pts
# shm_open's home, for the multi-process shm test (a tmpfs, so mbind places its pages).
mkdir -p /host/dev/shm && mount -t tmpfs none /host/dev/shm
echo "@@GUEST ready $(cut -d' ' -f1 /proc/uptime)s"
# Every dmrt program in the VM authenticates its bootstrap with one fresh cluster secret (the
# nodes would otherwise listen on loopback only, unauthenticated).
DMRT_CLUSTER_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export DMRT_CLUSTER_SECRET
timeout "${LIMIT:-1200}" chroot /host /bin/bash "$SCRIPT"
echo "@@GUEST script rc=$? at $(cut -d' ' -f1 /proc/uptime)s"
sync
umount "/host$WORK" 2>/dev/null
poweroff -f
