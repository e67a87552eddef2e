"""What the engine's values become on disk and on the wire: the result JSON and its blocks,
the journal, HdrHistogram interval logs, the CSV and JSON-lines outputs, and the worker protocol.

One module per page of docs/formats where a page exists; nothing here starts or drives a run."""
