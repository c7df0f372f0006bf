# The webhook service (GitHub App mode). Build: docker build -t interlock .
# Run:   docker run -p 8000:8000 -e GITHUB_APP_ID=... -e GITHUB_APP_PRIVATE_KEY="$(cat key.pem)" \
#          -e GITHUB_WEBHOOK_SECRET=... interlock
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    INTERLOCK_LIBRARY=/srv/interlock/graphs

RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /srv/interlock --shell /usr/sbin/nologin interlock

WORKDIR /srv/interlock
COPY pyproject.toml README.md LICENSE ./
COPY app ./app
COPY graphs ./graphs
RUN pip install . && rm -rf build *.egg-info

USER interlock
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
CMD ["interlock", "serve", "--host", "0.0.0.0", "--port", "8000"]
