# The Patchwarden server image: `docker build -t patchwarden .`
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 patchwarden \
 && mkdir /data && chown patchwarden /data

WORKDIR /srv/patchwarden
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-cache-dir .

USER patchwarden
ENV PATCHWARDEN_HOST=0.0.0.0 \
    PATCHWARDEN_PORT=8080 \
    PATCHWARDEN_DATABASE_URL=sqlite:////data/patchwarden.db \
    PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"
ENTRYPOINT ["patchwarden"]
CMD ["serve"]
