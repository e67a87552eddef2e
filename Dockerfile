# The loadgen image: a worker by default (`loadgen worker` on 0.0.0.0:8080, which needs
# -e LOADGEN_TOKEN=...); `IMAGE run ...` makes it a coordinator instead. It carries every
# driver's client: Kafka, RabbitMQ, Pulsar, Pravega, NATS JetStream, Redis Streams and RabbitMQ
# Streams. `--target spark` adds the Spark pipeline (PySpark and a Java 17 runtime, about 1.1 GB
# more).
#
# BASE is any Debian-like image with Python >= 3.11 and its venv module; the official one by
# default. Without a registry, `--build-arg BASE=...` names one made locally (docs/scaling-out.md,
# "Container image and compose").
ARG BASE=python:3.11-slim

# Wheels are built and installed into a virtual environment here, and only the environment is
# copied on: no source tree, compiler, build tools or pip caches in the image. A venv, not the
# system site-packages, because Debian's python3 marks those as externally managed.
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# A C compiler builds loadgen's compiled modules (setup.py; loadgen.engine._hotpath records), with
# Python's headers: the official images carry their own, Debian's python3 has them in
# libpython3-dev.
RUN include=$(python3 -c 'import sysconfig; print(sysconfig.get_path("include"))') \
 && if [ -f "$include/Python.h" ]; then headers=; else headers=libpython3-dev; fi \
 && apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev $headers \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY pyproject.toml setup.py README.md ./
COPY src ./src
RUN python3 -m venv /opt/loadgen/venv \
 && /opt/loadgen/venv/bin/pip install '.[pulsar,pravega,rabbitmq,nats,redis,rabbitmq-streams]'
# setup.py marks its extensions optional (pip installs on without them): the build fails here
# instead of making an image whose workers run in pure Python. src/loadgen/engine/NAME.c is
# loadgen.engine.NAME.
RUN /opt/loadgen/venv/bin/python -c "import importlib, pathlib; \
names = ['loadgen.engine.' + c.stem for c in sorted(pathlib.Path('src/loadgen/engine').glob('*.c'))]; \
assert names, 'no C sources in src/loadgen/engine'; \
[importlib.import_module(name) for name in names]; print('compiled:', *names)" \
 || { echo 'error: a compiled module of loadgen was not built (pip install -v . says why)' >&2; \
      exit 1; }

FROM build AS build-spark
RUN /opt/loadgen/venv/bin/pip install '.[pulsar,pravega,rabbitmq,nats,redis,rabbitmq-streams,spark]'

# What every image shares: the user, the environment, the entrypoint. No compiler: BASE as is.
FROM ${BASE} AS runtime
# MPLCONFIGDIR: the report's charts need a writable matplotlib cache whatever --user runs them.
ENV PATH=/opt/loadgen/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 MPLCONFIGDIR=/tmp/matplotlib
COPY configs /opt/loadgen/configs
RUN useradd --create-home --uid 10001 --user-group loadgen
USER 10001:10001
WORKDIR /home/loadgen
EXPOSE 8080
ENTRYPOINT ["loadgen"]
CMD ["worker", "--bind", "0.0.0.0:8080"]

FROM runtime AS spark
USER root
# man1 must exist for the JRE's postinst on slim images, which leave out manual pages.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build-spark /opt/loadgen/venv /opt/loadgen/venv
USER 10001:10001

# The default target comes last.
FROM runtime
COPY --from=build /opt/loadgen/venv /opt/loadgen/venv
