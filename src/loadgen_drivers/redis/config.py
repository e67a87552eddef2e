"""The Redis driver file: OMB's fields as OMB's driver-redis reads them, and loadgen's own.

OMB's ``RedisClientConfig`` has ``redisHost``, ``redisPort``, ``redisUser``, ``redisPass`` and
the Jedis pool's ``jedisPoolMaxTotal`` / ``jedisPoolMaxIdle``. Here the pool is redis-py's
connection pool: every producer and every consumer holds one connection of it for its life (a
consumer's blocks in ``XREADGROUP``, a producer's carries its pipeline), and topic creation
and deletion borrow one for a moment. ``jedisPoolMaxTotal`` caps how many it opens at once, so
a workload needing more clients than that fails at the client that would be one too many,
naming the field; ``jedisPoolMaxIdle`` caps how many released connections it keeps open.

loadgen's fields: the ``db`` number, ``XADD``'s ``MAXLEN`` trimming (off by default: a trimmed
entry nobody read is a lost message, and a catch-up backlog must stay whole), the producer's
``pipelineDepth``, the consumer's ``readCount`` and ``blockMs``, where the stamp travels, and a
``tls`` block. Nothing here imports redis-py: the field reference is generated from this
module.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from loadgen.driver_api.tls_block import TlsBlock

DEFAULT_PORT = 6379


class Trim(StrEnum):
    APPROXIMATE = "approximate"
    EXACT = "exact"


class StampCarrier(StrEnum):
    PAYLOAD = "payload"
    FIELD = "field"


class RedisConfig(BaseModel):
    """The broker section of a Redis driver file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    redis_host: str = Field(alias="redisHost", min_length=1)
    """OMB's: the Redis server's host name or address (one server: no Redis Cluster)."""
    redis_port: int = Field(default=DEFAULT_PORT, alias="redisPort", ge=1, le=65535)
    """OMB's: its port."""
    redis_user: str | None = Field(default=None, alias="redisUser")
    """OMB's: the ACL user (``AUTH user pass``); unset with ``redisPass``: ``AUTH pass``, the
    ``default`` user."""
    redis_pass: str | None = Field(default=None, alias="redisPass")
    """OMB's: the password; unset: no ``AUTH``."""
    jedis_pool_max_total: int | None = Field(default=None, alias="jedisPoolMaxTotal", ge=1)
    """OMB's Jedis pool size: here the most connections the driver holds at once (one per
    producer, one per consumer, one for a moment to create or delete streams); unset: no
    limit."""
    jedis_pool_max_idle: int | None = Field(default=None, alias="jedisPoolMaxIdle", ge=0)
    """OMB's: how many released connections the pool keeps open for reuse (the rest are
    closed); unset: all of them."""
    db: int = Field(default=0, ge=0)
    """The logical database (``SELECT``)."""
    max_len: int | None = Field(default=None, alias="maxLen", ge=1)
    """``XADD … MAXLEN`` per stream key; unset (the default): no trimming, every entry stays
    until the run deletes its keys. A benchmark that counts every message needs that: an
    entry trimmed before a subscription read it is lost, and a catch-up backlog larger than
    this would be cut."""
    trim: Trim = Trim.APPROXIMATE
    """With ``maxLen``: ``approximate`` (``MAXLEN ~``, whole radix-tree nodes, what Redis
    recommends) or ``exact`` (``MAXLEN =``, more work per XADD)."""
    pipeline_depth: int = Field(default=100, alias="pipelineDepth", ge=1, le=100_000)
    """The most ``XADD``s a producer buffers before it writes them as one pipeline and reads
    their replies (one round trip per batch); the producer loop's poll and flush write a
    shorter batch, so at low rates a message waits for no other."""
    read_count: int = Field(default=500, alias="readCount", ge=1)
    """``XREADGROUP … COUNT``: the most entries a consumer takes per stream key and read."""
    block_ms: int = Field(default=100, alias="blockMs", ge=1, le=10_000)
    """``XREADGROUP … BLOCK``: how long a read waits for entries; also how soon a consumer
    notices a pause or a close."""
    stamp_in: StampCarrier = Field(default=StampCarrier.PAYLOAD, alias="stampIn")
    """Where loadgen's stamp travels: ``payload`` (its first 32 bytes, cheapest; a shorter
    payload gets the field) or ``field`` (an ``lg-stamp`` entry field beside ``payload``, which
    leaves the payload as written)."""
    tls: TlsBlock | None = None
    """TLS to the server (``rediss://``); unset: plain TCP."""
