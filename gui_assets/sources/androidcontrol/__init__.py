"""AndroidControl (`google-research/android_control`, released in a storage bucket, not on the
hub): phone and tablet demonstrations as GZIP TFRecord files of `tf.train.Example` episodes.

`source.py` declares it, `adapter.py` reads it, `demo.py` writes its demo mirror and
`tfrecord.py` reads (and, for the demo, writes) TFRecord files and Examples without TensorFlow."""
