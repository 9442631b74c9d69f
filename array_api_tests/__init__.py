"""hostarray's own conformance suite for the array API standard 2025.12."""
