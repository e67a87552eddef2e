"""The Spark pipeline: landing files written by runs, merged into Parquet tables by a Spark job."""
