#!/bin/sh
# git_commit.sh SOURCE_ROOT: the commit SOURCE_ROOT was built from, for vcs_tag (tools/common/meson.build):
# the full hash, "-dirty" after it when tracked files changed. Fails (vcs_tag then writes
# "unknown") when SOURCE_ROOT is not the top of a git checkout, e.g. a tarball, even one unpacked
# inside some other repository.
top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || exit 1
[ "$top" -ef "$1" ] || exit 1
exec git -C "$1" describe --always --dirty --abbrev=40 --match=dmrt-no-such-tag
