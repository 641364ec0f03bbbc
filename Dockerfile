# evalward's GitHub Action image. GitHub runs Docker actions as root with the workspace
# mounted at /github/workspace and sets the working directory itself: no USER, no WORKDIR.
# evalward stays root (it must switch users) and runs the pull request's agents as the
# unprivileged `evalward-agent` created below (and `evalward-agent-base`, the base side's).
#
# Two images from this file: the default (the last stage, what `image: Dockerfile` builds)
# carries Python only; `--target evalward-node` adds Node.js and npm, for agents whose
# `environment.node` names a package.json (the release publishes it as `<version>-node`).
#
# Node.js for the `-node` image: the official build, as its own image ships it. Only that
# target pulls it (BuildKit builds the stages a target needs).
FROM node:24.21.0-bookworm-slim AS node
#
# The tag pins Python's patch release and the Debian release. Multi-platform index digest of
# this tag as pinned by several public Dockerfiles in 2026 (not re-resolved against Docker Hub
# here; `docker buildx imagetools inspect python:3.12.12-slim-bookworm` shows the current one):
#   sha256:593bd06efe90efa80dc4eee3948be7c0fde4134606dd40d8dd8dbcade98e669c
# It stays a comment so Debian's security rebuilds of the tag still reach the image.
FROM python:3.12.12-slim-bookworm AS evalward

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git, without Perl: evalward runs only git's built-in commands (diff, worktree, cat-file,
# merge-base, rev-parse, ls-files, status), and Perl is half of git's 100 MB. Debian's own
# git package is installed with its Perl dependencies taken out (scripts/git-without-perl.sh),
# so dpkg's database stays whole: an image built FROM this one installs packages as usual.
# The user agents run as: its own group and no other, a uid far from the hosted runner's
# (1001, the owner of the workspace), no home, no password, no login. Written directly so
# it needs no user-management tools in the base image.
COPY scripts/git-without-perl.sh /opt/evalward/git-without-perl.sh
# hadolint ignore=DL3003,DL3008
RUN apt-get update \
    && cd /tmp && apt-get download git \
    && sh /opt/evalward/git-without-perl.sh /tmp/git_*.deb /tmp/git-noperl.deb \
    && apt-get install -y --no-install-recommends /tmp/git-noperl.deb \
    && rm -f /tmp/git_*.deb /tmp/git-noperl.deb \
    && apt-get check \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && echo 'evalward-agent:x:10001:' >> /etc/group \
    && echo 'evalward-agent-base:x:10002:' >> /etc/group \
    && echo 'evalward-agent:x:10001:10001::/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
    && echo 'evalward-agent-base:x:10002:10002::/nonexistent:/usr/sbin/nologin' >> /etc/passwd

# Dependencies first, so a source change does not reinstall them: every file checked
# against its hash in the lock, the build backend included.
COPY requirements.lock /opt/evalward/requirements.lock
RUN pip install --require-hashes --no-deps -r /opt/evalward/requirements.lock

COPY pyproject.toml README.md /opt/evalward/
COPY src /opt/evalward/src
RUN pip install --no-deps --no-build-isolation /opt/evalward

# -I: the working directory (the pull request's checkout) is not on sys.path, so a file
# there cannot stand in for evalward or a module it imports; PYTHON* variables and the
# user's site-packages are ignored too (-u: unbuffered, as PYTHONUNBUFFERED would be).
# The flags are not inherited by the agents.
ENTRYPOINT ["python", "-I", "-u", "-m", "evalward"]

# The image with Node.js and npm (`--target evalward-node`): node and npm from the official
# build, nothing else of the Node.js image.
FROM evalward AS evalward-node
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && node --version && npm --version

# The default image, Python only: the last stage is what a build without `--target` makes.
FROM evalward
