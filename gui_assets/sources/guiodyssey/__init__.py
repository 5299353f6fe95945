"""GUI-Odyssey (`OpenGVLab/GUI-Odyssey`): cross-app navigation episodes on Android phones and
tablets, train and test of one of the release's four split files.

`source.py` declares it, `adapter.py` maps the actions, `annotations.py` reads the split files
and the annotations from whichever layout a mirror has, `screenshots.py` finds the screenshots
in folders, a zip, a zip cut into byte ranges or a multi-volume archive (read by the shared
`sources.archives` readers), and `demo.py` writes its demo mirror."""
