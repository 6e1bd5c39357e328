#!/bin/bash
# Two processes joined by the TCP bootstrap: dmrt-node serves memory node 0, verbs_remote_check
# runs as compute node 1 and checks exact results, then stops the node. Exit 77 = no device.
#   two_process.sh DMRT_NODE REMOTE_CHECK
#   env: VERBS_ARGS (transport flags for both programs, e.g. "--timeout-exp 20")
set -u
NODE_BIN=$1
CHECK_BIN=$2
"$CHECK_BIN" --probe || exit $?
DIR=$(mktemp -d)
P0=$((20000 + RANDOM % 20000))
P1=$((P0 + 1))
cat > "$DIR/cluster.toml" <<TOML
[mailbox]
mailboxes = 64
slots = 8
slot_bytes = 256

[[node]]
role = "memory"
region = "32MiB"
address = "127.0.0.1:$P0"

[[node]]
role = "compute"
region = "8MiB"
address = "127.0.0.1:$P1"
TOML
# shellcheck disable=SC2086
"$NODE_BIN" --cluster "$DIR/cluster.toml" --node 0 ${VERBS_ARGS:-} > "$DIR/node.log" 2>&1 &
NPID=$!
# shellcheck disable=SC2086
"$CHECK_BIN" --cluster "$DIR/cluster.toml" --node 1 --threads 2 --fibers 4 --ops 100 ${VERBS_ARGS:-} \
  --stop
RC=$?
for _ in $(seq 1 100); do kill -0 $NPID 2>/dev/null || break; sleep 0.1; done
if kill -0 $NPID 2>/dev/null; then
  echo "dmrt-node did not stop; killing it"; kill $NPID; RC=1
fi
wait $NPID; NRC=$?
echo "--- dmrt-node log (rc=$NRC)"; cat "$DIR/node.log"
rm -rf "$DIR"
[ $RC = 0 ] && [ $NRC = 0 ] && echo "two-process verbs test passed" && exit 0
echo "two-process verbs test FAILED (check rc=$RC, node rc=$NRC)"
exit 1
