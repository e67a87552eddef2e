"""Results: OMB-compatible TestResult JSON and the files it is written to."""
