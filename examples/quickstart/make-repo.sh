#!/bin/sh
# Turn v1/ and v2/ into a git repository with two commits: tinyslug 1.0 (with a bug)
# and tinyslug 1.1 (the fix and its new test). Usage: sh make-repo.sh DEST
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: sh make-repo.sh DEST}
mkdir -p "$dest"
cd "$dest"
git init -q
git config user.name "tinyslug maintainer"
git config user.email "maintainer@example.invalid"
cp -R "$here/v1/." .
git add -A
git commit -q -m "tinyslug 1.0"
rm -rf tinyslug tests
cp -R "$here/v2/." .
git add -A
git commit -q -m "tinyslug 1.1: collapse repeated separators"
