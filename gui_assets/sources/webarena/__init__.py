"""WebArena human traces: Playwright trace zips (`playwright_trace` reads them,
`trace_recorder` records real ones with chromium, shipped in `data/`) joined to the task configs.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
