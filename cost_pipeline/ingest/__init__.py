"""Landing files -> raw warehouse tables, with every bad row quarantined and counted."""
