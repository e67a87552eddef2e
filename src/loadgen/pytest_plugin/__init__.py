"""The pytest plugin: fixtures that start local brokers and run loads, and the benchmark
fixture."""
