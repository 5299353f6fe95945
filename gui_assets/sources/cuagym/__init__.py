"""Lite.CUAGym (`cua-lite/Lite.CUAGym`): agent rollouts as chat messages with batched computer
tool calls.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
