"""The Spark pipeline: landing files written by runs, merged into Parquet tables by a Spark job.

A regular package (not a namespace one) because executors import it from the zip the driver
ships, and zipimport finds no namespace packages.
"""
