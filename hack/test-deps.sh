#!/usr/bin/env bash
# What the tests need beyond the Python packages (README's test command runs this, then pytest).
#
# The Prometheus tests run the real promtool and prometheus (Debian's `prometheus` package). This
# installs it when either is missing, with apt-get (as root, or through sudo). On a host run by systemd
# the package's postinst also starts its daemon on every interface: that one is stopped and disabled,
# the tests start their own on 127.0.0.1.
set -euo pipefail

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null; then
            echo "hack/test-deps.sh: promtool and prometheus are missing; install Debian's 'prometheus' package" \
                 "(apt-get install prometheus) as root, then run this again" >&2
            exit 1
        fi
        SUDO="sudo"
    fi
    echo "hack/test-deps.sh: installing Debian's prometheus package (promtool, prometheus) for the metrics tests"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    if [ -d /run/systemd/system ]; then $SUDO systemctl disable --now --quiet prometheus.service || true; fi
fi
