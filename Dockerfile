# evalward's GitHub Action image. GitHub runs Docker actions as root with the workspace
# mounted at /github/workspace and sets the working directory itself: no USER, no WORKDIR.
FROM python:3.12-slim

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
