#!/bin/sh
# git_commit.sh SOURCE_ROOT: the commit SOURCE_ROOT was built from, for vcs_tag (tools/common/meson.build):
# the full hash, "-dirty" after it when tracked files that can go into a build differ from it.
# Documentation (docs/, *.md) cannot: a tree whose only changes are regenerated result tables still
# builds the commit's binary (./dmrt.sh repro writes docs/results/, and a cxl-study run after it
# would otherwise stamp its tables "-dirty"). Fails (vcs_tag then writes "unknown") when
# SOURCE_ROOT is not the top of a git checkout, e.g. a tarball, even one unpacked inside some other
# repository.
top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || exit 1
[ "$top" -ef "$1" ] || exit 1
commit=$(git -C "$1" rev-parse HEAD) || exit 1
git -C "$1" update-index -q --refresh >/dev/null 2>&1
if git -C "$1" diff --quiet HEAD -- . ':(exclude)docs' ':(exclude,glob)**/*.md'; then
  echo "$commit"
else
  echo "$commit-dirty"
fi
