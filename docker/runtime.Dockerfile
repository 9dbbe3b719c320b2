# The kaos runtime image: every Agent (`kaos-runtime agent`) and every python-string MCPServer
# (`kaos-runtime mcp`); the workload charts set the command. Build from the repository root:
#   docker build -f docker/runtime.Dockerfile -t ghcr.io/kaos-tools/kaos-runtime:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp

# The data plane only (kaos-runtime: runtime/pyproject.toml).
WORKDIR /src
COPY runtime ./runtime
RUN pip install ./runtime && rm -rf /src

RUN useradd --uid 10001 --user-group --no-create-home --home-dir /tmp kaos
USER 10001
WORKDIR /tmp
EXPOSE 8000
ENTRYPOINT ["kaos-runtime"]
CMD ["agent"]
