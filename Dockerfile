# Worker / coordinator image: `docker run IMAGE run ...`, `docker run IMAGE worker ...`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/loadgen
COPY pyproject.toml README.md ./
COPY src ./src
COPY configs ./configs
RUN pip install . \
 && useradd --create-home --uid 10001 loadgen
USER loadgen
WORKDIR /home/loadgen
ENTRYPOINT ["loadgen"]
CMD ["--help"]
