"""The array object: numpy's protocols, DLPack, value semantics, the namespace, keys, errors
and typing."""
