"""Workers: the local worker and its producer loop."""
