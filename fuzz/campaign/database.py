"""The example database a campaign shares: a directory (one machine) or a
Redis server (``redis://host:port/db``, many machines), both Hypothesis' own."""
from __future__ import annotations

import datetime

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase


class DatabaseError(RuntimeError):
    """The database named on the command line cannot be used."""


def open_database(spec: str, *, check: bool = False) -> ExampleDatabase:
    """``spec`` is a directory path or a ``redis://`` URL. ``check`` pings a
    Redis server now, so a wrong address is one clear error up front."""
    if not spec.startswith(("redis://", "rediss://")):
        return DirectoryBasedExampleDatabase(spec)
    try:
        import redis  # optional (the redis extra): only a redis:// database needs it
        from hypothesis.extra.redis import RedisExampleDatabase  # imports redis too
    except ImportError:
        raise DatabaseError("--database redis://... needs the redis package: "
                            "pip install 'discharge-fuzz[redis]'") from None
    client = redis.Redis.from_url(spec, socket_connect_timeout=5)
    if check:
        try:
            client.ping()
        except redis.RedisError as e:
            raise DatabaseError(f"cannot reach {spec}: {e}") from None
    # Entries never expire on their own: the campaign owns their lifetime.
    return RedisExampleDatabase(client, expire_after=datetime.timedelta(days=3650))
