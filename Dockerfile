# The loadgen image: a worker by default (`loadgen worker` on 0.0.0.0:8080, which needs
# -e LOADGEN_TOKEN=...); `IMAGE run ...` makes it a coordinator instead. It carries every
# driver's client: Kafka, RabbitMQ, Pulsar and Pravega.
#
# BASE is any Debian-like image with Python >= 3.11 and its venv module; the official one by
# default. Without a registry, `--build-arg BASE=...` names one made locally (README, "Container
# image").
ARG BASE=python:3.11-slim

# Wheels are built and installed into a virtual environment here, and only the environment is
# copied on: no source tree, build tools or pip caches in the image. A venv, not the system
# site-packages, because Debian's python3 marks those as externally managed.
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
RUN python3 -m venv /opt/loadgen/venv \
 && /opt/loadgen/venv/bin/pip install '.[pulsar,pravega]'

FROM ${BASE}
# MPLCONFIGDIR: the report's charts need a writable matplotlib cache whatever --user runs them.
ENV PATH=/opt/loadgen/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 MPLCONFIGDIR=/tmp/matplotlib
COPY --from=build /opt/loadgen/venv /opt/loadgen/venv
COPY configs /opt/loadgen/configs
RUN useradd --create-home --uid 10001 --user-group loadgen
USER 10001:10001
WORKDIR /home/loadgen
EXPOSE 8080
ENTRYPOINT ["loadgen"]
CMD ["worker", "--bind", "0.0.0.0:8080"]
