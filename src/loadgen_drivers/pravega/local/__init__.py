"""loadgen's local Pravega: the controller's gRPC and the segment store's wire protocol,
in memory, on 127.0.0.1 (docs/drivers/pravega-local.md)."""
