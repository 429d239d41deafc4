# syntax=docker/dockerfile:1
#
# One image for both products: karmada-controller-manager (the default command) and
# karmada-descheduler (the Helm chart sets `command` per component).
#
#   docker build -t karmada-rebalance:0.1.0 \
#       --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" \
#       --build-arg GIT_TREE_STATE="$(test -z "$(git status --porcelain)" && echo clean || echo dirty)" \
#       --build-arg BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker run --rm --read-only karmada-rebalance:0.1.0 --help
#   docker run --rm --read-only --entrypoint karmada-descheduler karmada-rebalance:0.1.0 --help
#
# The build stage turns the project and every dependency into wheels; the runtime stage installs
# those wheels from a bind mount of the build stage (BuildKit), so no wheel, compiler, source tree
# or pip cache ends up in any layer of the final image.

FROM python:3.11.13-slim-bookworm AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY clusteraccess ./clusteraccess
COPY controller_manager ./controller_manager
COPY controllers ./controllers
COPY descheduler ./descheduler
COPY devplane ./devplane
COPY estimator ./estimator
COPY interpreter ./interpreter
COPY karmada_api ./karmada_api
COPY kube_api ./kube_api
COPY rebalancectl ./rebalancectl
COPY sharedcli ./sharedcli

# The project's wheel plus a wheel of each dependency, so the runtime stage needs no index and no
# build backend (anything with a C extension is built here, where a compiler could be added).
RUN pip wheel --no-cache-dir --wheel-dir /wheels .


FROM python:3.11.13-slim-bookworm

# No .pyc writes and no buffered logs: the chart runs the container with a read-only root
# filesystem, and log lines must reach `kubectl logs` as they are written.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Install from the build stage's wheels only (--no-index), then drop what only installing needs:
# setuptools and wheel are build tools (nothing here imports them at run time), and pip's cache.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index /wheels/*.whl \
    && pip uninstall --yes setuptools wheel \
    && rm -rf /root/.cache /tmp/*

# 65532 is the conventional "nonroot" uid/gid of distroless images; numeric so that Kubernetes'
# runAsNonRoot can verify it without a passwd entry.
USER 65532:65532

# The build arguments are declared after the install: every RUN after an ARG sees it, so a REVISION
# or BUILD_DATE above it would rebuild the install layer on every commit or every build.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/karmada-rebalance/karmada-rebalance
ARG GIT_TREE_STATE=unknown
ARG BUILD_DATE=unknown

LABEL org.opencontainers.image.title="karmada-rebalance" \
      org.opencontainers.image.description="Karmada's WorkloadRebalancer controller-manager and karmada-descheduler, reimplemented in Python" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"

# The labels of the karmada_build_info metric (karmada_api/buildinfo.py).
ENV KARMADA_GIT_COMMIT="${REVISION}" \
    KARMADA_GIT_TREE_STATE="${GIT_TREE_STATE}" \
    KARMADA_BUILD_DATE="${BUILD_DATE}"

# 8080 metrics (both), 10357 controller-manager /healthz, 10358 descheduler /healthz.
EXPOSE 8080 10357 10358

ENTRYPOINT ["karmada-controller-manager"]
