# toolcall-guard as a container: `docker build -t toolcall-guard:0.1.0 .`
# Config by environment (TOOLCALL_GUARD_…, nested with __) and optionally a TOML file mounted
# at /app/config/toolcall-guard.toml. The SQLite repair log lives on the /data volume.
#
# The base is a build argument: the official python:3.11-slim by default, or any Debian-based
# image with python3 (3.11) and its venv module, such as the one `make docker-test` makes from
# Debian's packages where no registry can be reached. Both layouts work (/usr/local/bin/python
# in the official image, /usr/bin/python3 in Debian's): everything runs from a virtual
# environment at /opt/venv, which is also what keeps Debian's system Python untouched.
ARG BASE_IMAGE=python:3.11-slim

# Build stage: the dependencies from the lock file and the project, into /opt/venv.
FROM ${BASE_IMAGE} AS build

# `make docker-test` prunes this project's superseded (untagged) images by this label.
LABEL org.opencontainers.image.title="toolcall-guard"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
RUN python3 -m venv /opt/venv

# Dependencies get their own layer, installed from the lock file: every version pinned, so two
# builds of one commit run the same code. Regenerate it with the command at its top. It holds
# the postgres and otel extras (OpenTelemetry stays off until OTEL_EXPORTER_OTLP_ENDPOINT is set).
COPY requirements.lock ./
RUN /opt/venv/bin/python -m pip install --no-deps --requirement requirements.lock

COPY pyproject.toml README.md ./
COPY proxy ./proxy
# The installer itself is no runtime dependency: it leaves the environment with the project.
RUN /opt/venv/bin/python -m pip install --no-deps . \
    && /opt/venv/bin/python -m pip uninstall --yes --quiet pip setuptools

# Runtime stage: the base, the environment, the config; no compiler, no installer, no sources.
FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="toolcall-guard"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH

RUN useradd --system --uid 10001 --no-create-home --home-dir /app guard \
    && mkdir /data \
    && chown guard /data

COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY config ./config

USER 10001

# In a container the proxy must listen beyond loopback; the repair-log API then answers 403
# until TOOLCALL_GUARD_ADMIN_TOKEN is set, and with a provider key in the environment the proxy
# wants client keys (TOOLCALL_GUARD_CLIENT_KEYS) so that it is no open relay.
ENV TOOLCALL_GUARD_SERVER__HOST=0.0.0.0 \
    TOOLCALL_GUARD_SERVER__PORT=8780 \
    TOOLCALL_GUARD_REPAIR_LOG__URL=sqlite:////data/repairs.sqlite3

VOLUME ["/data"]
EXPOSE 8780

# The port comes from the environment, so a container run with another
# TOOLCALL_GUARD_SERVER__PORT is still checked where it listens.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TOOLCALL_GUARD_SERVER__PORT', '8780'), timeout=2)"]

ENTRYPOINT ["toolcall-guard"]
CMD ["serve"]
