"""The ledger: an append-only, signed log of what the archive did (docs/ledger.md)."""
