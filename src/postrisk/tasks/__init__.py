"""Task instances: generation, the store contract, the Task object (SPEC §7)."""
