"""WebLINX (`McGill-NLP/WebLINX-zipped`): conversational web navigation read from each
demo's replay.json, with the dataset's own splits.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
