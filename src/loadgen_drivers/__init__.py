"""Broker drivers shipped with loadgen, registered in the loadgen.drivers entry-point group."""
