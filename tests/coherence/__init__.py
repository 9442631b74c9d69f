"""The coherence layer: the model, storage, per-range regions, laziness, host writes, the
transfer guard, adopted memory, introspection and the state machine."""
