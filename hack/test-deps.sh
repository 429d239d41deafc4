#!/usr/bin/env bash
# What the tests need beyond the Python packages (README's test command runs this, then pytest).
#
# The Prometheus tests run the real promtool and prometheus (Debian's `prometheus` package). This
# installs it when either is missing, with apt-get (as root, or through sudo). On a host run by systemd
# the package's postinst also starts its daemon on every interface: that one is stopped and disabled,
# the tests start their own on 127.0.0.1. The real-plane tier needs etcd (Debian's `etcd-server`), installed
# the same way; its package's daemon is stopped likewise (the tier starts its own etcds on 127.0.0.1).
set -euo pipefail

need=()
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then need+=(prometheus); fi
# The real-plane tier (tests/realplane) runs ../shared/refplane, whose kube-apiservers keep their data in etcd
if [ ! -x /usr/bin/etcd ]; then need+=(etcd-server); fi
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null; then
            echo "hack/test-deps.sh: missing Debian packages: ${need[*]}; install them" \
                 "(apt-get install ${need[*]}) as root, then run this again" >&2
            exit 1
        fi
        SUDO="sudo"
    fi
    echo "hack/test-deps.sh: installing Debian's ${need[*]} for the metrics and real-plane tests"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    if [ -d /run/systemd/system ]; then
        for unit in prometheus etcd; do $SUDO systemctl disable --now --quiet "$unit.service" || true; done
    fi
fi
