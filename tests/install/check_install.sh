#!/bin/sh
# check_install.sh BUILD SOURCE LIBDIR CMAKE CC — the install test of `make test`.
#
# Installs BUILD into a temporary prefix and checks the copy: the files and
# links (libtjit.so -> libtjit.so.0 -> libtjit.so.X.Y.Z, its SONAME), that no
# installed file names the build or the source tree, and that tjit --version
# runs. Then it builds tests/install/hello.c against the installed copy alone,
# with find_package(tjit) (tjit::tjit and tjit::tjit_static) and with
# pkg-config (shared, and --static), runs the four programs and checks which
# libtjit each one loads. Those builds run with the build and source trees
# hidden under empty mounts in a mount namespace of their own, so nothing can
# come from them; where that cannot be done (a container without user
# namespaces, or without mount) the trees stay visible, and the checks of
# paths (compile and link lines, RUNPATHs, the libraries loaded) are what
# guards against it.
set -eu

fail() {
    echo "check_install: $*" >&2
    exit 1
}

[ $# -eq 5 ] || fail "usage: check_install.sh BUILD SOURCE LIBDIR CMAKE CC"
build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)
libdir=$3
cmake=$4
cc=$5
work=$(mktemp -d /tmp/tjit-install.XXXXXX)
work=$(cd "$work" && pwd -P)
trap 'rm -rf "$work"' EXIT
case "$work/" in "$build"/* | "$src"/*) fail "the temporary directory $work lies inside the tree" ;; esac
prefix=$work/prefix

# ---- the install -------------------------------------------------------------------------
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; }
version=$(sed -n 's/^#define TJIT_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/tjit/version.h")
[ -n "$version" ] || fail "include/tjit/version.h has no TJIT_VERSION_STRING"
major=${version%%.*}
for f in "$libdir/libtjit.a" "$libdir/libtjit.so.$version" include/tjit/tjit.h include/tjit/ops_api.h \
    include/tjit/runtime.h include/tjit/profile.h bin/tjit "$libdir/cmake/tjit/tjitConfig.cmake" \
    "$libdir/cmake/tjit/tjitConfigVersion.cmake" "$libdir/pkgconfig/tjit.pc"; do
    [ -f "$prefix/$f" ] || fail "$f was not installed"
done
[ "$(readlink "$prefix/$libdir/libtjit.so")" = "libtjit.so.$major" ] || fail "libtjit.so does not link to libtjit.so.$major"
[ "$(readlink "$prefix/$libdir/libtjit.so.$major")" = "libtjit.so.$version" ] ||
    fail "libtjit.so.$major does not link to libtjit.so.$version"
readelf -d "$prefix/$libdir/libtjit.so.$version" | grep -q "SONAME.*\[libtjit.so.$major\]" ||
    fail "libtjit.so.$version has no SONAME libtjit.so.$major"

# No installed file names the trees: the text files anywhere, the binaries in
# what the loader reads (RUNPATH, NEEDED). (Debug information may name the
# sources a binary was compiled from; nothing reads it to build or run.)
leaks=$(grep -rIl -e "$build" -e "$src" "$prefix" || true)
[ -z "$leaks" ] || fail "installed files name the build or source tree: $leaks"
# the MPI plugin (distributed/), where the build made one: beside libtjit.so
binaries="$prefix/$libdir/libtjit.so.$version $prefix/bin/tjit"
if [ -f "$build/libtjit_mpi.so" ]; then
    [ -f "$prefix/$libdir/libtjit_mpi.so" ] || fail "$libdir/libtjit_mpi.so (the MPI plugin) was not installed"
    binaries="$binaries $prefix/$libdir/libtjit_mpi.so"
fi
for f in $binaries; do
    if readelf -d "$f" | grep -e "$build" -e "$src"; then fail "$f names the tree in its dynamic section"; fi
done
"$prefix/bin/tjit" --version | grep -q "tjit $version" || fail "bin/tjit --version does not say $version"

# ---- programs built against the install --------------------------------------------------
mkdir "$work/hello"
cp "$src/tests/install/hello.c" "$src/tests/install/CMakeLists.txt" "$work/hello/"
cat >"$work/consumers.sh" <<EOF
set -eu
cd "$work"
fail() { echo "check_install: \$*" >&2; exit 1; }
"$cmake" -S hello -B cmake-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" \\
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >cmake.log 2>&1 ||
    { cat cmake.log; fail "configuring a project with find_package(tjit) failed"; }
"$cmake" --build cmake-build -- VERBOSE=1 >>cmake.log 2>&1 || { cat cmake.log; fail "building it failed"; }
grep -q "tjit_DIR:PATH=$prefix/$libdir/cmake/tjit" cmake-build/CMakeCache.txt ||
    fail "find_package found another tjit: \$(grep tjit_DIR cmake-build/CMakeCache.txt)"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pkg-config --cflags --libs --static tjit >pkg-config.txt
"$cc" hello/hello.c -o hello_pc_shared \$(pkg-config --cflags --libs tjit) \\
    -Wl,-rpath,"\$(pkg-config --variable=libdir tjit)" || fail "linking with pkg-config --libs failed"
"$cc" hello/hello.c -o hello_pc_static \$(pkg-config --cflags tjit) \\
    -Wl,-Bstatic \$(pkg-config --static --libs tjit) || fail "linking with pkg-config --static failed"
for p in cmake-build/hello_shared hello_pc_shared cmake-build/hello_static hello_pc_static; do
    ./\$p >\$p.out 2>&1 || { cat \$p.out; fail "\$p failed"; }
    cat \$p.out
    loaded=\$(ldd \$p | grep libtjit || true)
    case \$p in
    *shared) echo "\$loaded" | grep -q "=> $prefix/$libdir/libtjit.so.$major " ||
        fail "\$p loads '\$loaded', not the installed libtjit.so.$major" ;;
    *) [ -z "\$loaded" ] || fail "\$p, linked statically, loads \$loaded" ;;
    esac
done
EOF
mkdir "$work/probe"
if unshare --user --map-root-user --mount sh -c 'mount -t tmpfs probe "$1"' probe "$work/probe" 2>/dev/null; then
    echo "check_install: building against $prefix with $build and $src hidden"
    # the build tree first: it may lie inside the source tree, which then hides it too
    unshare --user --map-root-user --mount sh -c \
        'mount -t tmpfs hidden "$1" && mount -t tmpfs hidden "$2" && exec sh "$3"' \
        hide "$build" "$src" "$work/consumers.sh"
else
    echo "check_install: no user namespace or mount here: building against $prefix with the trees visible"
    sh "$work/consumers.sh"
fi
# what the compilers and the linker were told
leaks=$(grep -rIl -e "$build" -e "$src" "$work/cmake-build" "$work/pkg-config.txt" || true)
[ -z "$leaks" ] || fail "the builds against the install name the build or source tree: $leaks"
for p in cmake-build/hello_shared hello_pc_shared cmake-build/hello_static hello_pc_static; do
    if readelf -d "$work/$p" | grep -e "$build" -e "$src"; then fail "$p names the tree in its dynamic section"; fi
done
echo "check_install: ok ($version in $prefix: find_package and pkg-config, shared and static)"
