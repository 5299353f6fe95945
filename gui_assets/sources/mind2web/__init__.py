"""Mind2Web (`osunlp/Multimodal-Mind2Web`): human web demonstrations, full-page screenshots
sliced into viewports, with SCROLL steps to targets below the fold.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror."""
