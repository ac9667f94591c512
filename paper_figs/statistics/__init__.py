"""The verdict arithmetic: the protocol, t tests, pooled spreads, verdict lines, machine noise as data."""
