"""Shared utilities with no science in them: atomic I/O, canonical JSON and digests, stable
random streams, JAX settings, thread limits, array checks, lazy exports. Every stage may import
them; they import no stage."""
