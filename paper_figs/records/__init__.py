"""What was trained: the run store, identities, provenance, the cache, the runner, profiles."""
