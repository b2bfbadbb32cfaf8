"""Shared ingest machinery: reading landing files, validating rows, the in-database path, the warehouse ledger."""
