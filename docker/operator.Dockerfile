# The KAOS operator image: the kopf operator, the helm binary it drives through pyhelm3, and
# the charts it installs (agent, modelapi, mcpserver, with their kaos-common library chart
# built in; kaos/files/crds for validation).
# Build from the repository root:
#   docker build -f docker/operator.Dockerfile -t ghcr.io/kaos-tools/kaos-operator:0.1.0 .
FROM python:3.11-slim AS helm
ARG HELM_VERSION=v4.1.4
ARG TARGETARCH=amd64
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
RUN set -eu; \
    archive="helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz"; \
    curl -fsSLo "/tmp/${archive}" "https://get.helm.sh/${archive}"; \
    curl -fsSLo "/tmp/${archive}.sha256sum" "https://get.helm.sh/${archive}.sha256sum"; \
    echo "$(cut -d ' ' -f 1 "/tmp/${archive}.sha256sum")  /tmp/${archive}" | sha256sum -c -; \
    tar -xzf "/tmp/${archive}" -C /tmp; \
    install -m 0755 "/tmp/linux-${TARGETARCH}/helm" /usr/local/bin/helm

# The workload charts with their dependency (the kaos-common library chart) built in:
# charts/<chart>/charts/kaos-common-<version>.tgz, as each Chart.lock says.
FROM helm AS charts
COPY scripts/chart-deps /usr/local/bin/chart-deps
COPY charts /charts
RUN HELM=/usr/local/bin/helm chart-deps /charts

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    KAOS_CHARTS_DIR=/opt/kaos/charts \
    HOME=/tmp

COPY --from=helm /usr/local/bin/helm /usr/local/bin/helm

# The control side only (kaos: operator/pyproject.toml).
WORKDIR /src
COPY operator ./operator
RUN pip install ./operator && rm -rf /src

COPY --from=charts /charts /opt/kaos/charts

RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp kaos
USER 10001
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["kaos-operator"]
