#!/bin/sh
# npm/build.sh VERSION OUTDIR builds the npm packages of mcpstdio from this
# checkout, the way esbuild ships its native binaries: in OUTDIR, one
# package per system (@mcpstdio/linux-x64, linux-arm64, darwin-x64,
# darwin-arm64, win32-x64, win32-arm64), each holding cmd/mcpstdio
# cross-compiled for it (CGO_ENABLED=0, so it runs on any libc) and chosen
# by npm through its "os" and "cpu"; and the package mcpstdio, whose bin is
# a small Node script that runs the binary of the one npm installed (its
# optional dependencies, at VERSION). Nothing is downloaded at install time.
#
# The binaries are stamped with VERSION and the commit (mcpstdio version
# prints them). To publish, the system packages first:
#
#   for d in OUTDIR/*-*/ OUTDIR/mcpstdio/; do (cd "$d" && npm publish --access public); done
set -eu

if [ $# -ne 2 ]; then
	echo "usage: npm/build.sh VERSION OUTDIR   (VERSION as 0.1.0 or v0.1.0)" >&2
	exit 2
fi
version=${1#v}
out=$2
if ! printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'; then
	echo "npm/build.sh: $1 is not a version such as 0.1.0 or 0.2.0-rc.1" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)

# The commit, stamped by the linker: the toolchain records none for a git
# worktree or with -buildvcs=false.
commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
modified=false
if [ -n "$commit" ] && [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	modified=true
fi
pkg=github.com/mcpstdio/mcpstdio/cmd/internal/version
ldflags="-s -w -X $pkg.stamp=v$version -X $pkg.commit=$commit -X $pkg.modified=$modified"

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# package.json fields every package has.
common='"version": "'$version'",
  "license": "MIT",
  "homepage": "https://github.com/mcpstdio/mcpstdio",
  "repository": {
    "type": "git",
    "url": "git+https://github.com/mcpstdio/mcpstdio.git"
  },'

deps=
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
	goos=${target%/*}
	goarch=${target#*/}
	case $goos in windows) os=win32 exe=mcpstdio.exe ;; *) os=$goos exe=mcpstdio ;; esac
	case $goarch in amd64) cpu=x64 ;; *) cpu=$goarch ;; esac
	dir=$out/$os-$cpu
	mkdir -p "$dir/bin"
	(cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$dir/bin/$exe" ./cmd/mcpstdio)
	cp "$root/LICENSE" "$dir/"
	cat >"$dir/package.json" <<EOF
{
  "name": "@mcpstdio/$os-$cpu",
  $common
  "description": "The mcpstdio binary for $os $cpu: install the package mcpstdio, which runs it.",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "preferUnplugged": true,
  "files": ["bin", "LICENSE", "README.md"]
}
EOF
	cat >"$dir/README.md" <<EOF
# @mcpstdio/$os-$cpu

The mcpstdio binary for $os $cpu. Install the package \`mcpstdio\`, which depends on this one
on this system and runs it: https://github.com/mcpstdio/mcpstdio
EOF
	deps="$deps${deps:+,
}    \"@mcpstdio/$os-$cpu\": \"$version\""
done

dir=$out/mcpstdio
mkdir -p "$dir/bin"
cp "$root/npm/mcpstdio/bin/mcpstdio.js" "$dir/bin/"
cp "$root/npm/mcpstdio/README.md" "$root/LICENSE" "$dir/"
cat >"$dir/package.json" <<EOF
{
  "name": "mcpstdio",
  $common
  "description": "Makes MCP stdio back-pressure bugs reproducible: probe any stdio MCP server, record what passes between an agent and its servers.",
  "keywords": ["mcp", "model-context-protocol", "stdio", "testing"],
  "bin": {
    "mcpstdio": "bin/mcpstdio.js"
  },
  "files": ["bin", "LICENSE", "README.md"],
  "engines": {
    "node": ">=18"
  },
  "optionalDependencies": {
$deps
  }
}
EOF
echo "npm packages of mcpstdio $version in $out"
