# The webhook service (GitHub App mode). Build: docker build -t interlock .
# Run:   docker run -p 8000:8000 -e GITHUB_APP_ID=... -e GITHUB_APP_PRIVATE_KEY="$(cat key.pem)" \
#          -e GITHUB_WEBHOOK_SECRET=... -v interlock-data:/data interlock
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /srv/interlock --create-home --shell /usr/sbin/nologin interlock \
    && install -d -o interlock -g interlock -m 0700 /data

# Dependencies first, read from pyproject.toml: their layer is rebuilt only when they change. The image serves
# the webhooks, so it takes the service extra too (a mission job installs the core alone).
COPY pyproject.toml /tmp/build/pyproject.toml
RUN python -c "import tomllib; p = tomllib.load(open('/tmp/build/pyproject.toml', 'rb')); print('\n'.join(p['project']['dependencies'] + p['project']['optional-dependencies']['service']))" \
        > /tmp/build/requirements.txt \
    && pip install -r /tmp/build/requirements.txt

# Then the project itself, installed without its source left behind; the graph library is its package
# data (app.library), found as every install finds it. tests/test_packaging.py builds from these COPY lines.
COPY README.md LICENSE /tmp/build/
COPY app /tmp/build/app
COPY graphs /tmp/build/graphs
RUN pip install --no-deps /tmp/build && rm -rf /tmp/build

# The service's data folder: the embedded delivery queue (SQLite) that makes a 202 durable. Owned by the user the
# service runs as, so the queue can be created; a volume, so that it outlives the container (compose.yaml).
ENV INTERLOCK_DATA_DIR=/data
VOLUME /data

USER interlock
WORKDIR /srv/interlock
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
CMD ["interlock", "serve", "--host", "0.0.0.0", "--port", "8000"]
