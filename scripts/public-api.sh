#!/usr/bin/env bash
# The library's public API is deliberate: `public-api.txt` lists it (every item a user
# can name, with signatures; scripts/public_api.py renders rustdoc's JSON), and this
# fails when the code's API differs from it. After a change you mean, review the diff
# and run `scripts/public-api.sh --bless`. rustdoc's JSON output is unstable, hence
# RUSTC_BOOTSTRAP on the stable toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTC_BOOTSTRAP=1 cargo rustdoc --quiet -p fluss-datafusion --lib -- \
  -Z unstable-options --output-format json
python3 scripts/public_api.py target/doc/fluss_datafusion.json >target/public-api.txt
if [ "${1:-}" = "--bless" ]; then
  cp target/public-api.txt public-api.txt
  echo "public-api.txt: $(wc -l <public-api.txt) items"
  exit 0
fi
if ! diff -u public-api.txt target/public-api.txt; then
  echo "the public API differs from public-api.txt (above); if that is meant, run scripts/public-api.sh --bless" >&2
  exit 1
fi
echo "public API unchanged: $(wc -l <public-api.txt) items"
