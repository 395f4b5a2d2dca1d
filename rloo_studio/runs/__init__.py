"""Runs of every kind: the one-at-a-time job runner and its trainer callback, the catalog of run
folders (summaries, adapters, deletion), chart series, what a run records to be repeated (reproduce.py),
accelerate launch files, and export of a trained model."""
