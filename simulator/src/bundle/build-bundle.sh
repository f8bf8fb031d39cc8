#!/usr/bin/env bash
# Builds the self-contained bundle of kvsim for Linux x86-64 hosts that have no Java (a GPU host
# with a driver and nothing else): kvsim-VERSION-linux-x86_64.tar.xz with a jlink runtime, the
# shaded jar, JCuda's natives, DejaVu fonts, the workloads and the launchers bin/kvsim and
# bin/gpu-validate. Run by `./kvsim bundle` after the jar is built; the layout is in README
# ("Bundle") and Note [Bundle layout] below.
#
# Usage: build-bundle.sh JAR OUT_DIR
# Environment: KVSIM_BUNDLE_JDK, the JDK to link the runtime from (default: the Temurin 25 JDK at
# /usr/lib/jvm/temurin-25-jdk-amd64 when present, else the JDK of the `java` on PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
die() { echo "kvsim bundle: $*" >&2; exit 1; }
[[ $# == 2 ]] || die "usage: build-bundle.sh JAR OUT_DIR"
jar="$1"
out="$2"
[[ -f "$jar" ]] || die "$jar: no such jar (build it with: mvn -B -DskipTests package)"
for tool in unzip zip xz tar; do
  command -v "$tool" >/dev/null 2>&1 || die "needs '$tool' on PATH (Debian package: $tool)"
done

version="$(unzip -p "$jar" kvsim/version.properties | sed -n 's/^version=//p')"
[[ -n "$version" ]] || die "$jar: no kvsim/version.properties with a version"
name="kvsim-$version-linux-x86_64"

# Note [Bundle JDK]: the runtime is linked from the Temurin 25 JDK when it is installed. That JDK
# has no jmods folder: jlink links from its own run-time image (JEP 493), which works only for
# modules of the JDK running jlink, hence the JDK's own bin/jlink. Any other JDK (Debian's 17)
# needs its jmods folder (package openjdk-17-jmods).
jdk="${KVSIM_BUNDLE_JDK:-}"
if [[ -z "$jdk" ]]; then
  if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/jlink ]]; then
    jdk=/usr/lib/jvm/temurin-25-jdk-amd64
  else
    java_bin="$(readlink -f "$(command -v java || echo /nonexistent/bin/java)")"
    jdk="${java_bin%/bin/java}"
  fi
fi
[[ -x "$jdk/bin/jlink" ]] || die "$jdk: no bin/jlink (a JDK, not a JRE, is needed; set KVSIM_BUNDLE_JDK)"
feature="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$jdk/release")"
if [[ ! -d "$jdk/jmods" ]] && (( feature < 24 )); then
  die "$jdk: JDK $feature has no jmods folder, which its jlink needs (Debian: apt-get install openjdk-$feature-jmods)"
fi

# Modules: what `jdeps --print-module-deps` finds in the shaded jar (java.base, java.desktop for
# the charts, java.sql for Jackson's date types), plus java.logging and jdk.unsupported, which
# libraries reach by reflection where jdeps cannot see it.
modules=java.base,java.desktop,java.sql,java.logging,jdk.unsupported
# Note [Bundle compression]: the tar.xz is smaller when jlink leaves the modules image
# uncompressed and xz compresses it whole (zip-compressed entries hardly shrink again), so the
# runtime is linked with --compress=zip-0 where the JDK has it (21 and newer), else none.
if (( feature >= 21 )); then compress=(--compress=zip-0); else compress=(); fi

# Note [Bundle layout]:
#   NAME/bin/kvsim          the launcher: the bundled runtime, headless AWT, lib/ as java.library.path
#   NAME/bin/gpu-validate   the one-command GPU run (`bin/kvsim gpu validate -o DIR` runs it)
#   NAME/runtime/           the jlink runtime, DejaVu fonts in runtime/lib/fonts and the
#                           lib/fontconfig.properties that maps Java's logical fonts onto them
#   NAME/lib/kvsim.jar      the shaded jar without its copies of the natives
#   NAME/lib/libJ*.so       JCuda's driver, runtime and cuBLAS natives, found by System.loadLibrary
#                           (JCuda tries that first, so nothing is extracted to a temporary folder)
#   NAME/workloads/         the repository's workload files, for the validation replays
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/bin" "$dir/lib"
"$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files "${compress[@]}" \
  --output "$dir/runtime" || die "jlink failed from $jdk"

# Headless charts need fonts; a GPU host may have none, and no libfontconfig either (the H200 host
# of issue 24 has neither): the runtime carries DejaVu in its lib/fonts folder.
fonts=/usr/share/fonts/truetype/dejavu
mkdir -p "$dir/runtime/lib/fonts"
for f in DejaVuSans.ttf DejaVuSans-Bold.ttf DejaVuSansMono.ttf DejaVuSansMono-Bold.ttf DejaVuSerif.ttf DejaVuSerif-Bold.ttf; do
  [[ -f "$fonts/$f" ]] || die "$fonts/$f: missing (Debian: apt-get install fonts-dejavu-core)"
  cp "$fonts/$f" "$dir/runtime/lib/fonts/"
done
# Without this file the JDK asks libfontconfig for fonts and fails when it is missing or finds none
# ("Fontconfig head is null"); with it, the logical fonts map onto the DejaVu files above.
cp "$here/fontconfig.properties" "$dir/runtime/lib/fontconfig.properties"

# JCuda's natives come out of the shaded jar itself (the same files as the natives jars of the
# local Maven repository), so the bundle holds exactly the version the classes were built with.
natives=(libJCudaDriver libJCudaRuntime libJCublas2)
for n in "${natives[@]}"; do
  unzip -q -j -o "$jar" "lib/$n-*-linux-x86_64.so" -d "$dir/lib" || die "$jar: holds no lib/$n-*-linux-x86_64.so"
done
unzip -l "$jar" jcuda/driver/JCudaDriver.class jcuda/jcublas/JCublas2.class >/dev/null || die "$jar: holds no JCuda classes"
cp "$jar" "$dir/lib/kvsim.jar"
zip -q -d "$dir/lib/kvsim.jar" 'lib/*' >/dev/null

cp "$here/bin/kvsim" "$here/bin/gpu-validate" "$dir/bin/"
chmod 755 "$dir/bin/kvsim" "$dir/bin/gpu-validate"
cp -r "$root/workloads" "$dir/workloads"
cp "$root/LICENSE" "$dir/"

mkdir -p "$out"
tarball="$out/$name.tar.xz"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -cf - "$name" | xz -T0 -9 > "$tarball.tmp"
mv -f "$tarball.tmp" "$tarball"
size="$(du -k "$tarball" | cut -f1)"
echo "kvsim bundle: $tarball ($((size / 1024)) MiB; runtime from $jdk)"
