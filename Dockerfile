# Worker / coordinator image. By default it serves `loadgen worker` on port 8080, which needs a
# token (-e LOADGEN_TOKEN=...); `docker run IMAGE run ...` makes it a coordinator instead.
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
EXPOSE 8080
ENTRYPOINT ["loadgen"]
CMD ["worker", "--bind", "0.0.0.0:8080"]
