"""Dagster definitions, one module per concern; assembled in cost_pipeline/definitions.py."""
