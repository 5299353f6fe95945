"""The Dagster shell: the only package (with definitions.py) that imports dagster."""
