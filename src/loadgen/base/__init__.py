"""What every layer may use: errors and their exit codes, secret redaction, HdrHistogram
coding, crash-safe file writes, and small operating-system helpers (threads, CPUs, heap).

Nothing here imports another loadgen package."""
