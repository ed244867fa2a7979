# The Patchwarden server image: `docker build -t patchwarden .`
# Sessions use bubblewrap with a user namespace inside this container, which Docker's
# default seccomp/AppArmor profiles forbid: run it with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# or use PATCHWARDEN_SANDBOX=docker with the image from sandbox/ (docs/install.md).
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 patchwarden \
 && mkdir /data && chown patchwarden /data

WORKDIR /srv/patchwarden
COPY pyproject.toml README.md ./
COPY app ./app
COPY policies ./policies
RUN pip install --no-cache-dir '.[sessions,postgres]'

USER patchwarden
ENV PATCHWARDEN_HOST=0.0.0.0 \
    PATCHWARDEN_PORT=8080 \
    PATCHWARDEN_DATABASE_URL=sqlite:////data/patchwarden.db \
    PATCHWARDEN_CACHE_DIR=/data/cache \
    PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"
ENTRYPOINT ["patchwarden"]
CMD ["serve"]
