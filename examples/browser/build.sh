#!/usr/bin/env bash
# Builds the page's WebAssembly: `pkg/web/` for the browser (index.html loads it),
# `pkg/node/` for Node. Needs Debian's Rust for the web (its wasm32 standard
# library is built from source here) and the linker of LLVM:
#   apt-get install --no-install-recommends rustc-web cargo-web rust-web-src libstd-rust-web-dev lld-22
# `wasm-bindgen` (the command, of exactly the crate's version) is installed from
# crates.io into the target folder on first use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
version=$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' "$here/Cargo.toml")
bindgen="$target/wasm-tools/wasm-bindgen-$version/bin/wasm-bindgen"

if [ ! -x "$bindgen" ]; then
    echo "installing wasm-bindgen-cli $version into $target/wasm-tools" >&2
    CARGO_TARGET_DIR="$target/wasm-tools/build" cargo install --quiet \
        wasm-bindgen-cli --version "$version" --root "$target/wasm-tools/wasm-bindgen-$version"
    rm -rf "$target/wasm-tools/build"
fi

# Debian's toolchain: its rustc knows where its library's source is.
PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 \
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22 \
CARGO_TARGET_DIR="$target" \
    /usr/bin/cargo build --quiet --release --manifest-path "$here/Cargo.toml" \
    --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort

wasm="$target/wasm32-unknown-unknown/release/toolfunc_browser.wasm"
"$bindgen" --remove-name-section --remove-producers-section --target web --out-dir "$here/pkg/web" "$wasm"
"$bindgen" --remove-name-section --remove-producers-section --target nodejs --out-dir "$here/pkg/node" "$wasm"
# A smaller module, when Binaryen's wasm-opt is on the PATH.
if command -v wasm-opt > /dev/null; then
    for dir in web node; do
        wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
            -o "$here/pkg/$dir/toolfunc_browser_bg.wasm" "$here/pkg/$dir/toolfunc_browser_bg.wasm"
    done
fi
ls -l "$here/pkg/web/toolfunc_browser_bg.wasm"
