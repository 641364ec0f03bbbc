# evalward's GitHub Action image. GitHub runs Docker actions as root with the workspace
# mounted at /github/workspace and sets the working directory itself: no USER, no WORKDIR.
#
# The tag pins Python's patch release and the Debian release. Multi-platform index digest of
# this tag as pinned by several public Dockerfiles in 2026 (not re-resolved against Docker Hub
# here; `docker buildx imagetools inspect python:3.12.12-slim-bookworm` shows the current one):
#   sha256:593bd06efe90efa80dc4eee3948be7c0fde4134606dd40d8dd8dbcade98e669c
# It stays a comment so Debian's security rebuilds of the tag still reach the image.
FROM python:3.12.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first, so a source change does not reinstall them.
COPY requirements.lock /opt/evalward/requirements.lock
RUN pip install --no-deps -r /opt/evalward/requirements.lock

COPY pyproject.toml README.md /opt/evalward/
COPY src /opt/evalward/src
RUN pip install --no-deps /opt/evalward

ENTRYPOINT ["python", "-m", "evalward"]
