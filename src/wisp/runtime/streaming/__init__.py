"""The stream operator's state: one key's operator (`operator`), many keys in
a hash bucket (`buckets`), pane partials (`panes`, `pane_buckets`)."""
