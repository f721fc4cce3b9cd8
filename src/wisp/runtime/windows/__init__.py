"""The per-kind resumable kernels fed Arrow batches (`*Kernel`): each takes a
key's rows in chunks and carries a bounded state (`resumable`)."""
