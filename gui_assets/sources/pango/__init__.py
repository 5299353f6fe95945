"""Pango (`chakra-labs/pango-sample`): raw browser event streams of real work sessions,
aggregated into steps.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
