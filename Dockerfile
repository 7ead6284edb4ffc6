# toolcall-guard as a container: `docker build -t toolcall-guard .`
# Config by environment (TOOLCALL_GUARD_…, nested with __) and optionally a TOML file mounted
# at /app/config/toolcall-guard.toml. The SQLite repair log lives on the /data volume.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies get their own layer: it is rebuilt only when pyproject.toml changes.
COPY pyproject.toml README.md ./
RUN mkdir proxy && touch proxy/__init__.py \
    && pip install "./[postgres]" \
    && pip uninstall --yes toolcall-guard \
    && rm -rf proxy

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
    TOOLCALL_GUARD_REPAIR_LOG__URL=sqlite:////data/repairs.sqlite3

VOLUME ["/data"]
EXPOSE 8780

HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8780/healthz', timeout=2)"]

ENTRYPOINT ["toolcall-guard"]
CMD ["serve"]
