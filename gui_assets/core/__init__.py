"""The core: what every layer above shares, and which imports nothing of the package above it.

The IR and its action space (`ir`), the closed list of drop reasons (`drops`), the build's knobs
(`config`), the output layout (`layout`), atomic writes (`atomic`), image decoding (`images`),
the episode store between stages (`episode_store`), the causal cursor (`cursor`), counters
(`stats`), split rules (`splits`), the one deflater (`deflate`, `png`), the reader of LIBERO
shards (`shard_reader`) and code versions derived from the code (`code_version`).

Modules here import only each other and third-party libraries: never Dagster, never a source.
"""
