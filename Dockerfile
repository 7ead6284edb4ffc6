# toolcall-guard as a container: `docker build -t toolcall-guard .`
# Config by environment (TOOLCALL_GUARD_…, nested with __) and optionally a TOML file mounted
# at /app/config/toolcall-guard.toml. The SQLite repair log lives on the /data volume.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies get their own layer, installed from the lock file: every version pinned, so two
# builds of one commit run the same code. Regenerate it with the command at its top.
COPY requirements.lock ./
RUN pip install --no-deps --requirement requirements.lock

COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY config ./config
RUN pip install --no-deps . \
    && useradd --system --uid 10001 --no-create-home --home-dir /app guard \
    && mkdir /data \
    && chown guard /data

USER 10001

# In a container the proxy must listen beyond loopback; the repair-log API then answers 403
# until TOOLCALL_GUARD_ADMIN_TOKEN is set.
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
