#!/usr/bin/env bash
# Installs what the end-to-end test needs, once, into a cache folder (git-ignored):
#   - code-server (VS Code in a browser) from npm, by the recipe in shared/NOTES-deps.md
#     (4.100.3 is the newest that runs on Node 20);
#   - Debian's chromium (and the headers code-server's native modules build against), with
#     apt-get when missing and we are root.
# Prints nothing but progress; safe to run again (a finished install is stamped and reused).
# Environment: SIFT_E2E_CACHE (default plugin-vscode/.e2e-cache), CODE_SERVER_VERSION.
set -euo pipefail
PLUGIN=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${CODE_SERVER_VERSION:-4.100.3}
CACHE=${SIFT_E2E_CACHE:-$PLUGIN/.e2e-cache}
DIR=$CACHE/code-server-$VERSION
STAMP=$DIR/.installed

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
command -v g++ >/dev/null || missing+=(build-essential)
command -v make >/dev/null || missing+=(make)
command -v pkg-config >/dev/null || missing+=(pkg-config)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || missing+=(libkrb5-dev)
[ -d /usr/include/libsecret-1 ] || missing+=(libsecret-1-dev)
[ -e /usr/include/X11/Xlib.h ] || missing+=(libx11-dev)
[ -d /usr/include/X11/extensions ] && [ -e /usr/include/X11/extensions/XKBfile.h ] || missing+=(libxkbfile-dev)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "e2e setup: apt-get install ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "e2e setup: missing ${missing[*]} (install them, e.g. apt-get install ${missing[*]})" >&2
        exit 1
    fi
fi

if [ -f "$STAMP" ]; then
    echo "e2e setup: code-server $VERSION is installed in $DIR"
    exit 0
fi

echo "e2e setup: installing code-server $VERSION into $DIR (several minutes, once)"
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"
# A package.json of its own, so that npm does not climb up to the extension's.
echo '{ "name": "sift-e2e-code-server", "private": true }' > package.json
npm install --ignore-scripts --no-audit --no-fund --loglevel=error "code-server@$VERSION"
export npm_config_nodedir=/usr npm_config_unsafe_perm=true npm_config_yes=true
[ -e /usr/include/node/node.h ] || unset npm_config_nodedir
npm rebuild --loglevel=error argon2
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm rebuild --loglevel=error
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev --no-audit --no-fund --loglevel=error)
touch "$STAMP"
echo "e2e setup: done"
