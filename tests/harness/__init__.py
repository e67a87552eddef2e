"""Test-only helpers: simulated hosts, skewed clocks, a TCP proxy, TLS test servers, timing."""
